//! Spawns handed from a full node to one with room. A node at its admission cap stores an
//! admitted spawn as an offer — epoch [`OFFERED`], the row carrying what the run is
//! allowed — and announces it on [`OFFERS`]. Every node with a free place then takes the
//! oldest offers it can (`FOR UPDATE SKIP LOCKED`, so no two nodes take one), claims each
//! as its own (epoch 1, a lease) and launches it. The offering node waits up to [`WAIT`]
//! for the claim, woken by the claim's change notice; a node whose place frees during
//! that wait looks again. An offer no node took by then is withdrawn, and the spawn
//! refused as at capacity — as on one machine, with no row left behind and nothing
//! counted against the key's rate windows.

use std::{
    sync::{Arc, Weak},
    time::{Duration, Instant},
};

use sqlx::{PgConnection, PgPool};
use tokio::sync::Notify;

use super::Cluster;
use crate::{
    clock::now_ms,
    runtime::{
        lifecycle::Inner,
        records::{AgentRecord, AgentStore, Allowance, FIRST_EPOCH, OFFERED, notify},
    },
    storage::{bigint, forward_notices},
};

/// The `NOTIFY` channel of new offers (no payload: any node with room takes the oldest).
const OFFERS: &str = "wasmind_spawn_offers";

/// How long an offer waits for a node with room: past a notice's round trip and a claim,
/// short enough for the spawn's caller to wait on.
const WAIT: Duration = Duration::from_secs(2);

/// Tells every node, when `conn`'s transaction commits, that a spawn is offered.
pub(in crate::runtime) async fn announce(conn: &mut PgConnection) -> sqlx::Result<()> {
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(OFFERS)
        .execute(conn)
        .await?;
    Ok(())
}

/// Waits for a node to claim the offered `record` (stored and announced); true when one
/// did (or the agent was stopped meanwhile), false when no node did and the offer is
/// withdrawn.
pub(in crate::runtime) async fn await_claim(
    pool: &PgPool,
    records: &AgentStore,
    record: &AgentRecord,
) -> sqlx::Result<bool> {
    let mut watch = records.watch(&record.agent_id);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let offered: Option<bool> = sqlx::query_scalar(
            "SELECT epoch = $3 AND status = 'spawning' FROM agents
             WHERE account_id = $1 AND agent_id = $2",
        )
        .bind(&record.account)
        .bind(&record.agent_id)
        .bind(bigint(OFFERED))
        .fetch_optional(pool)
        .await?;
        if offered != Some(true) {
            return Ok(true);
        }
        if tokio::time::timeout_at(deadline, watch.changed())
            .await
            .is_err()
        {
            break;
        }
    }
    let withdrawn = sqlx::query(
        "DELETE FROM agents
         WHERE account_id = $1 AND agent_id = $2 AND epoch = $3 AND status = 'spawning'",
    )
    .bind(&record.account)
    .bind(&record.agent_id)
    .bind(bigint(OFFERED))
    .execute(pool)
    .await?
    .rows_affected();
    Ok(withdrawn == 0)
}

/// Takes offers whenever one is announced, and when a place frees here while one
/// announced may still be waiting, for as long as `inner` lives.
pub(super) async fn serve(
    cluster: Arc<Cluster>,
    inner: Weak<Inner>,
    freed: Arc<Notify>,
) -> anyhow::Result<()> {
    let wake = Arc::new(Notify::new());
    let deliver: fn(&Notify, &str) = |wake, _| wake.notify_one();
    forward_notices(&cluster.pool, OFFERS, Arc::downgrade(&wake), deliver).await?;
    tokio::spawn(async move {
        let mut announced: Option<Instant> = None;
        loop {
            tokio::select! {
                () = wake.notified() => announced = Some(Instant::now()),
                () = freed.notified() => {
                    // An offer lives at most WAIT: past that there is none to look for.
                    if announced.is_none_or(|at| at.elapsed() >= WAIT) {
                        continue;
                    }
                }
            }
            let Some(inner) = inner.upgrade() else {
                return;
            };
            if let Err(e) = take_while_room(&cluster, &inner).await {
                tracing::warn!(error = %format!("{e:#}"), "taking offered spawns failed");
            }
        }
    });
    Ok(())
}

/// Claims and launches offers while this node has room for them.
async fn take_while_room(cluster: &Cluster, inner: &Arc<Inner>) -> anyhow::Result<()> {
    while let Some(room) = inner.admission.room() {
        let Some((record, allowance)) = take(cluster).await? else {
            return Ok(());
        };
        let slot = room.into_slot(&record.account);
        inner.launch_claimed(slot, record, allowance).await;
    }
    Ok(())
}

/// A claimed offer's row: its record, memory quota, versions per key, CPU budget (ms) and
/// token budget.
type OfferRow = (String, i64, Option<i64>, i64, Option<i64>);

/// Claims the oldest offer no other node is taking, as this node's, and wakes the node
/// waiting on it.
pub(super) async fn take(cluster: &Cluster) -> anyhow::Result<Option<(AgentRecord, Allowance)>> {
    let mut tx = cluster.pool.begin().await?;
    let lease_until = now_ms() + cluster.lease_ms();
    // `epoch = 0` is OFFERED, written out so the partial index of offers serves it.
    let row: Option<OfferRow> = sqlx::query_as(
        "UPDATE agents SET owner = $1, epoch = $2, lease_until = $3
         WHERE (account_id, agent_id) = (
             SELECT account_id, agent_id FROM agents
             WHERE epoch = 0 AND status = 'spawning'
             ORDER BY created_at LIMIT 1
             FOR UPDATE SKIP LOCKED)
         RETURNING record::text, memory_quota, versions_per_key, cpu_budget_ms, token_budget",
    )
    .bind(&cluster.node)
    .bind(bigint(FIRST_EPOCH))
    .bind(bigint(lease_until))
    .fetch_optional(&mut *tx)
    .await?;
    let Some((json, memory_quota, versions, cpu_budget_ms, token_budget)) = row else {
        return Ok(None);
    };
    let record: AgentRecord = serde_json::from_str(&json)?;
    notify(&mut tx, &record.agent_id).await?;
    tx.commit().await?;
    let allowance = Allowance::from_row(
        u64::try_from(memory_quota)?,
        versions.map(u32::try_from).transpose()?,
        u64::try_from(cpu_budget_ms)?,
        token_budget.map(u64::try_from).transpose()?,
    );
    Ok(Some((record, allowance)))
}
