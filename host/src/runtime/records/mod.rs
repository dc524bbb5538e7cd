//! Agent records and their log events, behind [`AgentBackend`]: embedded (redb, in the data
//! dir) or PostgreSQL (shared by every node).
//!
//! Status transitions are durable before they are reported. Progress entries and log
//! events are not made durable on their own (redb's `Durability::None`, PostgreSQL's
//! `synchronous_commit = off`): the next durable commit makes them durable too. That keeps
//! a chatty agent from costing an fsync per line while a crash loses at most the last few
//! events of agents that were still running.
//!
//! Every change wakes the agent's watchers ([`AgentStore::watch`]); on PostgreSQL also the
//! watchers on other nodes, through `NOTIFY`.

mod embedded;
mod postgres;
#[cfg(test)]
pub(super) mod tests;
mod types;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

pub use self::embedded::EmbeddedAgents;
pub use self::postgres::{
    Claim, FIRST_EPOCH, OFFERED, PgAgents, append_event, insert_agent, notify, write_record,
};
pub use self::types::{
    AgentComponent, AgentRecord, Allowance, Failure, LogEvent, MAX_PROGRESS, MemoryMode, Progress,
    Status, Usage,
};
use super::changes::{Changes, Watch};
use crate::{clock::now_ms, storage::StoreError};

/// Why an operation on agent records failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The store failed.
    #[error("agent storage: {0}")]
    Storage(#[from] StoreError),
    /// A log event for an agent the account does not have.
    #[error("account {account:?} has no agent {agent_id:?}")]
    NoAgent { account: String, agent_id: String },
    /// A write of the agent's run by a node whose claim on it is no longer the agent's
    /// (its lease ran out and the agent was failed, or it was claimed again): refused, and
    /// the node's instance must stop.
    #[error("this node's claim on agent {0} is stale: the write was refused")]
    Stale(String),
}

crate::storage::storage_errors_into!(RecordError);

impl RecordError {
    /// A log event for an agent the account does not have.
    fn no_agent(account: &str, agent_id: &str) -> Self {
        RecordError::NoAgent {
            account: account.to_owned(),
            agent_id: agent_id.to_owned(),
        }
    }
}

type Result<T> = std::result::Result<T, RecordError>;

/// A change to a record: edits it and says whether it changed anything.
pub type Change = Box<dyn FnOnce(&mut AgentRecord) -> bool + Send>;

/// The log event a change is written with, made from the record after it (see
/// [`AgentStore::update_logged`]).
pub type ChangeLog = Box<dyn FnOnce(&AgentRecord) -> LogEvent + Send>;

/// Whose write it is. A node running an agent writes about its run under the fencing
/// epoch of its claim, and a write under a superseded epoch is refused
/// ([`RecordError::Stale`]); anyone else's (a stop, a title) is not fenced. The embedded
/// backend has one process and no epochs: it takes every write.
pub type Fence = Option<u64>;

/// Where agent records and log events are kept. Every operation names the account, and
/// an agent of another account is not found.
#[async_trait]
pub trait AgentBackend: Send + Sync {
    /// Stores a new record (durably), assigning its list position (`seq`); on PostgreSQL
    /// it is this node's, with a claim that does not lapse (spawns are claimed with a lease
    /// by `limits::SharedLimits` instead).
    async fn create(&self, record: AgentRecord) -> Result<AgentRecord>;

    /// The record of `agent_id` if it belongs to `account`.
    async fn get(&self, account: &str, agent_id: &str) -> Result<Option<AgentRecord>>;

    /// Up to `limit` of the account's agents newest first, below list position `before`;
    /// also the position to continue from when more remain.
    async fn list(
        &self,
        account: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<AgentRecord>, Option<u64>)>;

    /// Applies `change` to the record in one transaction (see [`apply`]) if `fence`
    /// admits the write, appending `log`'s event in the same transaction when it changed
    /// something; the record after it, or as it was when unchanged; `None` when there is
    /// no such agent.
    async fn update(
        &self,
        account: &str,
        agent_id: &str,
        fence: Fence,
        change: Change,
        log: Option<ChangeLog>,
    ) -> Result<Option<AgentRecord>>;

    /// Appends `event` to the agent's log with the next sequence number (1, 2, …), which
    /// it returns, if `fence` admits the write; an error when the account has no such
    /// agent.
    async fn append_log(
        &self,
        account: &str,
        agent_id: &str,
        fence: Fence,
        event: LogEvent,
    ) -> Result<u64>;
    // (An event with a `step` equal to the last stored event's is not appended: see
    // `AgentStore::append_log_event`.)

    /// Log events after `after`, at most `limit`, and whether more remain (none for an
    /// agent the account does not have).
    async fn logs(
        &self,
        account: &str,
        agent_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<(Vec<LogEvent>, bool)>;

    /// `(account, agent_id)` of every agent not yet terminal that this process (this
    /// node, on PostgreSQL) runs or ran: after a restart, its orphans.
    async fn alive(&self) -> Result<Vec<(String, String)>>;
}

/// What [`apply`] did, so a backend stores it accordingly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Nothing to store.
    Unchanged,
    /// Store the record; `durable` when its status changed (the write must be synced),
    /// `ended` when it turned terminal (it is no longer alive).
    Changed { durable: bool, ended: bool },
}

/// Applies `change` as every backend does: stamps `updated_at` and keeps the newest
/// [`MAX_PROGRESS`] progress entries when it changed something.
pub fn apply(record: &mut AgentRecord, change: Change) -> Applied {
    let before = record.status;
    if !change(record) {
        return Applied::Unchanged;
    }
    record.updated_at = now_ms();
    if record.progress.len() > MAX_PROGRESS {
        record
            .progress
            .drain(..record.progress.len() - MAX_PROGRESS);
    }
    let durable = record.status != before;
    Applied::Changed {
        durable,
        ended: durable && record.status.is_terminal(),
    }
}

/// Agent records over a backend, with the watchers of this process.
#[derive(Clone)]
pub struct AgentStore {
    backend: Arc<dyn AgentBackend>,
    /// Woken after every committed change of a watched agent.
    changes: Arc<Changes>,
}

impl AgentStore {
    /// Records in the data dir's database, creating their tables on first use.
    pub fn embedded(db: Arc<redb::Database>) -> Result<Self> {
        Ok(Self {
            backend: Arc::new(EmbeddedAgents::new(db)?),
            changes: Arc::default(),
        })
    }

    /// Records in PostgreSQL (migrations applied), as node `node` sees them; changes
    /// other nodes make wake this process's watchers too.
    pub async fn postgres(pool: sqlx::PgPool, node: &str) -> Result<Self> {
        let changes = Arc::<Changes>::default();
        PgAgents::forward_changes(&pool, &changes).await?;
        Ok(Self {
            backend: Arc::new(PgAgents::new(pool, node)),
            changes,
        })
    }

    /// Watches `agent_id`: every change committed after this call (progress, log events,
    /// status) wakes the watch.
    pub fn watch(&self, agent_id: &str) -> Watch {
        self.changes.watch(agent_id)
    }

    /// Stores a new record (durably), assigning its list position.
    pub async fn create(&self, record: AgentRecord) -> Result<AgentRecord> {
        self.backend.create(record).await
    }

    /// The record of `agent_id` if it belongs to `account`.
    pub async fn get(&self, account: &str, agent_id: &str) -> Result<Option<AgentRecord>> {
        self.backend.get(account, agent_id).await
    }

    /// Up to `limit` of the account's agents newest first, below list position `before`;
    /// also the position to continue from when more remain.
    pub async fn list(
        &self,
        account: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<AgentRecord>, Option<u64>)> {
        self.backend.list(account, before, limit).await
    }

    /// Applies `change` to a record unless it returns false, if `fence` admits the write;
    /// durable when the status changed. Returns the record after the change (or as it
    /// was, if unchanged).
    pub async fn update(
        &self,
        account: &str,
        agent_id: &str,
        fence: Fence,
        change: impl FnOnce(&mut AgentRecord) -> bool + Send + 'static,
    ) -> Result<Option<AgentRecord>> {
        self.change(account, agent_id, fence, Box::new(change), None)
            .await
    }

    /// [`update`](Self::update), appending the log event `log` makes of the changed
    /// record in the same transaction: a client that reads the record after the change
    /// finds the event in its log (a run's end: its status and its `terminal` event).
    pub async fn update_logged(
        &self,
        account: &str,
        agent_id: &str,
        fence: Fence,
        change: impl FnOnce(&mut AgentRecord) -> bool + Send + 'static,
        log: impl FnOnce(&AgentRecord) -> LogEvent + Send + 'static,
    ) -> Result<Option<AgentRecord>> {
        let log: ChangeLog = Box::new(log);
        self.change(account, agent_id, fence, Box::new(change), Some(log))
            .await
    }

    /// The backend's update, then the watchers woken.
    async fn change(
        &self,
        account: &str,
        agent_id: &str,
        fence: Fence,
        change: Change,
        log: Option<ChangeLog>,
    ) -> Result<Option<AgentRecord>> {
        let updated = (self.backend)
            .update(account, agent_id, fence, change, log)
            .await?;
        self.changes.notify(agent_id);
        Ok(updated)
    }

    /// Appends a log event if `fence` admits the write; returns its sequence number (1,
    /// 2, …).
    pub async fn append_log(
        &self,
        account: &str,
        agent_id: &str,
        fence: Fence,
        kind: &str,
        message: String,
        data: Option<Value>,
    ) -> Result<u64> {
        let event = LogEvent::new(kind, message, data);
        self.append_log_event(account, agent_id, fence, event).await
    }

    /// Appends `event` as [`AgentStore::append_log`] does; one that names its journal
    /// `step` is not appended again when the agent's last event is that step's (a resumed
    /// run made the call again: its event outlived a crash that its journal entry did
    /// not), and the stored one's sequence number is returned.
    pub async fn append_log_event(
        &self,
        account: &str,
        agent_id: &str,
        fence: Fence,
        event: LogEvent,
    ) -> Result<u64> {
        let seq = (self.backend)
            .append_log(account, agent_id, fence, event)
            .await?;
        self.changes.notify(agent_id);
        Ok(seq)
    }

    /// Log events after `after`, at most `limit`, and whether more remain.
    pub async fn logs(
        &self,
        account: &str,
        agent_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<(Vec<LogEvent>, bool)> {
        self.backend.logs(account, agent_id, after, limit).await
    }

    /// `(account, agent_id)` of every agent not yet terminal that this process (this node)
    /// runs or ran: after a restart, its orphans.
    pub async fn alive(&self) -> Result<Vec<(String, String)>> {
        self.backend.alive().await
    }
}
