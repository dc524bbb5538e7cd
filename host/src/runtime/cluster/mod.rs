//! Many nodes over one PostgreSQL. Each agent row names the node running it (its owner),
//! the fencing epoch of that claim and until when the node's lease on it holds. A node
//! admits and claims a spawn in one transaction (`limits::SharedLimits`), runs it in its own
//! wasmtime, and writes about the run only under its epoch (`records::Fence`).
//!
//! Every heartbeat a node renews the leases of the agents it owns, and stops its instances
//! whose claim is gone: killed at once when the agent was failed or claimed again (its
//! epoch moved on), stopped with the grace when it was stopped at another node and the
//! notice was missed. Then it takes over, for every node, the agents whose lease ran out
//! (`reaper`): the host was lost, and each is claimed under the next epoch and resumed
//! from its journal by a node with room — or failed `host_lost` when it cannot be. A stop
//! arrives at any node; that node records it and announces it on [`STOPS`], and the owner
//! delivers it to its instance. A node at its admission cap offers a spawn to the nodes
//! with room (`offers`).

mod config;
mod heartbeat;
pub(super) mod offers;
mod reaper;
#[cfg(test)]
mod tests;

use std::{
    path::Path,
    sync::{Arc, Weak},
    time::Duration,
};

use anyhow::Context;
use rand::RngExt;
use sqlx::PgPool;

pub use self::config::ClusterConfig;
use self::config::check_node_id;
use super::lifecycle::Inner;
use crate::{
    clock::now_ms,
    storage::{bigint, forward_notices},
};

/// The `NOTIFY` channel of stops; the payload is the agent's id.
const STOPS: &str = "wasmind_agent_stops";

/// The data dir's file keeping a generated node id across restarts (so a restarted node
/// finds its own orphans).
const NODE_ID_FILE: &str = "node-id";

/// This node among those sharing the database.
pub struct Cluster {
    pub(super) pool: PgPool,
    pub(super) node: String,
    pub(super) lease: Duration,
    heartbeat: Duration,
}

impl Cluster {
    /// Node `node` on `pool` (migrated), keeping its claims as `config` says.
    pub fn new(pool: PgPool, node: String, config: &ClusterConfig) -> Self {
        Self {
            pool,
            node,
            lease: Duration::from_secs(config.lease_secs),
            heartbeat: Duration::from_secs(config.heartbeat_secs),
        }
    }

    /// How long a lease holds, in ms.
    pub(super) fn lease_ms(&self) -> u64 {
        u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX)
    }

    /// Claims this node's own agent `agent_id` again under the next epoch (after this
    /// node's restart, so what the previous process left in flight is refused), with a
    /// new lease; the new epoch, or `None` when the agent is no longer this node's or
    /// alive.
    pub(super) async fn reclaim(
        &self,
        account: &str,
        agent_id: &str,
    ) -> anyhow::Result<Option<u64>> {
        let epoch: Option<i64> = sqlx::query_scalar(
            "UPDATE agents SET epoch = epoch + 1, lease_until = $4
             WHERE account_id = $1 AND agent_id = $2 AND owner = $3
               AND status IN ('spawning', 'running')
             RETURNING epoch",
        )
        .bind(account)
        .bind(agent_id)
        .bind(&self.node)
        .bind(bigint(now_ms() + self.lease_ms()))
        .fetch_optional(&self.pool)
        .await?;
        Ok(epoch.map(u64::try_from).transpose()?)
    }

    /// Tells every node that `agent_id` was stopped (its owner delivers the stop).
    pub(super) async fn announce_stop(&self, agent_id: &str) -> anyhow::Result<()> {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(STOPS)
            .bind(agent_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Starts the heartbeat, the delivery of announced stops to this node's instances (a
    /// stop of an agent not live here is nothing to do; one announced while the listener
    /// is away reaches its instance at the next heartbeat) and the taking of other nodes'
    /// offered spawns. All end when `inner` is gone.
    pub(super) async fn start(self: Arc<Self>, inner: Weak<Inner>) -> anyhow::Result<()> {
        let deliver: fn(&Inner, &str) = |inner, agent_id| inner.signal_stop(agent_id, false);
        forward_notices(&self.pool, STOPS, inner.clone(), deliver).await?;
        let freed = inner.upgrade().map(|i| i.admission.freed());
        let freed = freed.context("the runtime is gone before its cluster started")?;
        offers::serve(self.clone(), inner.clone(), freed).await?;
        tokio::spawn(heartbeat::beat(self, inner));
        Ok(())
    }
}

/// This node's id: the configured one, else the one kept in `data_dir`, else a new one
/// (`node-` and 12 hex digits) kept there from now on.
pub fn node_id(config: &ClusterConfig, data_dir: &Path) -> anyhow::Result<String> {
    if let Some(id) = &config.node_id {
        return Ok(id.clone());
    }
    let path = data_dir.join(NODE_ID_FILE);
    match std::fs::read_to_string(&path) {
        Ok(kept) => {
            let id = kept.trim().to_owned();
            check_node_id(&id).with_context(|| format!("reading {}", path.display()))?;
            Ok(id)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let id = format!("node-{:012x}", rand::rng().random::<u64>() >> 16);
            std::fs::write(&path, format!("{id}\n"))
                .with_context(|| format!("writing {}", path.display()))?;
            Ok(id)
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}
