//! Agent records in PostgreSQL, shared by every node: the record as JSON beside the columns
//! queries select on, log events in their own table numbered under the agent row's lock.
//! Every change is announced on [`CHANNEL`] in its own transaction, so watchers on every
//! node wake when it commits.

use std::sync::Arc;

use async_trait::async_trait;
use sqlx::{PgConnection, PgPool, Postgres, Transaction};

use super::{
    AgentBackend, AgentRecord, Allowance, Applied, Change, ChangeLog, Fence, LogEvent, RecordError,
    Result, apply,
};
use crate::{
    runtime::{changes::Changes, newest},
    storage::{bigint, forward_notices, unsigned},
};

/// The `NOTIFY` channel of agent changes; the payload is the agent's id.
const CHANNEL: &str = "wasmind_agent_changes";

/// Agent records over a PostgreSQL pool whose migrations have run, as one node sees them.
#[derive(Clone)]
pub struct PgAgents {
    pool: PgPool,
    /// This node's id: the owner of the agents it runs.
    node: String,
}

/// Progress and log events: committed without waiting for the WAL flush (see the module
/// docs of `records`).
async fn relaxed(tx: &mut Transaction<'_, Postgres>) -> Result<()> {
    sqlx::query("SET LOCAL synchronous_commit = off")
        .execute(&mut **tx)
        .await?;
    Ok(())
}

impl PgAgents {
    pub fn new(pool: PgPool, node: &str) -> Self {
        Self {
            pool,
            node: node.to_owned(),
        }
    }

    /// Wakes `changes`' watchers on every change any node commits, for as long as
    /// `changes` lives. While the listener is away, a watcher still sees what it missed at
    /// its next wake (it reads the store, not the notice).
    pub async fn forward_changes(pool: &PgPool, changes: &Arc<Changes>) -> Result<()> {
        let deliver: fn(&Changes, &str) = Changes::notify;
        Ok(forward_notices(pool, CHANNEL, Arc::downgrade(changes), deliver).await?)
    }
}

fn record(json: &str) -> Result<AgentRecord> {
    Ok(serde_json::from_str(json)?)
}

#[async_trait]
impl AgentBackend for PgAgents {
    async fn create(&self, record: AgentRecord) -> Result<AgentRecord> {
        let claim = Claim {
            node: &self.node,
            lease_until: None,
            offer: None,
        };
        insert_agent(&mut *self.pool.acquire().await?, record, claim).await
    }

    async fn get(&self, account: &str, agent_id: &str) -> Result<Option<AgentRecord>> {
        let json: Option<String> = sqlx::query_scalar(
            "SELECT record::text FROM agents WHERE account_id = $1 AND agent_id = $2",
        )
        .bind(account)
        .bind(agent_id)
        .fetch_optional(&self.pool)
        .await?;
        json.as_deref().map(record).transpose()
    }

    async fn list(
        &self,
        account: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<AgentRecord>, Option<u64>)> {
        let page = (account, before, limit);
        let seq = |r: &AgentRecord| r.seq;
        Ok(newest::pg_page(&self.pool, "agents", page, seq).await?)
    }

    async fn update(
        &self,
        account: &str,
        agent_id: &str,
        fence: Fence,
        change: Change,
        log: Option<ChangeLog>,
    ) -> Result<Option<AgentRecord>> {
        let mut tx = self.pool.begin().await?;
        let row: Option<(String, i64)> = sqlx::query_as(
            "SELECT record::text, epoch FROM agents
             WHERE account_id = $1 AND agent_id = $2 FOR UPDATE",
        )
        .bind(account)
        .bind(agent_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((json, epoch)) = row else {
            return Ok(None);
        };
        if fence.is_some_and(|mine| bigint(mine) != epoch) {
            return Err(RecordError::Stale(agent_id.to_owned()));
        }
        let mut record = record(&json)?;
        let Applied::Changed { durable, .. } = apply(&mut record, change) else {
            return Ok(Some(record));
        };
        if !durable {
            relaxed(&mut tx).await?;
        }
        write_record(&mut tx, &record).await?;
        if let Some(log) = log {
            // The fence was checked above, under the row's lock.
            append_event(&mut tx, account, agent_id, fence, &log(&record)).await?;
        }
        notify(&mut tx, agent_id).await?;
        tx.commit().await?;
        Ok(Some(record))
    }

    async fn append_log(
        &self,
        account: &str,
        agent_id: &str,
        fence: Fence,
        event: LogEvent,
    ) -> Result<u64> {
        let mut tx = self.pool.begin().await?;
        relaxed(&mut tx).await?;
        if let Some(step) = event.step {
            let last: Option<(i64, Option<i64>)> = sqlx::query_as(
                "SELECT seq, (event->>'step')::bigint FROM agent_logs
                 WHERE account_id = $1 AND agent_id = $2 ORDER BY seq DESC LIMIT 1",
            )
            .bind(account)
            .bind(agent_id)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some((seq, Some(made))) = last
                && made == bigint(step)
            {
                return Ok(unsigned(seq));
            }
        }
        let appended = append_event(&mut tx, account, agent_id, fence, &event).await?;
        let Some(seq) = appended else {
            drop(tx);
            return Err(match self.get(account, agent_id).await? {
                Some(_) => RecordError::Stale(agent_id.to_owned()),
                None => RecordError::no_agent(account, agent_id),
            });
        };
        notify(&mut tx, agent_id).await?;
        tx.commit().await?;
        Ok(seq)
    }

    async fn logs(
        &self,
        account: &str,
        agent_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<(Vec<LogEvent>, bool)> {
        let rows: Vec<String> = sqlx::query_scalar(
            "SELECT event::text FROM agent_logs
             WHERE account_id = $1 AND agent_id = $2 AND seq > $3
             ORDER BY seq LIMIT $4",
        )
        .bind(account)
        .bind(agent_id)
        .bind(bigint(after))
        .bind(bigint(limit.saturating_add(1)))
        .fetch_all(&self.pool)
        .await?;
        let more = rows.len() > limit;
        let events = rows
            .iter()
            .take(limit)
            .map(|json| Ok(serde_json::from_str(json)?))
            .collect::<Result<Vec<_>>>()?;
        Ok((events, more))
    }

    async fn alive(&self) -> Result<Vec<(String, String)>> {
        Ok(sqlx::query_as(
            "SELECT account_id, agent_id FROM agents
             WHERE owner = $1 AND status IN ('spawning', 'running')",
        )
        .bind(&self.node)
        .fetch_all(&self.pool)
        .await?)
    }
}

/// Which node holds a new agent's row, and until when its first lease holds (epoch ms;
/// none: the claim does not lapse, and only the node's own restart fails the agent).
#[derive(Debug, Clone, Copy)]
pub struct Claim<'a> {
    pub node: &'a str,
    pub lease_until: Option<u64>,
    /// `None`: the node runs the agent, under [`FIRST_EPOCH`]. Given: the node is at its
    /// admission cap and offers the agent to every node (epoch [`OFFERED`]) with what its
    /// run is allowed, until one claims it (`cluster::offers`) or the offer is withdrawn.
    pub offer: Option<Allowance>,
}

/// The fencing epoch of an agent's first claim.
pub const FIRST_EPOCH: u64 = 1;

/// The epoch of an agent offered to every node and not claimed yet.
pub const OFFERED: u64 = 0;

/// Stores a new record on `conn` (in the caller's transaction, if it has one), assigning
/// its list position, held by `claim`'s node.
pub async fn insert_agent(
    conn: &mut PgConnection,
    mut record: AgentRecord,
    claim: Claim<'_>,
) -> Result<AgentRecord> {
    let offer = claim.offer;
    let seq: i64 = sqlx::query_scalar(
        "WITH s AS (SELECT nextval('agent_seq') AS seq)
         INSERT INTO agents (account_id, agent_id, seq, key_id, created_at, status, record,
                             owner, epoch, lease_until, memory_quota, cpu_budget_ms,
                             token_budget, versions_per_key)
         SELECT $1, $2, s.seq, $3, $4, $5, jsonb_set($6::jsonb, '{seq}', to_jsonb(s.seq)),
                $7, $8, $9, $10, $11, $12, $13
         FROM s RETURNING seq",
    )
    .bind(&record.account)
    .bind(&record.agent_id)
    .bind(&record.key_id)
    .bind(bigint(record.created_at))
    .bind(record.status.as_str())
    .bind(serde_json::to_string(&record)?)
    .bind(claim.node)
    .bind(bigint(offer.map_or(FIRST_EPOCH, |_| OFFERED)))
    .bind(claim.lease_until.map(bigint))
    .bind(offer.map(|o| bigint(o.memory_quota.memories)))
    .bind(offer.map(|o| bigint(o.cpu_budget_ms())))
    .bind(offer.map(|o| bigint(o.token_budget)))
    .bind(offer.map(|o| bigint(o.memory_quota.versions_per_key)))
    .fetch_one(conn)
    .await?;
    record.seq = unsigned(seq);
    Ok(record)
}

/// Writes `record` (its status and JSON) over its row, on `conn` (which holds its lock).
pub async fn write_record(conn: &mut PgConnection, record: &AgentRecord) -> Result<()> {
    sqlx::query(
        "UPDATE agents SET status = $3, record = $4::jsonb
         WHERE account_id = $1 AND agent_id = $2",
    )
    .bind(&record.account)
    .bind(&record.agent_id)
    .bind(record.status.as_str())
    .bind(serde_json::to_string(record)?)
    .execute(conn)
    .await?;
    Ok(())
}

/// Appends `event` to the agent's log under the next sequence number, which it returns —
/// `None` when the account has no such agent or `fence` is not its epoch.
pub async fn append_event(
    conn: &mut PgConnection,
    account: &str,
    agent_id: &str,
    fence: Fence,
    event: &LogEvent,
) -> Result<Option<u64>> {
    let seq: Option<i64> = sqlx::query_scalar(
        "WITH a AS (
            UPDATE agents SET log_seq = log_seq + 1
            WHERE account_id = $1 AND agent_id = $2 AND ($4::bigint IS NULL OR epoch = $4)
            RETURNING log_seq
         )
         INSERT INTO agent_logs (account_id, agent_id, seq, event)
         SELECT $1, $2, a.log_seq, jsonb_set($3::jsonb, '{seq}', to_jsonb(a.log_seq)) FROM a
         RETURNING seq",
    )
    .bind(account)
    .bind(agent_id)
    .bind(serde_json::to_string(event)?)
    .bind(fence.map(bigint))
    .fetch_optional(conn)
    .await?;
    Ok(seq.map(unsigned))
}

/// Announces a change of `agent_id` to every node, when the transaction on `conn`
/// commits.
pub async fn notify(conn: &mut PgConnection, agent_id: &str) -> Result<()> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(agent_id)
        .execute(conn)
        .await?;
    Ok(())
}
