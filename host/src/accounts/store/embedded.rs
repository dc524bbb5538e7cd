//! API keys and accounts in redb (the embedded backend). A key is `wm_` followed by 64 hex digits of randomness;
//! only its SHA-256 is stored, indexed for the constant-cost lookup every request makes.

use std::{collections::HashMap, sync::Arc};

use async_trait::async_trait;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use serde::{Deserialize, Serialize};

use super::{
    AccountInfo, AccountStore, CreateKeyError, KeyInfo, NewKey, Places, Principal, hash_key,
    key_bound, no_such_account, no_such_key, validate_account,
};
use crate::accounts::{Plan, PlanSource, Plans, error::Result};
use crate::{blocking::with_store, clock::now_ms, egress::policy::Allow, storage::StoreError};

/// account name → account record (JSON).
const ACCOUNTS: TableDefinition<&str, &str> = TableDefinition::new("accounts");
/// SHA-256 of the key (hex) → key record (JSON).
const API_KEYS: TableDefinition<&str, &str> = TableDefinition::new("api_keys");
/// (account, key id) → SHA-256 of the key: an account's keys without a scan of every key.
const ACCOUNT_KEYS: TableDefinition<(&str, &str), &str> = TableDefinition::new("account_keys");

#[derive(Serialize, Deserialize)]
struct AccountRecord {
    plan: Plan,
    /// Who set `plan` last.
    #[serde(default)]
    plan_source: PlanSource,
    created_at: u64,
    /// Hosts the operator lets this account's agents reach (`[egress]`'s entries).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    egress: Vec<Allow>,
}

#[derive(Serialize, Deserialize)]
struct KeyRecord {
    id: String,
    account: String,
    created_at: u64,
    revoked_at: Option<u64>,
}

/// Accounts and keys in the data dir's redb (the embedded backend). Its methods block on
/// redb; the [`AccountStore`] impl runs the writes off the async workers.
#[derive(Clone)]
pub struct KeyStore {
    db: Arc<Database>,
}

impl KeyStore {
    /// Opens the tables, creating them on first use. A data dir whose keys predate the
    /// per-account index has it built here, once, in the same commit as the tables.
    pub fn new(db: Arc<Database>) -> Result<Self, StoreError> {
        let txn = db.begin_write()?;
        txn.open_table(ACCOUNTS)?;
        {
            let keys = txn.open_table(API_KEYS)?;
            let mut index = txn.open_table(ACCOUNT_KEYS)?;
            if index.is_empty()? {
                for entry in keys.iter()? {
                    let (hash, value) = entry?;
                    let record: KeyRecord = serde_json::from_str(value.value())?;
                    index.insert((record.account.as_str(), record.id.as_str()), hash.value())?;
                }
            }
        }
        txn.commit()?;
        Ok(Self { db })
    }

    /// Creates a key for `account`, creating the account (plan default free) if new.
    /// An explicit `plan` also changes an existing account's plan. Refused when the
    /// account's keys take its plan's `keys` places already (see [`AccountStore::create`]).
    /// Returns the secret, which is shown once and never stored.
    pub fn create(
        &self,
        account: &str,
        plan: Option<Plan>,
        plans: &Plans,
    ) -> Result<(String, KeyInfo), CreateKeyError> {
        validate_account(account)?;
        let key = NewKey::generate();
        let now = now_ms();
        let record = KeyRecord {
            id: key.id,
            account: account.to_string(),
            created_at: now,
            revoked_at: None,
        };
        let txn = self.db.begin_write()?;
        let places = places(
            &txn.open_table(API_KEYS)?,
            &txn.open_table(ACCOUNT_KEYS)?,
            account,
            now,
        )?;
        let plan = {
            let mut accounts = txn.open_table(ACCOUNTS)?;
            let existing: Option<AccountRecord> = accounts
                .get(account)?
                .map(|v| serde_json::from_str(v.value()))
                .transpose()?;
            let record = match existing {
                Some(mut a) => {
                    if let Some(plan) = plan {
                        (a.plan, a.plan_source) = (plan, PlanSource::Operator);
                    }
                    a
                }
                None => AccountRecord {
                    plan: plan.unwrap_or_default(),
                    plan_source: PlanSource::Operator,
                    created_at: now,
                    egress: Vec::new(),
                },
            };
            accounts.insert(account, serde_json::to_string(&record)?.as_str())?;
            record.plan
        };
        key_bound(account, plan, places, plans)?;
        txn.open_table(API_KEYS)?
            .insert(key.hash.as_str(), serde_json::to_string(&record)?.as_str())?;
        txn.open_table(ACCOUNT_KEYS)?
            .insert((account, record.id.as_str()), key.hash.as_str())?;
        txn.commit()?;
        let info = KeyInfo {
            id: record.id,
            account: record.account,
            plan,
            created_at: now,
            revoked_at: None,
        };
        Ok((key.secret, info))
    }

    /// Revokes a key given either the secret itself or its `key_…` id.
    pub fn revoke(&self, key: &str) -> Result<KeyInfo> {
        let txn = self.db.begin_write()?;
        let hash = {
            let keys = txn.open_table(API_KEYS)?;
            match keys.get(hash_key(key).as_str())? {
                Some(_) => hash_key(key),
                None => find_hash_by_id(&keys, key)?.ok_or_else(|| no_such_key(key))?,
            }
        };
        let info = revoke_in(&txn, &hash)?;
        txn.commit()?;
        Ok(info)
    }

    /// Revokes `account`'s key `key_id`; `None` when the account has no such key.
    pub fn revoke_own(&self, account: &str, key_id: &str) -> Result<Option<KeyInfo>> {
        let txn = self.db.begin_write()?;
        let hash = {
            let index = txn.open_table(ACCOUNT_KEYS)?;
            let found = index.get((account, key_id))?;
            found.map(|h| h.value().to_owned())
        };
        let Some(hash) = hash else {
            return Ok(None);
        };
        let info = revoke_in(&txn, &hash)?;
        txn.commit()?;
        Ok(Some(info))
    }

    /// The keys of `account`, oldest first.
    pub fn keys(&self, account: &str) -> Result<Vec<KeyInfo>> {
        let txn = self.db.begin_read()?;
        let records = account_keys(
            &txn.open_table(API_KEYS)?,
            &txn.open_table(ACCOUNT_KEYS)?,
            account,
        )?;
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let plan = account_plan(&txn.open_table(ACCOUNTS)?, account)?;
        let mut out: Vec<KeyInfo> = records
            .into_iter()
            .map(|record| KeyInfo {
                plan,
                id: record.id,
                account: record.account,
                created_at: record.created_at,
                revoked_at: record.revoked_at,
            })
            .collect();
        out.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        Ok(out)
    }

    /// Every key, oldest first.
    pub fn list(&self) -> Result<Vec<KeyInfo>> {
        let txn = self.db.begin_read()?;
        let keys = txn.open_table(API_KEYS)?;
        let accounts = txn.open_table(ACCOUNTS)?;
        let mut out = Vec::new();
        for entry in keys.iter()? {
            let (_, value) = entry?;
            let record: KeyRecord = serde_json::from_str(value.value())?;
            out.push(KeyInfo {
                plan: account_plan(&accounts, &record.account)?,
                id: record.id,
                account: record.account,
                created_at: record.created_at,
                revoked_at: record.revoked_at,
            });
        }
        out.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(out)
    }

    /// Every account's plan (what `/metrics` sums live memories by).
    pub fn plans(&self) -> Result<HashMap<String, Plan>> {
        let txn = self.db.begin_read()?;
        let accounts = txn.open_table(ACCOUNTS)?;
        let mut out = HashMap::new();
        for entry in accounts.iter()? {
            let (name, value) = entry?;
            let record: AccountRecord = serde_json::from_str(value.value())?;
            out.insert(name.value().to_string(), record.plan);
        }
        Ok(out)
    }

    /// Every account, by name, with its count of unrevoked keys.
    pub fn accounts(&self) -> Result<Vec<AccountInfo>> {
        let txn = self.db.begin_read()?;
        let mut active = HashMap::<String, u32>::new();
        for entry in txn.open_table(API_KEYS)?.iter()? {
            let (_, value) = entry?;
            let record: KeyRecord = serde_json::from_str(value.value())?;
            if record.revoked_at.is_none() {
                *active.entry(record.account).or_default() += 1;
            }
        }
        let mut out = Vec::new();
        for entry in txn.open_table(ACCOUNTS)?.iter()? {
            let (name, value) = entry?;
            let record: AccountRecord = serde_json::from_str(value.value())?;
            out.push(AccountInfo {
                name: name.value().to_string(),
                plan: record.plan,
                plan_source: record.plan_source,
                created_at: record.created_at,
                active_keys: active.get(name.value()).copied().unwrap_or(0),
            });
        }
        Ok(out)
    }

    /// Moves an existing account to `plan`; its keys act on the new plan from their next
    /// request, as [`KeyStore::authenticate`] reads the plan afresh each time.
    pub fn set_plan(&self, account: &str, plan: Plan, source: PlanSource) -> Result<AccountInfo> {
        self.edit_account(account, |record| {
            (record.plan, record.plan_source) = (plan, source);
        })?;
        let info = self
            .accounts()?
            .into_iter()
            .find(|a| a.name == account)
            .ok_or_else(|| StoreError::Corrupt(format!("account {account:?} vanished")))?;
        Ok(info)
    }

    /// The principal a presented key acts for; `None` for unknown or revoked keys.
    pub fn authenticate(&self, secret: &str) -> Result<Option<Principal>> {
        let txn = self.db.begin_read()?;
        let keys = txn.open_table(API_KEYS)?;
        let Some(value) = keys.get(hash_key(secret).as_str())? else {
            return Ok(None);
        };
        let record: KeyRecord = serde_json::from_str(value.value())?;
        if record.revoked_at.is_some() {
            return Ok(None);
        }
        let plan = account_plan(&txn.open_table(ACCOUNTS)?, &record.account)?;
        Ok(Some(Principal {
            account: record.account.into(),
            plan,
            key_id: record.id.into(),
        }))
    }

    /// The hosts the operator lets `account`'s agents reach (none for an unknown account).
    pub fn egress(&self, account: &str) -> Result<Vec<Allow>> {
        let txn = self.db.begin_read()?;
        let accounts = txn.open_table(ACCOUNTS)?;
        let Some(guard) = accounts.get(account)? else {
            return Ok(Vec::new());
        };
        Ok(serde_json::from_str::<AccountRecord>(guard.value())?.egress)
    }

    /// Replaces the hosts `account`'s agents may reach beyond its plan's.
    pub fn set_egress(&self, account: &str, allow: Vec<Allow>) -> Result<Vec<Allow>> {
        self.edit_account(account, |record| {
            record.egress = allow;
            record.egress.clone()
        })
    }

    /// Rewrites an existing account's record as `edit` leaves it, in one write transaction
    /// (an unknown account is an error); what `edit` returns.
    fn edit_account<T>(
        &self,
        account: &str,
        edit: impl FnOnce(&mut AccountRecord) -> T,
    ) -> Result<T> {
        let txn = self.db.begin_write()?;
        let mut record: AccountRecord = {
            let accounts = txn.open_table(ACCOUNTS)?;
            let guard = accounts
                .get(account)?
                .ok_or_else(|| no_such_account(account))?;
            serde_json::from_str(guard.value())?
        };
        let out = edit(&mut record);
        txn.open_table(ACCOUNTS)?
            .insert(account, serde_json::to_string(&record)?.as_str())?;
        txn.commit()?;
        Ok(out)
    }

    /// The plan of `account`; `None` when no such account exists.
    pub fn plan(&self, account: &str) -> Result<Option<Plan>> {
        let txn = self.db.begin_read()?;
        let accounts = txn.open_table(ACCOUNTS)?;
        let Some(guard) = accounts.get(account)? else {
            return Ok(None);
        };
        Ok(Some(
            serde_json::from_str::<AccountRecord>(guard.value())?.plan,
        ))
    }
}

/// The backend-neutral face of the store. Writes (each a durable redb commit) and scans run
/// on the blocking pool; a key check and a plan lookup are one B-tree read each, cheaper
/// inline than a thread hop.
#[async_trait]
impl AccountStore for KeyStore {
    async fn create(
        &self,
        account: &str,
        plan: Option<Plan>,
        plans: &Plans,
    ) -> Result<(String, KeyInfo), CreateKeyError> {
        let (account, plans) = (account.to_owned(), plans.clone());
        with_store(self, move |s| s.create(&account, plan, &plans)).await
    }

    async fn revoke(&self, key: &str) -> Result<KeyInfo> {
        let key = key.to_owned();
        with_store(self, move |s| s.revoke(&key)).await
    }

    async fn revoke_own(&self, account: &str, key_id: &str) -> Result<Option<KeyInfo>> {
        let (account, key_id) = (account.to_owned(), key_id.to_owned());
        with_store(self, move |s| s.revoke_own(&account, &key_id)).await
    }

    async fn list(&self) -> Result<Vec<KeyInfo>> {
        with_store(self, KeyStore::list).await
    }

    async fn keys(&self, account: &str) -> Result<Vec<KeyInfo>> {
        let account = account.to_owned();
        with_store(self, move |s| s.keys(&account)).await
    }

    async fn plans(&self) -> Result<HashMap<String, Plan>> {
        with_store(self, KeyStore::plans).await
    }

    async fn accounts(&self) -> Result<Vec<AccountInfo>> {
        with_store(self, KeyStore::accounts).await
    }

    async fn set_plan(&self, account: &str, plan: Plan, source: PlanSource) -> Result<AccountInfo> {
        let account = account.to_owned();
        with_store(self, move |s| s.set_plan(&account, plan, source)).await
    }

    async fn authenticate(&self, secret: &str) -> Result<Option<Principal>> {
        KeyStore::authenticate(self, secret)
    }

    async fn plan(&self, account: &str) -> Result<Option<Plan>> {
        KeyStore::plan(self, account)
    }

    async fn egress(&self, account: &str) -> Result<Vec<Allow>> {
        KeyStore::egress(self, account)
    }

    async fn set_egress(&self, account: &str, allow: Vec<Allow>) -> Result<Vec<Allow>> {
        let account = account.to_owned();
        with_store(self, move |s| s.set_egress(&account, allow)).await
    }
}

fn account_plan(
    accounts: &impl ReadableTable<&'static str, &'static str>,
    account: &str,
) -> Result<Plan, StoreError> {
    let guard = accounts
        .get(account)?
        .ok_or_else(|| StoreError::Corrupt(format!("account {account:?} missing")))?;
    Ok(serde_json::from_str::<AccountRecord>(guard.value())?.plan)
}

/// Marks the key stored under `hash` revoked (keeping an earlier revocation's time).
fn revoke_in(txn: &redb::WriteTransaction, hash: &str) -> Result<KeyInfo, StoreError> {
    let mut keys = txn.open_table(API_KEYS)?;
    let mut record: KeyRecord = {
        let guard = (keys.get(hash)?).ok_or_else(|| StoreError::Corrupt("key vanished".into()))?;
        serde_json::from_str(guard.value())?
    };
    record.revoked_at.get_or_insert_with(now_ms);
    keys.insert(hash, serde_json::to_string(&record)?.as_str())?;
    let plan = account_plan(&txn.open_table(ACCOUNTS)?, &record.account)?;
    Ok(KeyInfo {
        id: record.id,
        account: record.account,
        plan,
        created_at: record.created_at,
        revoked_at: record.revoked_at,
    })
}

/// The key records of `account`, through its index.
fn account_keys(
    keys: &impl ReadableTable<&'static str, &'static str>,
    index: &impl ReadableTable<(&'static str, &'static str), &'static str>,
    account: &str,
) -> Result<Vec<KeyRecord>, StoreError> {
    let mut out = Vec::new();
    for entry in index.range((account, "")..)? {
        let (at, hash) = entry?;
        if at.value().0 != account {
            break;
        }
        let guard = (keys.get(hash.value())?)
            .ok_or_else(|| StoreError::Corrupt("indexed key missing".into()))?;
        out.push(serde_json::from_str(guard.value())?);
    }
    Ok(out)
}

/// The places the keys of `account` take at `now` under its plan's `keys`.
fn places(
    keys: &impl ReadableTable<&'static str, &'static str>,
    index: &impl ReadableTable<(&'static str, &'static str), &'static str>,
    account: &str,
    now: u64,
) -> Result<Places, StoreError> {
    let records = account_keys(keys, index, account)?;
    Ok(Places::of(records.iter().map(|r| r.revoked_at), now))
}

fn find_hash_by_id(
    keys: &impl ReadableTable<&'static str, &'static str>,
    id: &str,
) -> Result<Option<String>, StoreError> {
    for entry in keys.iter()? {
        let (hash, value) = entry?;
        if serde_json::from_str::<KeyRecord>(value.value())?.id == id {
            return Ok(Some(hash.value().to_string()));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, KeyStore) {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Database::create(dir.path().join("db")).unwrap());
        (dir, KeyStore::new(db).unwrap())
    }

    #[test]
    fn create_authenticate_revoke() {
        let (_dir, s) = store();
        let (secret, info) = s.create("acme", None, &Plans::default()).unwrap();
        assert!(secret.starts_with("wm_") && secret.len() == 67);
        assert_eq!(info.plan, Plan::Free);
        let p = s.authenticate(&secret).unwrap().unwrap();
        assert_eq!(&*p.account, "acme");
        assert_eq!(&*p.key_id, info.id);
        assert!(s.authenticate("wm_nope").unwrap().is_none());
        s.revoke(&info.id).unwrap();
        assert!(s.authenticate(&secret).unwrap().is_none());
        let listed = s.list().unwrap();
        assert_eq!(listed.len(), 1);
        assert!(listed[0].revoked_at.is_some());
    }

    #[test]
    fn revoke_by_secret_and_plan_changes() {
        let (_dir, s) = store();
        let (k1, _) = s
            .create("acme", Some(Plan::Lightyear), &Plans::default())
            .unwrap();
        let (k2, _) = s.create("acme", None, &Plans::default()).unwrap();
        assert_eq!(s.authenticate(&k2).unwrap().unwrap().plan, Plan::Lightyear);
        s.revoke(&k1).unwrap();
        assert!(s.authenticate(&k1).unwrap().is_none());
        assert!(s.authenticate(&k2).unwrap().is_some());
        assert!(s.revoke("key_unknown").is_err());
        assert!(s.create("bad name", None, &Plans::default()).is_err());
    }

    #[test]
    fn accounts_list_and_plan_changes_apply_to_the_next_authentication() {
        let (_dir, s) = store();
        let (k1, _) = s.create("acme", None, &Plans::default()).unwrap();
        s.create("acme", None, &Plans::default()).unwrap();
        s.create("zeta", Some(Plan::Liftoff), &Plans::default())
            .unwrap();
        s.revoke(&k1).unwrap();
        let listed: Vec<(String, Plan, u32)> = s
            .accounts()
            .unwrap()
            .into_iter()
            .map(|a| (a.name, a.plan, a.active_keys))
            .collect();
        assert_eq!(
            listed,
            [
                ("acme".into(), Plan::Free, 1),
                ("zeta".into(), Plan::Liftoff, 1)
            ]
        );
        let (k3, _) = s.create("zeta", None, &Plans::default()).unwrap();
        let changed = s
            .set_plan("zeta", Plan::Lightyear, PlanSource::Operator)
            .unwrap();
        assert_eq!((changed.plan, changed.active_keys), (Plan::Lightyear, 2));
        assert_eq!(s.authenticate(&k3).unwrap().unwrap().plan, Plan::Lightyear);
        let err = s
            .set_plan("nobody", Plan::Free, PlanSource::Operator)
            .unwrap_err()
            .to_string();
        assert!(err.contains("nobody"), "{err}");
    }

    #[test]
    fn secrets_are_not_stored() {
        let (_dir, s) = store();
        let (secret, _) = s.create("acme", None, &Plans::default()).unwrap();
        let txn = s.db.begin_read().unwrap();
        let keys = txn.open_table(API_KEYS).unwrap();
        for entry in keys.iter().unwrap() {
            let (k, v) = entry.unwrap();
            assert!(!k.value().contains(&secret[3..]) && !v.value().contains(&secret[3..]));
        }
    }
}
