//! Failing the agents of lost hosts: any node, at its heartbeat, takes the rows whose lease
//! ran out (skipping those another node is taking) and, per row in one transaction with
//! the others, marks the agent `failed` with `host_lost`, supersedes the claim (the lost
//! node's writes are refused from now on), logs the end, wakes watchers everywhere and
//! meters the run up to the owner's last heartbeat.

use serde_json::json;
use sqlx::PgPool;

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

/// Fails the agents whose lease ended before `now` (epoch ms), their owners' leases being
/// `lease_ms` long; how many.
pub async fn reap(pool: &PgPool, lease_ms: u64, now: u64) -> anyhow::Result<usize> {
    let mut tx = pool.begin().await?;
    let expired: Vec<(String, i64, i64, String)> = sqlx::query_as(
        "SELECT owner, lease_until, epoch, record::text FROM agents
         WHERE status IN ('spawning', 'running') AND lease_until < $1
         ORDER BY lease_until LIMIT $2
         FOR UPDATE SKIP LOCKED",
    )
    .bind(bigint(now))
    .bind(BATCH)
    .fetch_all(&mut *tx)
    .await?;
    for (owner, lease_until, epoch, json) in &expired {
        let mut record: AgentRecord = serde_json::from_str(json)?;
        let last_beat = u64::try_from(*lease_until)?.saturating_sub(lease_ms);
        record.status = Status::Failed;
        record.ended_at = Some(now);
        record.updated_at = now;
        let message = match u64::try_from(*epoch)? {
            OFFERED => format!(
                "the node offering this agent to others ({owner}) was lost before any \
                 node took it; run the task again"
            ),
            _ => format!(
                "the node running this agent ({owner}) was lost: it last renewed its lease \
                 {}s before the agent was failed; run the task again",
                now.saturating_sub(last_beat) / 1000
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
        let event = LogEvent {
            seq: 0,
            ts: now,
            kind: "terminal".into(),
            message: "failed".into(),
            data: Some(json!({ "status": "failed", "error": record.error, "run_ms": run_ms })),
        };
        append_event(&mut tx, &record.account, &record.agent_id, None, &event).await?;
        notify(&mut tx, &record.agent_id).await?;
        let usage = MonthUsage {
            run_ms,
            ..MonthUsage::default()
        };
        add_usage(&mut tx, &record.account, last_beat, usage).await?;
        tracing::warn!(agent = %record.agent_id, node = %owner, "failed the agent of a lost node");
    }
    tx.commit().await?;
    Ok(expired.len())
}
