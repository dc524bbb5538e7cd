//! Metered usage in PostgreSQL (the postgres backend).

use async_trait::async_trait;
use sqlx::{PgConnection, PgPool, Row, postgres::PgRow};

use super::{MonthUsage, UsageLedger};
use crate::{
    clock::month_of,
    storage::{StoreError, bigint},
};

/// Usage in PostgreSQL: one row per account and month, added to in place, so concurrent
/// nodes' additions never lose one another.
#[derive(Clone)]
pub struct PgUsage {
    pool: PgPool,
}

impl PgUsage {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

fn usage_of(row: &PgRow) -> Result<MonthUsage, StoreError> {
    let field = |name: &str| -> Result<u64, StoreError> {
        u64::try_from(row.try_get::<i64, _>(name)?)
            .map_err(|_| StoreError::Corrupt(format!("negative {name}")))
    };
    Ok(MonthUsage {
        run_ms: field("run_ms")?,
        input_tokens: field("input_tokens")?,
        output_tokens: field("output_tokens")?,
        cpu_ms: field("cpu_ms")?,
        http_requests: field("http_requests")?,
        http_bytes: field("http_bytes")?,
    })
}

/// Adds `delta` to the month of `at_ms` on `conn` (in the caller's transaction, if any).
pub async fn add_usage(
    conn: &mut PgConnection,
    account: &str,
    at_ms: u64,
    delta: MonthUsage,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO account_usage
             (account_id, month, run_ms, input_tokens, output_tokens, cpu_ms,
              http_requests, http_bytes)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (account_id, month) DO UPDATE SET
             run_ms = account_usage.run_ms + EXCLUDED.run_ms,
             input_tokens = account_usage.input_tokens + EXCLUDED.input_tokens,
             output_tokens = account_usage.output_tokens + EXCLUDED.output_tokens,
             cpu_ms = account_usage.cpu_ms + EXCLUDED.cpu_ms,
             http_requests = account_usage.http_requests + EXCLUDED.http_requests,
             http_bytes = account_usage.http_bytes + EXCLUDED.http_bytes",
    )
    .bind(account)
    .bind(month_of(at_ms))
    .bind(bigint(delta.run_ms))
    .bind(bigint(delta.input_tokens))
    .bind(bigint(delta.output_tokens))
    .bind(bigint(delta.cpu_ms))
    .bind(bigint(delta.http_requests))
    .bind(bigint(delta.http_bytes))
    .execute(conn)
    .await?;
    Ok(())
}

#[async_trait]
impl UsageLedger for PgUsage {
    async fn add(&self, account: &str, at_ms: u64, delta: MonthUsage) -> Result<(), StoreError> {
        add_usage(&mut *self.pool.acquire().await?, account, at_ms, delta).await
    }

    async fn month(&self, account: &str, at_ms: u64) -> Result<MonthUsage, StoreError> {
        sqlx::query(
            "SELECT run_ms, input_tokens, output_tokens, cpu_ms, http_requests, http_bytes
             FROM account_usage
             WHERE account_id = $1 AND month = $2",
        )
        .bind(account)
        .bind(month_of(at_ms))
        .fetch_optional(&self.pool)
        .await?
        .map_or(Ok(MonthUsage::default()), |row| usage_of(&row))
    }

    async fn all(&self) -> Result<Vec<(String, String, MonthUsage)>, StoreError> {
        sqlx::query("SELECT * FROM account_usage ORDER BY account_id, month")
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| {
                Ok((
                    row.try_get("account_id")?,
                    row.try_get("month")?,
                    usage_of(row)?,
                ))
            })
            .collect()
    }
}
