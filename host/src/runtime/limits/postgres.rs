//! Limits counted from PostgreSQL, for every node at once: an account's live agents and
//! their run time so far are its agent rows not yet terminal, a key's spawn-rate windows
//! are the rows it spawned in the last minute and hour, finished months are the usage
//! table. A spawn reads them and inserts its row in one transaction holding a lock of the
//! account, so concurrent spawns at different nodes are admitted one after another.
//! Only the host's admission cap is this node's own. The admitted agent is claimed by
//! this node in the same insert (see `cluster`) — or, when this node is at its cap,
//! offered to the others in it, and withdrawn (the spawn refused as at capacity) if no node
//! claims it soon (`cluster::offers`).

use std::sync::Arc;

use async_trait::async_trait;
use sqlx::{PgConnection, PgPool, Row};

use super::{Admitted, Asked, Place, SpawnLimits, retry_after_secs};
use crate::{
    accounts::{RateRefusal, Window},
    clock::{month_of, now_ms},
    runtime::{
        admission::{Admission, Refusal},
        cluster::{Cluster, offers},
        records::{AgentRecord, AgentStore, Allowance, Claim, FIRST_EPOCH, insert_agent},
        spawn::{SpawnRefusal, SpawnStorageError},
    },
    storage::{bigint, unsigned},
};

/// Limits of every node's spawns.
pub struct SharedLimits {
    pool: PgPool,
    admission: Arc<Admission>,
    /// This node, which claims what it admits (or offers what it has no room for).
    cluster: Arc<Cluster>,
    /// Watched while an offer waits for a claim.
    records: AgentStore,
}

/// What a spawn of one key of one account is checked against.
struct Figures {
    month_run_ms: u64,
    /// Mind tokens of the month's finished runs and the host's jobs.
    month_tokens: u64,
    live: u32,
    /// Spawns of the key in the last minute, and when the oldest of them was.
    minute: (u32, u64),
    /// The same for the last hour.
    hour: (u32, u64),
}

fn count(row: &sqlx::postgres::PgRow, column: &str) -> sqlx::Result<u32> {
    Ok(u32::try_from(row.try_get::<i64, _>(column)?).unwrap_or(u32::MAX))
}

fn millis(row: &sqlx::postgres::PgRow, column: &str) -> sqlx::Result<u64> {
    Ok(unsigned(row.try_get(column)?))
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
            (SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM account_usage
             WHERE account_id = $1 AND month = $4)::bigint AS tokens,
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
    .bind(bigint(now))
    .bind(month_of(now))
    .fetch_one(conn)
    .await?;
    Ok(Figures {
        month_run_ms: millis(&row, "finished_ms")? + millis(&row, "running_ms")?,
        month_tokens: millis(&row, "tokens")?,
        live: count(&row, "live")?,
        minute: (count(&row, "minute")?, millis(&row, "minute_oldest")?),
        hour: (count(&row, "hour")?, millis(&row, "hour_oldest")?),
    })
}

impl SharedLimits {
    pub fn new(cluster: Arc<Cluster>, admission: Arc<Admission>, records: AgentStore) -> Self {
        Self {
            pool: cluster.pool.clone(),
            admission,
            cluster,
            records,
        }
    }

    async fn read(&self, account: &str, key_id: &str, now: u64) -> sqlx::Result<Figures> {
        let mut conn = self.pool.acquire().await?;
        figures(&mut conn, account, key_id, now).await
    }
}

#[async_trait]
impl SpawnLimits for SharedLimits {
    async fn admit(&self, record: AgentRecord, asked: Asked<'_>) -> Result<Admitted, SpawnRefusal> {
        let limits = asked.limits;
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('wasmind.spawns'), hashtext($1))")
            .bind(&record.account)
            .execute(&mut *tx)
            .await?;
        let now = asked.now;
        let seen = figures(&mut tx, &record.account, &record.key_id, now).await?;
        asked.month(seen.month_run_ms, seen.month_tokens)?;
        let max = limits.concurrent_agents;
        if seen.live >= max {
            let current = seen.live;
            return Err(asked.place(Refusal::ConcurrentLimit { current, max }));
        }
        // No room here: the spawn is offered to the nodes with room, if the rate windows
        // admit it; if they do not, the refusal is the host's capacity, which comes first.
        let (slot, at_capacity) = match self.admission.reserve(&record.account, u32::MAX) {
            Ok(slot) => (Some(slot), None),
            Err(refusal @ Refusal::AtCapacity { .. }) => (None, Some(refusal)),
            Err(refusal) => return Err(asked.place(refusal)),
        };
        let full = [
            (Window::Minute, seen.minute, limits.spawns_per_minute),
            (Window::Hour, seen.hour, limits.spawns_per_hour),
        ]
        .into_iter()
        .find(|(_, (spawned, _), max)| spawned >= max);
        if let Some((window, (_, oldest), _)) = full {
            if let Some(refusal) = at_capacity {
                return Err(asked.place(refusal));
            }
            let retry_after_secs = retry_after_secs(window, oldest, now);
            return Err(asked.rate(RateRefusal {
                window,
                retry_after_secs,
            }));
        }
        let claim = Claim {
            node: &self.cluster.node,
            lease_until: Some(now + self.cluster.lease_ms()),
            offer: slot.is_none().then(|| Allowance::of(limits)),
        };
        let record = (insert_agent(&mut tx, record, claim).await)?;
        if slot.is_none() {
            offers::announce(&mut tx).await?;
        }
        tx.commit().await?;
        let Some(slot) = slot else {
            let claimed = offers::await_claim(&self.pool, &self.records, &record).await;
            return match claimed? {
                true => Ok(Admitted {
                    record,
                    place: Place::Elsewhere,
                }),
                false => Err(SpawnRefusal::AtCapacity {
                    cap: self.admission.cap(),
                }),
            };
        };
        let place = Place::Here {
            slot,
            fence: Some(FIRST_EPOCH),
        };
        Ok(Admitted { record, place })
    }

    async fn month_run_ms(&self, account: &str, now: u64) -> Result<u64, SpawnStorageError> {
        Ok(self.read(account, "", now).await?.month_run_ms)
    }

    async fn concurrent(&self, account: &str) -> Result<u32, SpawnStorageError> {
        Ok(self.read(account, "", now_ms()).await?.live)
    }

    async fn spawns_in_windows(
        &self,
        account: &str,
        key_id: &str,
    ) -> Result<(u32, u32), SpawnStorageError> {
        let seen = self.read(account, key_id, now_ms()).await?;
        Ok((seen.minute.0, seen.hour.0))
    }
}
