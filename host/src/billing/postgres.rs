//! [`BillingStore`] in PostgreSQL (the postgres backend): one `billing_links` row per
//! account, its subscription as JSON, and `billing_events`, whose primary key makes a
//! second application of an event — from any node — write nothing.

use async_trait::async_trait;
use sqlx::{PgPool, Row, postgres::PgRow};

use super::{BillingStore, Link, Subscription, Turn};
use crate::{
    clock::now_ms,
    storage::{StoreError, bigint},
};

/// The advisory lock of billing's [`Turn`] ("billing" in ASCII; no other lock of ours
/// takes this key).
const TURN_LOCK: i64 = 0x0062_696c_6c69_6e67;

/// A transaction holding the turn's advisory lock, which its end releases (a dropped one
/// too: its connection rolls it back before it serves again).
struct PgTurn(sqlx::Transaction<'static, sqlx::Postgres>);

#[async_trait]
impl Turn for PgTurn {
    async fn release(self: Box<Self>) -> Result<(), StoreError> {
        Ok(self.0.rollback().await?)
    }
}

/// Billing's state over a PostgreSQL pool whose migrations have run.
#[derive(Clone)]
pub struct PgBilling {
    pool: PgPool,
}

impl PgBilling {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

/// The links query ending in `$tail` (sqlx takes only static SQL).
macro_rules! links {
    ($tail:literal) => {
        concat!(
            "SELECT account_id, customer_id, subscription::text AS subscription \
             FROM billing_links ",
            $tail
        )
    };
}

fn link_of(row: &PgRow) -> Result<Link, StoreError> {
    let subscription: Option<String> = row.try_get("subscription")?;
    Ok(Link {
        account: row.try_get("account_id")?,
        customer: row.try_get("customer_id")?,
        subscription: subscription.map(|s| serde_json::from_str(&s)).transpose()?,
    })
}

#[async_trait]
impl BillingStore for PgBilling {
    async fn by_account(&self, account: &str) -> Result<Option<Link>, StoreError> {
        let row = sqlx::query(links!("WHERE account_id = $1"))
            .bind(account)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(link_of).transpose()
    }

    async fn by_customer(&self, customer: &str) -> Result<Option<Link>, StoreError> {
        let row = sqlx::query(links!("WHERE customer_id = $1"))
            .bind(customer)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(link_of).transpose()
    }

    async fn links(&self) -> Result<Vec<Link>, StoreError> {
        let rows = sqlx::query(links!("ORDER BY account_id"))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(link_of).collect()
    }

    async fn link(&self, account: &str, customer: &str) -> Result<Link, StoreError> {
        sqlx::query(
            "INSERT INTO billing_links (account_id, customer_id) VALUES ($1, $2)
             ON CONFLICT (account_id) DO NOTHING",
        )
        .bind(account)
        .bind(customer)
        .execute(&self.pool)
        .await?;
        let found = self.by_account(account).await?;
        found.ok_or_else(|| StoreError::Corrupt(format!("billing link of {account:?} vanished")))
    }

    async fn turn(&self) -> Result<Box<dyn Turn>, StoreError> {
        let mut txn = self.pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(TURN_LOCK)
            .execute(&mut *txn)
            .await?;
        Ok(Box::new(PgTurn(txn)))
    }

    async fn seen(&self, id: &str) -> Result<bool, StoreError> {
        let row = sqlx::query("SELECT 1 FROM billing_events WHERE event_id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.is_some())
    }

    async fn record(
        &self,
        id: &str,
        account: &str,
        subscription: Option<&Subscription>,
    ) -> Result<bool, StoreError> {
        let mut txn = self.pool.begin().await?;
        let inserted = sqlx::query(
            "INSERT INTO billing_events (event_id, applied_at) VALUES ($1, $2)
             ON CONFLICT (event_id) DO NOTHING",
        )
        .bind(id)
        .bind(bigint(now_ms()))
        .execute(&mut *txn)
        .await?;
        if inserted.rows_affected() == 0 {
            return Ok(false);
        }
        if let Some(subscription) = subscription {
            sqlx::query("UPDATE billing_links SET subscription = $2::jsonb WHERE account_id = $1")
                .bind(account)
                .bind(serde_json::to_string(subscription)?)
                .execute(&mut *txn)
                .await?;
        }
        txn.commit().await?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{storage::test_pool, test_postgres::Postgres};

    /// Two nodes' stores on one database: the second waits for the turn until the first
    /// releases it.
    #[tokio::test]
    async fn one_node_at_a_time_has_the_turn() {
        let pg = Postgres::start();
        let url = pg.database("billing_turn");
        let (a, b) = (
            PgBilling::new(test_pool(&url).await),
            PgBilling::new(test_pool(&url).await),
        );
        let held = a.turn().await.unwrap();
        let waiting = tokio::spawn(async move { b.turn().await });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !waiting.is_finished(),
            "the second node got the turn while the first held it"
        );
        held.release().await.unwrap();
        let second = tokio::time::timeout(Duration::from_secs(10), waiting).await;
        second.unwrap().unwrap().unwrap().release().await.unwrap();
    }
}
