//! The heartbeat: renew this node's leases, stop the instances whose claim is gone, take
//! over the agents of lost hosts (resumed here, or failed), sweep the journals of agents
//! that ended while no node ran them. A node that cannot renew for a whole lease kills its
//! instances itself: by then another node may have taken them over, and an agent never
//! runs twice at once.

use std::{
    collections::HashMap,
    sync::{Arc, Weak},
    time::Instant,
};

use super::{Cluster, reaper};
use crate::{
    clock::now_ms,
    runtime::{
        journal::{Cause, PgJournal},
        lifecycle::Inner,
        records::AgentRecord,
        state::AgentCtx,
    },
    storage::bigint,
};

/// Beats every `cluster.heartbeat` until `inner` is gone.
pub(super) async fn beat(cluster: Arc<Cluster>, inner: Weak<Inner>) {
    let mut ticks = tokio::time::interval(cluster.heartbeat);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut renewed = Instant::now();
    loop {
        ticks.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        match once(&cluster, &inner).await {
            Ok(()) => renewed = Instant::now(),
            Err(e) => {
                tracing::warn!(node = %cluster.node, error = %format!("{e:#}"), "heartbeat failed");
                if renewed.elapsed() >= cluster.lease {
                    for ctx in inner.admission.agents() {
                        tracing::warn!(agent = %ctx.agent_id, "lease not renewed for a whole lease: stopping the instance");
                        inner.signal_stop(&ctx.agent_id, true);
                    }
                }
            }
        }
    }
}

/// One heartbeat. Offers this node holds are not renewed: one it failed to withdraw
/// lapses, and is failed, like the agents of a lost node.
async fn once(cluster: &Cluster, inner: &Arc<Inner>) -> anyhow::Result<()> {
    let lease_until = now_ms() + cluster.lease_ms();
    let held: HashMap<String, i64> = sqlx::query_as(
        "UPDATE agents SET lease_until = $2
         WHERE owner = $1 AND status IN ('spawning', 'running') AND epoch <> 0
         RETURNING agent_id, epoch",
    )
    .bind(&cluster.node)
    .bind(bigint(lease_until))
    .fetch_all(&cluster.pool)
    .await?
    .into_iter()
    .collect();
    for ctx in inner.admission.agents() {
        let epoch = ctx.fence.map(bigint);
        if epoch.is_some() && held.get(&ctx.agent_id) == epoch.as_ref() {
            continue;
        }
        check_claim(cluster, inner, &ctx, epoch).await?;
    }
    let room = |r: &AgentRecord| inner.admission.reserve(&r.account, u32::MAX).ok();
    let reaped = reaper::reap(
        &cluster.pool,
        &cluster.node,
        cluster.lease_ms(),
        now_ms(),
        room,
    );
    for taken in reaped.await?.taken {
        // Off the heartbeat: loading a component may take a while.
        let inner = inner.clone();
        tokio::spawn(async move {
            let (record, fence) = (&taken.record, Some(taken.epoch));
            let cause = Cause {
                code: reaper::HOST_LOST,
                what: format!("its node {} was lost", taken.owner),
            };
            let (account, id) = (&record.account, &record.agent_id);
            let resumed = inner.resume_or_fail(account, id, fence, Some(taken.slot), &cause);
            if let Err(e) = resumed.await {
                tracing::error!(agent = %id, error = %format!("{e:#}"), "resuming an agent failed");
            }
        });
    }
    PgJournal::sweep(&cluster.pool).await?;
    Ok(())
}

/// An instance whose lease was not renewed: its row says why (or that it was admitted
/// after the renewal read, and all is well).
async fn check_claim(
    cluster: &Cluster,
    inner: &Inner,
    ctx: &AgentCtx,
    epoch: Option<i64>,
) -> anyhow::Result<()> {
    let row: Option<(String, i64)> =
        sqlx::query_as("SELECT status, epoch FROM agents WHERE account_id = $1 AND agent_id = $2")
            .bind(&ctx.account)
            .bind(&ctx.agent_id)
            .fetch_optional(&cluster.pool)
            .await?;
    match row {
        Some((_, now)) if Some(now) != epoch => {
            tracing::warn!(agent = %ctx.agent_id, "this node's claim is stale: killing the instance");
            inner.signal_stop(&ctx.agent_id, true);
        }
        None => inner.signal_stop(&ctx.agent_id, true),
        Some((status, _)) if !matches!(status.as_str(), "spawning" | "running") => {
            // Stopped at another node, and its notice missed: the grace holds.
            inner.signal_stop(&ctx.agent_id, false);
        }
        Some(_) => {}
    }
    Ok(())
}
