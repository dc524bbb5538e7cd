//! Taking over the agents of lost hosts: any node, at its heartbeat, takes the rows whose
//! lease ran out (skipping those another node is taking). A row whose run has a journal is
//! claimed by this node under the next epoch (the lost node's writes, its journal's
//! included, are refused from now on) to be resumed here, when this node has room for it;
//! without room it is left for a node with room, for one more lease. Every other row —
//! an offer no node took, a run that had not begun, one no node had room for — is failed
//! `host_lost` in one transaction with the others: the claim superseded, the end logged,
//! watchers woken everywhere and the run metered up to the owner's last heartbeat.

use serde_json::json;
use sqlx::{PgConnection, PgPool};

use crate::{
    accounts::{MonthUsage, add_usage},
    runtime::records::{
        AgentRecord, Failure, LogEvent, OFFERED, Status, append_event, notify, write_record,
    },
    storage::bigint,
};

/// Rows taken per transaction; the rest wait for the next heartbeat.
const BATCH: i64 = 100;

/// The error code of an agent whose node was lost.
pub const HOST_LOST: &str = "host_lost";

/// A lost node's agent this node claimed, to resume in the place `slot` reserved for it.
pub struct Taken<S> {
    pub record: AgentRecord,
    /// This node's claim on it.
    pub epoch: u64,
    /// The lost node.
    pub owner: String,
    pub slot: S,
}

/// What one [`reap`] did.
pub struct Reaped<S> {
    /// Agents failed `host_lost`.
    pub failed: usize,
    /// Agents claimed by this node, to resume.
    pub taken: Vec<Taken<S>>,
}

/// Takes over the agents whose lease ended before `now` (epoch ms), their owners' leases
/// being `lease_ms` long, as node `node`, which reserves a place for each it could resume
/// with `room` (`None`: it has none).
pub async fn reap<S>(
    pool: &PgPool,
    node: &str,
    lease_ms: u64,
    now: u64,
    mut room: impl FnMut(&AgentRecord) -> Option<S>,
) -> anyhow::Result<Reaped<S>> {
    let mut tx = pool.begin().await?;
    let expired: Vec<(String, i64, i64, String, bool)> = sqlx::query_as(
        "SELECT owner, lease_until, epoch, record::text,
                EXISTS (SELECT 1 FROM agent_runs r
                        WHERE r.account_id = a.account_id AND r.agent_id = a.agent_id)
         FROM agents a
         WHERE status IN ('spawning', 'running') AND lease_until < $1
         ORDER BY lease_until LIMIT $2
         FOR UPDATE OF a SKIP LOCKED",
    )
    .bind(bigint(now))
    .bind(BATCH)
    .fetch_all(&mut *tx)
    .await?;
    let mut reaped = Reaped {
        failed: 0,
        taken: Vec::new(),
    };
    for (owner, lease_until, epoch, json, journaled) in expired {
        let mut record: AgentRecord = serde_json::from_str(&json)?;
        let lease_until = u64::try_from(lease_until)?;
        let epoch = u64::try_from(epoch)?;
        let resumable = epoch != OFFERED && journaled;
        if resumable {
            match room(&record) {
                Some(slot) => {
                    let epoch = claim(&mut tx, node, &record, now + lease_ms).await?;
                    let agent = &record.agent_id;
                    tracing::warn!(agent = %agent, node = %owner, "took over a lost node's agent");
                    reaped.taken.push(Taken {
                        record,
                        epoch,
                        owner,
                        slot,
                    });
                    continue;
                }
                // Another node with room may take it, for one more lease.
                None if now < lease_until + lease_ms => continue,
                None => {}
            }
        }
        let last_beat = lease_until.saturating_sub(lease_ms);
        record.status = Status::Failed;
        record.ended_at = Some(now);
        record.updated_at = now;
        let message = match epoch {
            OFFERED => format!(
                "the node offering this agent to others ({owner}) was lost before any \
                 node took it; run the task again"
            ),
            _ => format!(
                "the node running this agent ({owner}) was lost: it last renewed its lease \
                 {}s before the agent was failed, and {}; run the task again",
                now.saturating_sub(last_beat) / 1000,
                match resumable {
                    true => "no node had room to resume it",
                    false => "its run had not begun",
                }
            ),
        };
        record.error = Some(Failure {
            code: HOST_LOST.into(),
            message,
        });
        write_record(&mut tx, &record).await?;
        sqlx::query(
            "UPDATE agents SET owner = NULL, lease_until = NULL, epoch = epoch + 1
             WHERE account_id = $1 AND agent_id = $2",
        )
        .bind(&record.account)
        .bind(&record.agent_id)
        .execute(&mut *tx)
        .await?;
        let run_ms = record
            .started_at
            .map_or(0, |started| last_beat.saturating_sub(started));
        let data = json!({ "status": "failed", "error": record.error, "run_ms": run_ms });
        let event = LogEvent {
            ts: now,
            ..LogEvent::new("terminal", "failed".into(), Some(data))
        };
        append_event(&mut tx, &record.account, &record.agent_id, None, &event).await?;
        notify(&mut tx, &record.agent_id).await?;
        let usage = MonthUsage {
            run_ms,
            ..MonthUsage::default()
        };
        add_usage(&mut tx, &record.account, last_beat, usage).await?;
        tracing::warn!(agent = %record.agent_id, node = %owner, "failed the agent of a lost node");
        reaped.failed += 1;
    }
    tx.commit().await?;
    Ok(reaped)
}

/// Claims the lost node's agent of `record` as `node`'s, under the next epoch and a lease
/// until `lease_until`, waking its watchers; the new epoch.
async fn claim(
    tx: &mut PgConnection,
    node: &str,
    record: &AgentRecord,
    lease_until: u64,
) -> anyhow::Result<u64> {
    let epoch: i64 = sqlx::query_scalar(
        "UPDATE agents SET owner = $3, epoch = epoch + 1, lease_until = $4
         WHERE account_id = $1 AND agent_id = $2 RETURNING epoch",
    )
    .bind(&record.account)
    .bind(&record.agent_id)
    .bind(node)
    .bind(bigint(lease_until))
    .fetch_one(&mut *tx)
    .await?;
    notify(&mut *tx, &record.agent_id).await?;
    Ok(u64::try_from(epoch)?)
}
