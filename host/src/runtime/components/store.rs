//! Component metadata, durable in redb beside the agent records. Every table is keyed so
//! an account reaches only its own components; the stored bytes are shared, counted by
//! reference per content digest, so identical uploads of several accounts are one file.
//! Each change is one write transaction: it commits whole or not at all.

use std::sync::Arc;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use semver::Version;
use serde::{Deserialize, Serialize};

use super::names::Spec;
use crate::runtime::newest;

/// component_id → record (JSON).
const COMPONENTS: TableDefinition<&str, &[u8]> = TableDefinition::new("components");
/// (account, name, version) → component_id.
const BY_NAME: TableDefinition<(&str, &str, &str), &str> =
    TableDefinition::new("components_by_name");
/// (account, seq) → component_id: an account's components in upload order.
const BY_ACCOUNT: TableDefinition<(&str, u64), &str> =
    TableDefinition::new("components_by_account");
/// sha256 (hex) → how many components have these bytes.
const BLOBS: TableDefinition<&str, u64> = TableDefinition::new("component_blobs");
/// sha256 (hex) → how long the first validation of these bytes took (µs): every later
/// upload of them takes at least as long (see `ops`).
const VALIDATION_US: TableDefinition<&str, u64> = TableDefinition::new("component_validation_us");
/// Counters.
const META: TableDefinition<&str, u64> = TableDefinition::new("component_meta");

/// Above every character a version may have, to bound a range of one name's versions.
const VERSION_END: &str = "~";

/// One uploaded component of one account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentRecord {
    pub component_id: String,
    pub account: String,
    pub name: String,
    pub version: String,
    /// SHA-256 of the bytes, lowercase hex.
    pub sha256: String,
    /// Size of the bytes.
    pub size: u64,
    /// Epoch milliseconds.
    pub created_at: u64,
    /// Position in the account's list (newest has the highest).
    pub seq: u64,
}

/// Why a component was not stored.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// The account has a component of that name and version.
    #[error("a component with that name and version exists")]
    Exists,
    /// The account has `max` components.
    #[error("the account has its {max} components")]
    Quota { max: u32 },
    #[error(transparent)]
    Storage(#[from] StoreError),
}

/// Storage failures of component metadata.
#[derive(Debug, thiserror::Error)]
#[error("component storage: {0}")]
pub struct StoreError(String);

macro_rules! store_error_from {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self {
                StoreError(e.to_string())
            }
        }
        impl From<$t> for CreateError {
            fn from(e: $t) -> Self {
                CreateError::Storage(e.into())
            }
        }
    )*};
}
store_error_from!(
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    serde_json::Error
);

type Result<T> = std::result::Result<T, StoreError>;

/// Component metadata over the shared database. Blocking: call from blocking contexts.
#[derive(Clone)]
pub struct ComponentStore {
    db: Arc<Database>,
}

impl ComponentStore {
    /// Opens the tables, creating them on first use.
    pub fn new(db: Arc<Database>) -> Result<Self> {
        let txn = db.begin_write()?;
        txn.open_table(COMPONENTS)?;
        txn.open_table(BY_NAME)?;
        txn.open_table(BY_ACCOUNT)?;
        txn.open_table(BLOBS)?;
        txn.open_table(VALIDATION_US)?;
        txn.open_table(META)?;
        txn.commit()?;
        Ok(Self { db })
    }

    /// Stores `record` (durably), assigning its list position and counting a reference to
    /// its bytes (whose first validation, if this is it, took `validation_us`), unless the
    /// account has that name and version or `max` components.
    pub fn create(
        &self,
        mut record: ComponentRecord,
        max: u32,
        validation_us: u64,
    ) -> std::result::Result<ComponentRecord, CreateError> {
        let txn = self.db.begin_write()?;
        {
            let account = record.account.as_str();
            let mut by_name = txn.open_table(BY_NAME)?;
            if by_name
                .get((account, record.name.as_str(), record.version.as_str()))?
                .is_some()
            {
                return Err(CreateError::Exists);
            }
            let mut by_account = txn.open_table(BY_ACCOUNT)?;
            let held = by_account
                .range((account, 0)..=(account, u64::MAX))?
                .count();
            if held >= max as usize {
                return Err(CreateError::Quota { max });
            }
            let mut meta = txn.open_table(META)?;
            record.seq = meta.get("next_seq")?.map_or(1, |v| v.value());
            meta.insert("next_seq", record.seq + 1)?;
            let id = record.component_id.as_str();
            txn.open_table(COMPONENTS)?
                .insert(id, serde_json::to_vec(&record)?.as_slice())?;
            by_name.insert((account, record.name.as_str(), record.version.as_str()), id)?;
            by_account.insert((account, record.seq), id)?;
            let mut blobs = txn.open_table(BLOBS)?;
            let refs = blobs.get(record.sha256.as_str())?.map_or(0, |v| v.value());
            blobs.insert(record.sha256.as_str(), refs + 1)?;
            let mut validation = txn.open_table(VALIDATION_US)?;
            if validation.get(record.sha256.as_str())?.is_none() {
                validation.insert(record.sha256.as_str(), validation_us)?;
            }
        }
        txn.commit()?;
        Ok(record)
    }

    /// The component `id` if it belongs to `account`.
    pub fn get(&self, account: &str, id: &str) -> Result<Option<ComponentRecord>> {
        let txn = self.db.begin_read()?;
        let components = txn.open_table(COMPONENTS)?;
        let Some(bytes) = components.get(id)? else {
            return Ok(None);
        };
        let record: ComponentRecord = serde_json::from_slice(bytes.value())?;
        Ok((record.account == account).then_some(record))
    }

    /// The account's component `spec` names: an id (or, failing that, a name starting
    /// like one), a name's newest version by semver precedence, or one version.
    pub fn resolve(&self, account: &str, spec: &str) -> Result<Option<ComponentRecord>> {
        let txn = self.db.begin_read()?;
        let components = txn.open_table(COMPONENTS)?;
        let by_name = txn.open_table(BY_NAME)?;
        let load = |id: &str| -> Result<Option<ComponentRecord>> {
            let Some(bytes) = components.get(id)? else {
                return Ok(None);
            };
            let record: ComponentRecord = serde_json::from_slice(bytes.value())?;
            Ok((record.account == account).then_some(record))
        };
        let newest = |name: &str| -> Result<Option<ComponentRecord>> {
            let mut best: Option<(Version, String)> = None;
            for entry in by_name.range((account, name, "")..(account, name, VERSION_END))? {
                let (key, id) = entry?;
                let Ok(version) = Version::parse(key.value().2) else {
                    continue;
                };
                if best.as_ref().is_none_or(|(b, _)| version > *b) {
                    best = Some((version, id.value().to_string()));
                }
            }
            best.map_or(Ok(None), |(_, id)| load(&id))
        };
        match Spec::parse(spec) {
            Spec::Id(id) => match load(id)? {
                Some(record) => Ok(Some(record)),
                None => newest(id),
            },
            Spec::Newest(name) => newest(name),
            Spec::Exact { name, version } => match by_name.get((account, name, version))? {
                Some(id) => load(id.value()),
                None => Ok(None),
            },
        }
    }

    /// Up to `limit` of the account's components newest first, below list position
    /// `before`; also the position to continue from when more remain.
    pub fn list(
        &self,
        account: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<ComponentRecord>, Option<u64>)> {
        let txn = self.db.begin_read()?;
        let page = (account, before, limit);
        newest::page(&txn, COMPONENTS, BY_ACCOUNT, page, |r: &ComponentRecord| {
            r.seq
        })
    }

    /// Removes the account's component `id` (durably); returns it and whether it was the
    /// last reference to its bytes (which may then go).
    pub fn delete(&self, account: &str, id: &str) -> Result<Option<(ComponentRecord, bool)>> {
        let txn = self.db.begin_write()?;
        let deleted = {
            let mut components = txn.open_table(COMPONENTS)?;
            let record = match components.get(id)? {
                Some(bytes) => serde_json::from_slice::<ComponentRecord>(bytes.value())?,
                None => return Ok(None),
            };
            if record.account != account {
                return Ok(None);
            }
            components.remove(id)?;
            txn.open_table(BY_NAME)?.remove((
                account,
                record.name.as_str(),
                record.version.as_str(),
            ))?;
            txn.open_table(BY_ACCOUNT)?.remove((account, record.seq))?;
            let mut blobs = txn.open_table(BLOBS)?;
            let refs = blobs.get(record.sha256.as_str())?.map_or(0, |v| v.value());
            let last = refs <= 1;
            if last {
                blobs.remove(record.sha256.as_str())?;
                txn.open_table(VALIDATION_US)?
                    .remove(record.sha256.as_str())?;
            } else {
                blobs.insert(record.sha256.as_str(), refs - 1)?;
            }
            (record, last)
        };
        txn.commit()?;
        Ok(Some(deleted))
    }

    /// How many components the account has.
    pub fn count(&self, account: &str) -> Result<usize> {
        let txn = self.db.begin_read()?;
        let index = txn.open_table(BY_ACCOUNT)?;
        Ok(index.range((account, 0)..=(account, u64::MAX))?.count())
    }

    /// How long the first validation of the bytes of digest `sha256` took (µs), if any
    /// component has them.
    pub fn validation_us(&self, sha256: &str) -> Result<Option<u64>> {
        let txn = self.db.begin_read()?;
        let validation = txn.open_table(VALIDATION_US)?;
        Ok(validation.get(sha256)?.map(|v| v.value()))
    }

    /// Whether any component has the bytes of digest `sha256` (hex).
    pub fn referenced(&self, sha256: &str) -> Result<bool> {
        let txn = self.db.begin_read()?;
        Ok(txn.open_table(BLOBS)?.get(sha256)?.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, ComponentStore) {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Database::create(dir.path().join("db")).unwrap());
        (dir, ComponentStore::new(db).unwrap())
    }

    fn record(id: &str, account: &str, name: &str, version: &str, sha: &str) -> ComponentRecord {
        ComponentRecord {
            component_id: id.into(),
            account: account.into(),
            name: name.into(),
            version: version.into(),
            sha256: sha.into(),
            size: 8,
            created_at: 1,
            seq: 0,
        }
    }

    #[test]
    fn pages_are_newest_first_and_scoped_to_the_account() {
        let (_d, s) = store();
        for i in 0..5 {
            s.create(
                record(&format!("cmp_{i}"), "a", "n", &format!("{i}.0.0"), "x"),
                10,
                0,
            )
            .unwrap();
        }
        s.create(record("cmp_b", "b", "n", "1.0.0", "x"), 10, 0)
            .unwrap();
        let ids = |page: &[ComponentRecord]| {
            page.iter()
                .map(|r| r.component_id.clone())
                .collect::<Vec<_>>()
        };
        let (page, next) = s.list("a", None, 2).unwrap();
        assert_eq!(ids(&page), ["cmp_4", "cmp_3"]);
        let (page, next) = s.list("a", next, 2).unwrap();
        assert_eq!(ids(&page), ["cmp_2", "cmp_1"]);
        let (page, next) = s.list("a", next, 2).unwrap();
        assert_eq!((ids(&page), next), (vec!["cmp_0".to_string()], None));
        assert!(s.get("a", "cmp_b").unwrap().is_none());
        assert!(s.get("b", "cmp_b").unwrap().is_some());
        assert!(
            s.delete("a", "cmp_b").unwrap().is_none(),
            "not a's to delete"
        );
        assert!(s.resolve("a", "cmp_b").unwrap().is_none());
    }

    #[test]
    fn a_name_resolves_to_its_highest_semver_and_name_at_version_to_that_one() {
        let (_d, s) = store();
        // Upload order and string order both differ from semver order.
        for (id, v) in [
            ("cmp_1", "1.10.0"),
            ("cmp_2", "1.9.0"),
            ("cmp_3", "2.0.0-beta.1"),
            ("cmp_4", "1.2.0"),
        ] {
            s.create(record(id, "a", "notes", v, "x"), 10, 0).unwrap();
        }
        s.create(record("cmp_5", "a", "notes_two", "9.0.0", "x"), 10, 0)
            .unwrap();
        s.create(record("cmp_6", "b", "notes", "3.0.0", "x"), 10, 0)
            .unwrap();
        let resolved = |spec: &str| s.resolve("a", spec).unwrap().map(|r| r.component_id);
        assert_eq!(resolved("notes").as_deref(), Some("cmp_3"));
        assert_eq!(resolved("notes@1.9.0").as_deref(), Some("cmp_2"));
        assert_eq!(resolved("cmp_4").as_deref(), Some("cmp_4"));
        assert_eq!(resolved("notes@3.0.0"), None);
        assert_eq!(resolved("note"), None);
        assert_eq!(resolved("cmp_6"), None);
        s.delete("a", "cmp_3").unwrap();
        assert_eq!(resolved("notes").as_deref(), Some("cmp_1"));
    }

    #[test]
    fn a_name_and_version_is_taken_once_per_account_within_the_quota() {
        let (_d, s) = store();
        s.create(record("cmp_1", "a", "n", "1.0.0", "x"), 2, 0)
            .unwrap();
        assert!(matches!(
            s.create(record("cmp_2", "a", "n", "1.0.0", "y"), 2, 0),
            Err(CreateError::Exists)
        ));
        s.create(record("cmp_3", "b", "n", "1.0.0", "x"), 2, 0)
            .unwrap();
        s.create(record("cmp_4", "a", "n", "1.0.1", "x"), 2, 0)
            .unwrap();
        assert!(matches!(
            s.create(record("cmp_5", "a", "n", "1.0.2", "x"), 2, 0),
            Err(CreateError::Quota { max: 2 })
        ));
        s.delete("a", "cmp_4").unwrap();
        s.create(record("cmp_5", "a", "n", "1.0.2", "x"), 2, 0)
            .unwrap();
    }

    #[test]
    fn shared_bytes_stay_referenced_until_the_last_component_goes() {
        let (_d, s) = store();
        assert_eq!(s.validation_us("same").unwrap(), None);
        s.create(record("cmp_1", "a", "n", "1.0.0", "same"), 10, 0)
            .unwrap();
        s.create(record("cmp_2", "b", "m", "1.0.0", "same"), 10, 99)
            .unwrap();
        let (gone, last) = s.delete("a", "cmp_1").unwrap().unwrap();
        assert_eq!((gone.component_id.as_str(), last), ("cmp_1", false));
        assert!(s.referenced("same").unwrap());
        assert_eq!(s.validation_us("same").unwrap(), Some(0), "the first one's");
        let (_, last) = s.delete("b", "cmp_2").unwrap().unwrap();
        assert!(last);
        assert!(!s.referenced("same").unwrap());
        assert_eq!(s.validation_us("same").unwrap(), None);
    }
}
