//! Components in PostgreSQL, shared by every node: metadata and bytes in tables, so a
//! component uploaded through one node runs on any other (each node compiles it into its
//! own artifact cache on first use). An account's uploads and deletes are serialized by
//! an advisory lock of the account, so its count stays within the plan's.

use async_trait::async_trait;
use sqlx::{PgPool, Postgres, Transaction};

use super::{
    names::Spec,
    store::{ComponentBackend, ComponentRecord, CreateError, Result, newest},
};
use crate::runtime::newest;
use crate::storage::{bigint, unsigned};

/// Components over a PostgreSQL pool whose migrations have run.
#[derive(Clone)]
pub struct PgComponents {
    pool: PgPool,
}

impl PgComponents {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

fn record(json: &str) -> Result<ComponentRecord> {
    Ok(serde_json::from_str(json)?)
}

/// Holds the account's components still until `tx` ends.
async fn lock_account(tx: &mut Transaction<'_, Postgres>, account: &str) -> Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('wasmind.components'), hashtext($1))")
        .bind(account)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

#[async_trait]
impl ComponentBackend for PgComponents {
    async fn create(
        &self,
        mut record: ComponentRecord,
        bytes: Vec<u8>,
        max: u32,
        validation_us: u64,
    ) -> std::result::Result<ComponentRecord, CreateError> {
        let account = record.account.clone();
        let mut tx = self.pool.begin().await?;
        lock_account(&mut tx, &account).await?;
        let (held, taken): (i64, bool) = sqlx::query_as(
            "SELECT count(*), coalesce(bool_or(name = $2 AND version = $3), false)
             FROM components WHERE account_id = $1",
        )
        .bind(&account)
        .bind(&record.name)
        .bind(&record.version)
        .fetch_one(&mut *tx)
        .await?;
        if taken {
            return Err(CreateError::Exists);
        }
        if held >= i64::from(max) {
            return Err(CreateError::Quota { max });
        }
        sqlx::query(
            "INSERT INTO component_bytes (account_id, sha256, bytes) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING",
        )
        .bind(&account)
        .bind(&record.sha256)
        .bind(bytes)
        .execute(&mut *tx)
        .await?;
        let seq: i64 = sqlx::query_scalar(
            "WITH s AS (SELECT nextval('component_seq') AS seq)
             INSERT INTO components (account_id, component_id, name, version, sha256, seq, record)
             SELECT $1, $2, $3, $4, $5, s.seq, jsonb_set($6::jsonb, '{seq}', to_jsonb(s.seq))
             FROM s RETURNING seq",
        )
        .bind(&account)
        .bind(&record.component_id)
        .bind(&record.name)
        .bind(&record.version)
        .bind(&record.sha256)
        .bind(serde_json::to_string(&record)?)
        .fetch_one(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO component_digests (sha256, refs, validation_us) VALUES ($1, 1, $2)
             ON CONFLICT (sha256) DO UPDATE SET refs = component_digests.refs + 1",
        )
        .bind(&record.sha256)
        .bind(bigint(validation_us))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        record.seq = unsigned(seq);
        Ok(record)
    }

    async fn get(&self, account: &str, id: &str) -> Result<Option<ComponentRecord>> {
        let json: Option<String> = sqlx::query_scalar(
            "SELECT record::text FROM components WHERE account_id = $1 AND component_id = $2",
        )
        .bind(account)
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        json.as_deref().map(record).transpose()
    }

    async fn resolve(&self, account: &str, spec: &str) -> Result<Option<ComponentRecord>> {
        let newest_of = |name: &str| {
            let query = sqlx::query_as::<_, (String, String)>(
                "SELECT version, record::text FROM components
                 WHERE account_id = $1 AND name = $2",
            )
            .bind(account.to_owned())
            .bind(name.to_owned());
            async move {
                let versions = query.fetch_all(&self.pool).await?;
                newest(versions).as_deref().map(record).transpose()
            }
        };
        match Spec::parse(spec) {
            Spec::Id(id) => match self.get(account, id).await? {
                Some(record) => Ok(Some(record)),
                None => newest_of(id).await,
            },
            Spec::Newest(name) => newest_of(name).await,
            Spec::Exact { name, version } => {
                let json: Option<String> = sqlx::query_scalar(
                    "SELECT record::text FROM components
                     WHERE account_id = $1 AND name = $2 AND version = $3",
                )
                .bind(account)
                .bind(name)
                .bind(version)
                .fetch_optional(&self.pool)
                .await?;
                json.as_deref().map(record).transpose()
            }
        }
    }

    async fn list(
        &self,
        account: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<ComponentRecord>, Option<u64>)> {
        let seq = |r: &ComponentRecord| r.seq;
        newest::pg_page(&self.pool, "components", (account, before, limit), seq).await
    }

    async fn delete(&self, account: &str, id: &str) -> Result<Option<(ComponentRecord, bool)>> {
        let mut tx = self.pool.begin().await?;
        lock_account(&mut tx, account).await?;
        let json: Option<String> = sqlx::query_scalar(
            "DELETE FROM components WHERE account_id = $1 AND component_id = $2
             RETURNING record::text",
        )
        .bind(account)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(record) = json.as_deref().map(record).transpose()? else {
            return Ok(None);
        };
        sqlx::query(
            "DELETE FROM component_bytes WHERE account_id = $1 AND sha256 = $2
             AND NOT EXISTS (SELECT 1 FROM components WHERE account_id = $1 AND sha256 = $2)",
        )
        .bind(account)
        .bind(&record.sha256)
        .execute(&mut *tx)
        .await?;
        let refs: i64 = sqlx::query_scalar(
            "UPDATE component_digests SET refs = refs - 1 WHERE sha256 = $1 RETURNING refs",
        )
        .bind(&record.sha256)
        .fetch_one(&mut *tx)
        .await?;
        let last = refs <= 0;
        if last {
            sqlx::query("DELETE FROM component_digests WHERE sha256 = $1")
                .bind(&record.sha256)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(Some((record, last)))
    }

    async fn count(&self, account: &str) -> Result<usize> {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM components WHERE account_id = $1")
            .bind(account)
            .fetch_one(&self.pool)
            .await?;
        Ok(usize::try_from(n).unwrap_or_default())
    }

    async fn validation_us(&self, sha256: &str) -> Result<Option<u64>> {
        let us: Option<i64> =
            sqlx::query_scalar("SELECT validation_us FROM component_digests WHERE sha256 = $1")
                .bind(sha256)
                .fetch_optional(&self.pool)
                .await?;
        Ok(us.map(unsigned))
    }

    async fn referenced(&self, sha256: &str) -> Result<bool> {
        Ok(self.validation_us(sha256).await?.is_some())
    }

    async fn bytes(&self, account: &str, sha256: &str) -> Result<Option<Vec<u8>>> {
        Ok(sqlx::query_scalar(
            "SELECT bytes FROM component_bytes WHERE account_id = $1 AND sha256 = $2",
        )
        .bind(account)
        .bind(sha256)
        .fetch_optional(&self.pool)
        .await?)
    }
}
