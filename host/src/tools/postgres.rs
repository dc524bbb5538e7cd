//! Tools in PostgreSQL, shared by every node. An account's creations are serialized by an
//! advisory lock of the account, so its count stays within the plan's.

use async_trait::async_trait;
use sqlx::PgPool;

use super::{
    seal::key_id_of,
    store::{CreateError, Listing, Result, ToolBackend, ToolKind, ToolRecord},
};

/// Tools over a PostgreSQL pool whose migrations have run.
#[derive(Clone)]
pub struct PgTools {
    pool: PgPool,
}

impl PgTools {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

fn record(json: &str) -> Result<ToolRecord> {
    Ok(serde_json::from_str(json)?)
}

#[async_trait]
impl ToolBackend for PgTools {
    async fn create(&self, record: ToolRecord, max: u32) -> std::result::Result<(), CreateError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('wasmind.tools'), hashtext($1))")
            .bind(&record.account)
            .execute(&mut *tx)
            .await?;
        let (held, taken): (i64, bool) = sqlx::query_as(
            "SELECT count(*), coalesce(bool_or(name = $2), false) FROM tools WHERE account_id = $1",
        )
        .bind(&record.account)
        .bind(&record.name)
        .fetch_one(&mut *tx)
        .await?;
        if taken {
            return Err(CreateError::Exists);
        }
        if held >= i64::from(max) {
            return Err(CreateError::Quota { max });
        }
        sqlx::query(
            "INSERT INTO tools (account_id, name, key_id, record) VALUES ($1, $2, $3, $4::jsonb)",
        )
        .bind(&record.account)
        .bind(&record.name)
        .bind(record.secret.as_deref().and_then(key_id_of))
        .bind(serde_json::to_string(&record)?)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn get(&self, account: &str, name: &str) -> Result<Option<ToolRecord>> {
        let json: Option<String> = sqlx::query_scalar(
            "SELECT record::text FROM tools WHERE account_id = $1 AND name = $2",
        )
        .bind(account)
        .bind(name)
        .fetch_optional(&self.pool)
        .await?;
        json.as_deref().map(record).transpose()
    }

    async fn list(&self, account: &str) -> Result<Vec<ToolRecord>> {
        let rows: Vec<String> = sqlx::query_scalar(
            "SELECT record::text FROM tools WHERE account_id = $1 ORDER BY name COLLATE \"C\"",
        )
        .bind(account)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|json| record(json)).collect()
    }

    async fn delete(&self, account: &str, name: &str) -> Result<Option<ToolRecord>> {
        let json: Option<String> = sqlx::query_scalar(
            "DELETE FROM tools WHERE account_id = $1 AND name = $2 RETURNING record::text",
        )
        .bind(account)
        .bind(name)
        .fetch_optional(&self.pool)
        .await?;
        json.as_deref().map(record).transpose()
    }

    async fn set_listing(
        &self,
        account: &str,
        name: &str,
        id: &str,
        listing: Listing,
    ) -> Result<Option<ToolRecord>> {
        let mut tx = self.pool.begin().await?;
        let json: Option<String> = sqlx::query_scalar(
            "SELECT record::text FROM tools WHERE account_id = $1 AND name = $2 FOR UPDATE",
        )
        .bind(account)
        .bind(name)
        .fetch_optional(&mut *tx)
        .await?;
        let mut record = match json.as_deref().map(record).transpose()? {
            Some(record) if record.id == id => record,
            _ => return Ok(None),
        };
        let ToolKind::Mcp(server) = &mut record.kind else {
            return Ok(None);
        };
        server.listing = Some(listing);
        sqlx::query("UPDATE tools SET record = $3::jsonb WHERE account_id = $1 AND name = $2")
            .bind(account)
            .bind(name)
            .bind(serde_json::to_string(&record)?)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Some(record))
    }

    async fn sealing_keys(&self) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT DISTINCT key_id FROM tools WHERE key_id IS NOT NULL ORDER BY key_id",
        )
        .fetch_all(&self.pool)
        .await?)
    }
}
