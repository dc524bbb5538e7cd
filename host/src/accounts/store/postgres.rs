//! Accounts and keys in PostgreSQL (the postgres backend): one row per account and per key,
//! shared by every node, so a key made or revoked through any node's CLI counts on every
//! node from its next request — each request's authentication is one indexed lookup.

use std::collections::HashMap;

use async_trait::async_trait;
use sqlx::{PgPool, Row, postgres::PgRow};

use super::{
    AccountInfo, AccountStore, CreateKeyError, KeyInfo, NewKey, Places, Principal,
    REVOKED_KEY_HOLD_MS, hash_key, key_bound, no_such_account, no_such_key, validate_account,
};
use crate::accounts::{Plan, PlanSource, Plans, error::Result};
use crate::{
    clock::now_ms,
    egress::policy::Allow,
    storage::{StoreError, bigint},
};

/// Accounts and keys over a PostgreSQL pool whose migrations have run.
#[derive(Clone)]
pub struct PgAccounts {
    pool: PgPool,
}

impl PgAccounts {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

/// The columns [`key_info`] reads, for `concat!` (sqlx takes only static SQL).
macro_rules! key_columns {
    () => {
        "k.key_id, k.account_id, a.plan, k.created_at, k.revoked_at"
    };
}

fn parse_plan(text: &str) -> Result<Plan, StoreError> {
    text.parse()
        .map_err(|e: String| StoreError::Corrupt(format!("stored plan: {e}")))
}

fn plan_of(row: &PgRow, column: &str) -> Result<Plan, StoreError> {
    parse_plan(row.try_get(column)?)
}

/// A stored instant, never negative (each was written from an unsigned one).
fn instant(ms: i64, column: &str) -> Result<u64, StoreError> {
    u64::try_from(ms).map_err(|_| StoreError::Corrupt(format!("negative {column}")))
}

fn millis(row: &PgRow, column: &str) -> Result<u64, StoreError> {
    instant(row.try_get(column)?, column)
}

fn key_info(row: &PgRow) -> Result<KeyInfo, StoreError> {
    let revoked: Option<i64> = row.try_get("revoked_at")?;
    Ok(KeyInfo {
        id: row.try_get("key_id")?,
        account: row.try_get("account_id")?,
        plan: plan_of(row, "plan")?,
        created_at: millis(row, "created_at")?,
        revoked_at: revoked.map(|ms| instant(ms, "revoked_at")).transpose()?,
    })
}

fn account_info(row: &PgRow) -> Result<AccountInfo, StoreError> {
    let active: i64 = row.try_get("active_keys")?;
    Ok(AccountInfo {
        name: row.try_get("account_id")?,
        plan: plan_of(row, "plan")?,
        plan_source: match row.try_get::<&str, _>("plan_source")? {
            "billing" => PlanSource::Billing,
            _ => PlanSource::Operator,
        },
        created_at: millis(row, "created_at")?,
        active_keys: u32::try_from(active).unwrap_or(u32::MAX),
    })
}

/// Epoch milliseconds as PostgreSQL's `bigint`.
fn now() -> i64 {
    bigint(now_ms())
}

#[async_trait]
impl AccountStore for PgAccounts {
    async fn create(
        &self,
        account: &str,
        plan: Option<Plan>,
        plans: &Plans,
    ) -> Result<(String, KeyInfo), CreateKeyError> {
        validate_account(account)?;
        let key = NewKey::generate();
        let now = now();
        let mut txn = self.pool.begin().await?;
        // A new account gets `plan` or free; an existing one keeps its plan unless one is
        // given. The upsert locks the account's row until the commit, so creations of its
        // keys at once (on any node) count its keys' places one after another.
        let stored: String = sqlx::query_scalar(
            "INSERT INTO accounts (account_id, plan, created_at) VALUES ($1, $2, $3)
             ON CONFLICT (account_id) DO UPDATE SET plan = COALESCE($4, accounts.plan),
               plan_source = CASE WHEN $4 IS NULL THEN accounts.plan_source ELSE 'operator' END
             RETURNING plan",
        )
        .bind(account)
        .bind(plan.unwrap_or_default().as_str())
        .bind(now)
        .bind(plan.map(Plan::as_str))
        .fetch_one(&mut *txn)
        .await?;
        let plan = parse_plan(&stored)?;
        // Active keys, and those revoked within the hold: each takes a place.
        let revoked: Vec<Option<i64>> = sqlx::query_scalar(
            "SELECT revoked_at FROM api_keys
             WHERE account_id = $1 AND (revoked_at IS NULL OR revoked_at > $2)",
        )
        .bind(account)
        .bind(now - bigint(REVOKED_KEY_HOLD_MS))
        .fetch_all(&mut *txn)
        .await?;
        let revoked = revoked
            .into_iter()
            .map(|at| at.map(|ms| instant(ms, "revoked_at")).transpose())
            .collect::<Result<Vec<_>, _>>()?;
        let places = Places::of(revoked, instant(now, "created_at")?);
        key_bound(account, plan, places, plans)?;
        sqlx::query(
            "INSERT INTO api_keys (account_id, key_id, key_hash, created_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(account)
        .bind(&key.id)
        .bind(&key.hash)
        .bind(now)
        .execute(&mut *txn)
        .await
        ?;
        txn.commit().await?;
        let info = KeyInfo {
            id: key.id,
            account: account.to_owned(),
            plan,
            created_at: instant(now, "created_at")?,
            revoked_at: None,
        };
        Ok((key.secret, info))
    }

    async fn revoke(&self, key: &str) -> Result<KeyInfo> {
        let row = sqlx::query(concat!(
            "WITH k AS (
                 UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3)
                 WHERE key_hash = $1 OR key_id = $2
                 RETURNING *
             )
             SELECT ",
            key_columns!(),
            " FROM k JOIN accounts a USING (account_id)"
        ))
        .bind(hash_key(key))
        .bind(key)
        .bind(now())
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| no_such_key(key))?;
        Ok(key_info(&row)?)
    }

    async fn revoke_own(&self, account: &str, key_id: &str) -> Result<Option<KeyInfo>> {
        sqlx::query(concat!(
            "WITH k AS (
                 UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3)
                 WHERE account_id = $1 AND key_id = $2
                 RETURNING *
             )
             SELECT ",
            key_columns!(),
            " FROM k JOIN accounts a USING (account_id)"
        ))
        .bind(account)
        .bind(key_id)
        .bind(now())
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(key_info)
        .transpose()
        .map_err(Into::into)
    }

    async fn keys(&self, account: &str) -> Result<Vec<KeyInfo>> {
        sqlx::query(concat!(
            "SELECT ",
            key_columns!(),
            " FROM api_keys k JOIN accounts a USING (account_id) WHERE k.account_id = $1
              ORDER BY k.created_at DESC, k.key_id DESC"
        ))
        .bind(account)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|row| Ok(key_info(row)?))
        .collect()
    }

    async fn list(&self) -> Result<Vec<KeyInfo>> {
        sqlx::query(concat!(
            "SELECT ",
            key_columns!(),
            " FROM api_keys k JOIN accounts a USING (account_id) ORDER BY k.created_at, k.key_id"
        ))
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|row| Ok(key_info(row)?))
        .collect()
    }

    async fn plans(&self) -> Result<HashMap<String, Plan>> {
        sqlx::query("SELECT account_id, plan FROM accounts")
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| Ok((row.try_get("account_id")?, plan_of(row, "plan")?)))
            .collect()
    }

    async fn accounts(&self) -> Result<Vec<AccountInfo>> {
        sqlx::query(ACCOUNTS_QUERY)
            .bind(None::<&str>)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| Ok(account_info(row)?))
            .collect()
    }

    async fn set_plan(&self, account: &str, plan: Plan, source: PlanSource) -> Result<AccountInfo> {
        let updated =
            sqlx::query("UPDATE accounts SET plan = $2, plan_source = $3 WHERE account_id = $1")
                .bind(account)
                .bind(plan.as_str())
                .bind(source.as_str())
                .execute(&self.pool)
                .await?;
        if updated.rows_affected() == 0 {
            return Err(no_such_account(account));
        }
        let row = sqlx::query(ACCOUNTS_QUERY)
            .bind(account)
            .fetch_one(&self.pool)
            .await?;
        Ok(account_info(&row)?)
    }

    async fn authenticate(&self, secret: &str) -> Result<Option<Principal>> {
        let row = sqlx::query(
            "SELECT k.account_id, k.key_id, a.plan FROM api_keys k JOIN accounts a USING (account_id)
             WHERE k.key_hash = $1 AND k.revoked_at IS NULL",
        )
        .bind(hash_key(secret))
        .fetch_optional(&self.pool)
        .await?;
        row.map(|row| {
            let account: String = row.try_get("account_id")?;
            let key_id: String = row.try_get("key_id")?;
            Ok(Principal {
                account: account.into(),
                plan: plan_of(&row, "plan")?,
                key_id: key_id.into(),
            })
        })
        .transpose()
    }

    async fn plan(&self, account: &str) -> Result<Option<Plan>> {
        sqlx::query("SELECT plan FROM accounts WHERE account_id = $1")
            .bind(account)
            .fetch_optional(&self.pool)
            .await?
            .map(|row| Ok(plan_of(&row, "plan")?))
            .transpose()
    }

    async fn egress(&self, account: &str) -> Result<Vec<Allow>> {
        let row = sqlx::query("SELECT egress::text AS egress FROM accounts WHERE account_id = $1")
            .bind(account)
            .fetch_optional(&self.pool)
            .await?;
        row.map_or(Ok(Vec::new()), |row| egress_of(&row))
    }

    async fn set_egress(&self, account: &str, allow: Vec<Allow>) -> Result<Vec<Allow>> {
        let json = serde_json::to_string(&allow).map_err(StoreError::from)?;
        let row = sqlx::query(
            "UPDATE accounts SET egress = $2::jsonb WHERE account_id = $1
             RETURNING egress::text AS egress",
        )
        .bind(account)
        .bind(json)
        .fetch_optional(&self.pool)
        .await?;
        row.map_or(Err(no_such_account(account)), |row| egress_of(&row))
    }
}

/// The `egress` column of an accounts row.
fn egress_of(row: &PgRow) -> Result<Vec<Allow>> {
    let text: String = row.try_get("egress").map_err(StoreError::from)?;
    Ok(serde_json::from_str(&text).map_err(StoreError::from)?)
}

/// Accounts by name with their unrevoked keys counted; `$1` limits it to one account.
const ACCOUNTS_QUERY: &str = "
    SELECT a.account_id, a.plan, a.plan_source, a.created_at,
           count(k.key_id) FILTER (WHERE k.revoked_at IS NULL) AS active_keys
    FROM accounts a LEFT JOIN api_keys k USING (account_id)
    WHERE $1::text IS NULL OR a.account_id = $1
    GROUP BY a.account_id
    ORDER BY a.account_id";
