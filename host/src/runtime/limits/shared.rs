//! Limits counted from PostgreSQL, for every node at once: an account's live agents and
//! their run time so far are its agent rows not yet terminal, a key's spawn-rate windows
//! are the rows it spawned in the last minute and hour, finished months are the usage
//! table. A spawn reads them and inserts its row in one transaction holding a lock of the
//! account, so concurrent spawns at different nodes are admitted one after another.
//! Only the host's admission cap is this node's own. The admitted agent is claimed by
//! this node in the same insert (see `cluster`).

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use sqlx::{PgConnection, PgPool, Row};

use super::{Admitted, Asked, SpawnLimits, retry_after_secs};
use crate::{
    accounts::{RateRefusal, Window},
    clock::{month_of, now_ms},
    runtime::{
        admission::{Admission, Refusal},
        records::{AgentRecord, Claim, FIRST_EPOCH, insert_agent},
        spawn::SpawnRefusal,
    },
};

/// Limits of every node's spawns.
pub struct SharedLimits {
    pool: PgPool,
    admission: Arc<Admission>,
    /// This node, which claims what it admits, and how long its first lease holds.
    node: String,
    lease_ms: u64,
}

/// What a spawn of one key of one account is checked against.
struct Figures {
    month_run_ms: u64,
    live: u32,
    /// Spawns of the key in the last minute, and when the oldest of them was.
    minute: (u32, u64),
    /// The same for the last hour.
    hour: (u32, u64),
}

fn ms(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn count(row: &sqlx::postgres::PgRow, column: &str) -> sqlx::Result<u32> {
    Ok(u32::try_from(row.try_get::<i64, _>(column)?).unwrap_or(u32::MAX))
}

fn millis(row: &sqlx::postgres::PgRow, column: &str) -> sqlx::Result<u64> {
    Ok(u64::try_from(row.try_get::<i64, _>(column)?).unwrap_or_default())
}

/// The figures of `account` (and of `key_id`'s windows) at `now`, in one statement.
async fn figures(
    conn: &mut PgConnection,
    account: &str,
    key_id: &str,
    now: u64,
) -> sqlx::Result<Figures> {
    let row = sqlx::query(
        "SELECT
            (SELECT coalesce(sum(run_ms), 0) FROM account_usage
             WHERE account_id = $1 AND month = $4)::bigint AS finished_ms,
            (SELECT coalesce(sum(greatest($3 - coalesce((record->>'started_at')::bigint,
                                                         created_at), 0)), 0)
             FROM agents WHERE account_id = $1 AND status IN ('spawning', 'running'))::bigint
                AS running_ms,
            (SELECT count(*) FROM agents
             WHERE account_id = $1 AND status IN ('spawning', 'running')) AS live,
            (SELECT count(*) FROM agents
             WHERE account_id = $1 AND key_id = $2 AND created_at > $3 - 60000) AS minute,
            (SELECT coalesce(min(created_at), 0) FROM agents
             WHERE account_id = $1 AND key_id = $2 AND created_at > $3 - 60000) AS minute_oldest,
            (SELECT count(*) FROM agents
             WHERE account_id = $1 AND key_id = $2 AND created_at > $3 - 3600000) AS hour,
            (SELECT coalesce(min(created_at), 0) FROM agents
             WHERE account_id = $1 AND key_id = $2 AND created_at > $3 - 3600000) AS hour_oldest",
    )
    .bind(account)
    .bind(key_id)
    .bind(ms(now))
    .bind(month_of(now))
    .fetch_one(conn)
    .await?;
    Ok(Figures {
        month_run_ms: millis(&row, "finished_ms")? + millis(&row, "running_ms")?,
        live: count(&row, "live")?,
        minute: (count(&row, "minute")?, millis(&row, "minute_oldest")?),
        hour: (count(&row, "hour")?, millis(&row, "hour_oldest")?),
    })
}

impl SharedLimits {
    pub fn new(pool: PgPool, admission: Arc<Admission>, node: &str, lease: Duration) -> Self {
        Self {
            pool,
            admission,
            node: node.to_owned(),
            lease_ms: u64::try_from(lease.as_millis()).unwrap_or(u64::MAX),
        }
    }

    async fn read(&self, account: &str, key_id: &str, now: u64) -> anyhow::Result<Figures> {
        let mut conn = self.pool.acquire().await?;
        Ok(figures(&mut conn, account, key_id, now).await?)
    }
}

fn storage(e: impl Into<anyhow::Error>) -> SpawnRefusal {
    SpawnRefusal::Storage(e.into())
}

#[async_trait]
impl SpawnLimits for SharedLimits {
    async fn admit(&self, record: AgentRecord, asked: Asked<'_>) -> Result<Admitted, SpawnRefusal> {
        let limits = asked.limits;
        let mut tx = self.pool.begin().await.map_err(storage)?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('wasmind.spawns'), hashtext($1))")
            .bind(&record.account)
            .execute(&mut *tx)
            .await
            .map_err(storage)?;
        let now = asked.now;
        let seen = figures(&mut tx, &record.account, &record.key_id, now)
            .await
            .map_err(storage)?;
        asked.month(seen.month_run_ms)?;
        let max = limits.concurrent_agents;
        if seen.live >= max {
            let current = seen.live;
            return Err(asked.place(Refusal::ConcurrentLimit { current, max }));
        }
        let slot = (self.admission)
            .reserve(&record.account, u32::MAX)
            .map_err(|refusal| asked.place(refusal))?;
        let full = [
            (Window::Minute, seen.minute, limits.spawns_per_minute),
            (Window::Hour, seen.hour, limits.spawns_per_hour),
        ]
        .into_iter()
        .find(|(_, (spawned, _), max)| spawned >= max);
        if let Some((window, (_, oldest), _)) = full {
            let retry_after_secs = retry_after_secs(window, oldest, now);
            return Err(asked.rate(RateRefusal {
                window,
                retry_after_secs,
            }));
        }
        let claim = Claim {
            node: &self.node,
            lease_until: Some(now + self.lease_ms),
        };
        let record = (insert_agent(&mut tx, record, Some(claim)).await).map_err(storage)?;
        tx.commit().await.map_err(storage)?;
        Ok(Admitted {
            record,
            slot,
            fence: Some(FIRST_EPOCH),
        })
    }

    async fn month_run_ms(&self, account: &str, now: u64) -> anyhow::Result<u64> {
        Ok(self.read(account, "", now).await?.month_run_ms)
    }

    async fn concurrent(&self, account: &str) -> anyhow::Result<u32> {
        Ok(self.read(account, "", now_ms()).await?.live)
    }

    async fn spawns_in_windows(&self, account: &str, key_id: &str) -> anyhow::Result<(u32, u32)> {
        let seen = self.read(account, key_id, now_ms()).await?;
        Ok((seen.minute.0, seen.hour.0))
    }
}
