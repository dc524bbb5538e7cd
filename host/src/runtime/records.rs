//! Agent records and their log events, durable in redb.
//!
//! Status transitions commit with full durability before they are reported. Progress
//! entries and log events commit without an fsync of their own (redb's `Durability::None`);
//! the next durable commit — any status change, any memory write — makes them durable too.
//! That keeps a chatty agent from costing an fsync per line while a crash loses at most the
//! last few events of agents that were still running.

use std::sync::Arc;

use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    changes::{Changes, Watch},
    newest,
};
use crate::{accounts::MonthUsage, clock::now_ms};

/// agent_id → record (JSON).
const AGENTS: TableDefinition<&str, &[u8]> = TableDefinition::new("agents");
/// (account, seq) → agent_id: an account's agents in spawn order.
const BY_ACCOUNT: TableDefinition<(&str, u64), &str> = TableDefinition::new("agents_by_account");
/// agent_id of every agent not yet terminal (restart recovery reads only these).
const ALIVE: TableDefinition<&str, ()> = TableDefinition::new("agents_alive");
/// (agent_id, seq) → log event (JSON).
const LOGS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("agent_logs");
/// Counters.
const META: TableDefinition<&str, u64> = TableDefinition::new("agent_meta");

/// Most progress entries kept on a record (oldest dropped first).
pub const MAX_PROGRESS: usize = 500;

/// Lifecycle of an agent (§3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Spawning,
    Running,
    Completed,
    Stopped,
    Failed,
}

impl Status {
    /// No further transitions happen from a terminal status.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Stopped | Status::Failed)
    }

    /// Spelling in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Spawning => "spawning",
            Status::Running => "running",
            Status::Completed => "completed",
            Status::Stopped => "stopped",
            Status::Failed => "failed",
        }
    }
}

/// What an agent may do with its account's memory (§4.4 memory writing modes, plus `off`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryMode {
    /// The tools, and automatic extraction after a completed run (the default).
    #[default]
    Auto,
    /// The tools only: nothing is extracted.
    Explicit,
    /// The tools, extraction, and the agent is told to write what matters as it works.
    Both,
    /// No memory: every tool call fails with "memory channel is not configured".
    Off,
}

impl MemoryMode {
    /// Every mode, in the order the API documents them.
    pub const ALL: [MemoryMode; 4] = [Self::Auto, Self::Explicit, Self::Both, Self::Off];

    /// Spelling in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Explicit => "explicit",
            Self::Both => "both",
            Self::Off => "off",
        }
    }

    /// The mode spelled `s`, if any.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// Whether a completed run's memories are extracted.
    pub fn extracts(self) -> bool {
        matches!(self, Self::Auto | Self::Both)
    }

    /// Whether the memory tools reach the memory service.
    pub fn has_memory(self) -> bool {
        self != Self::Off
    }
}

/// A progress entry (§2.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub ts: u64,
    pub kind: String,
    pub message: String,
}

/// Why an agent failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub code: String,
    pub message: String,
}

/// Tokens an agent's Mind calls spent, and the CPU time it used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// CPU time the guest used, in milliseconds (records made before it was metered
    /// read 0).
    #[serde(default)]
    pub cpu_ms: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cpu_ms += other.cpu_ms;
    }
}

impl From<crate::mind::Usage> for Usage {
    fn from(u: crate::mind::Usage) -> Self {
        Usage {
            input_tokens: u64::from(u.input_tokens),
            output_tokens: u64::from(u.output_tokens),
            cpu_ms: 0,
        }
    }
}

impl Usage {
    /// These tokens and CPU time and `run_ms` of run time, as the account's monthly usage
    /// counts them.
    pub fn month(self, run_ms: u64) -> MonthUsage {
        MonthUsage {
            run_ms,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cpu_ms: self.cpu_ms,
        }
    }
}

/// Which uploaded component an agent runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentComponent {
    pub component_id: String,
    pub name: String,
    pub version: String,
}

/// One agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRecord {
    pub agent_id: String,
    pub account: String,
    pub key_id: String,
    pub name: String,
    pub status: Status,
    pub task: String,
    pub created_at: u64,
    pub updated_at: u64,
    pub final_result: Option<String>,
    pub progress: Vec<Progress>,
    pub error: Option<Failure>,
    pub model: String,
    pub started_at: Option<u64>,
    pub ended_at: Option<u64>,
    pub usage: Usage,
    /// Records written before memory modes existed read as `auto`.
    #[serde(default)]
    pub memory_mode: MemoryMode,
    /// The uploaded component it runs; `None` for the default agent (and for records
    /// written before components existed).
    #[serde(default)]
    pub agent: Option<AgentComponent>,
    /// Position in the account's list (newest has the highest).
    pub seq: u64,
}

/// One event of an agent's log stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEvent {
    pub seq: u64,
    pub ts: u64,
    /// `thinking`, `tool_use`, `tool_result` or `terminal`.
    pub kind: String,
    pub message: String,
    pub data: Option<Value>,
}

/// Storage failures of agent records.
#[derive(Debug, thiserror::Error)]
#[error("agent storage: {0}")]
pub struct RecordError(String);

macro_rules! record_error_from {
    ($($t:ty),*) => {$(
        impl From<$t> for RecordError {
            fn from(e: $t) -> Self {
                RecordError(e.to_string())
            }
        }
    )*};
}
record_error_from!(
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::SetDurabilityError,
    serde_json::Error
);

type Result<T> = std::result::Result<T, RecordError>;

/// Agent records over the shared database. Blocking: call from blocking contexts.
#[derive(Clone)]
pub struct AgentStore {
    db: Arc<Database>,
    /// Woken after every committed change of a watched agent.
    changes: Arc<Changes>,
}

impl AgentStore {
    /// Opens the tables, creating them on first use.
    pub fn new(db: Arc<Database>) -> Result<Self> {
        let txn = db.begin_write()?;
        txn.open_table(AGENTS)?;
        txn.open_table(BY_ACCOUNT)?;
        txn.open_table(ALIVE)?;
        txn.open_table(LOGS)?;
        txn.open_table(META)?;
        txn.commit()?;
        Ok(Self {
            db,
            changes: Arc::default(),
        })
    }

    /// Watches `agent_id`: every change committed after this call (progress, log events,
    /// status) wakes the watch.
    pub fn watch(&self, agent_id: &str) -> Watch {
        self.changes.watch(agent_id)
    }

    /// Stores a new record (durably), assigning its list position.
    pub fn create(&self, mut record: AgentRecord) -> Result<AgentRecord> {
        let txn = self.db.begin_write()?;
        {
            let mut meta = txn.open_table(META)?;
            record.seq = meta.get("next_seq")?.map_or(1, |v| v.value());
            meta.insert("next_seq", record.seq + 1)?;
            txn.open_table(AGENTS)?.insert(
                record.agent_id.as_str(),
                serde_json::to_vec(&record)?.as_slice(),
            )?;
            txn.open_table(BY_ACCOUNT)?.insert(
                (record.account.as_str(), record.seq),
                record.agent_id.as_str(),
            )?;
            if !record.status.is_terminal() {
                txn.open_table(ALIVE)?
                    .insert(record.agent_id.as_str(), ())?;
            }
        }
        txn.commit()?;
        Ok(record)
    }

    /// The record of `agent_id` if it belongs to `account`.
    pub fn get(&self, account: &str, agent_id: &str) -> Result<Option<AgentRecord>> {
        let txn = self.db.begin_read()?;
        let agents = txn.open_table(AGENTS)?;
        let Some(bytes) = agents.get(agent_id)? else {
            return Ok(None);
        };
        let record: AgentRecord = serde_json::from_slice(bytes.value())?;
        Ok((record.account == account).then_some(record))
    }

    /// Up to `limit` of the account's agents newest first, below list position `before`;
    /// also the position to continue from when more remain.
    pub fn list(
        &self,
        account: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<AgentRecord>, Option<u64>)> {
        let txn = self.db.begin_read()?;
        let page = (account, before, limit);
        newest::page(&txn, AGENTS, BY_ACCOUNT, page, |r: &AgentRecord| r.seq)
    }

    /// Applies `change` to a record unless it returns false; durable when the status
    /// changed. Returns the record after the change (or as it was, if unchanged).
    pub fn update(
        &self,
        agent_id: &str,
        change: impl FnOnce(&mut AgentRecord) -> bool,
    ) -> Result<Option<AgentRecord>> {
        let mut txn = self.db.begin_write()?;
        let record = {
            let mut agents = txn.open_table(AGENTS)?;
            let Some(mut record) = agents
                .get(agent_id)?
                .map(|b| serde_json::from_slice::<AgentRecord>(b.value()))
                .transpose()?
            else {
                return Ok(None);
            };
            let before = record.status;
            if !change(&mut record) {
                return Ok(Some(record));
            }
            record.updated_at = now_ms();
            record.progress = trim_progress(std::mem::take(&mut record.progress));
            agents.insert(agent_id, serde_json::to_vec(&record)?.as_slice())?;
            drop(agents);
            if record.status != before && record.status.is_terminal() {
                txn.open_table(ALIVE)?.remove(agent_id)?;
            }
            if record.status == before {
                txn.set_durability(Durability::None)?;
            }
            record
        };
        txn.commit()?;
        self.changes.notify(agent_id);
        Ok(Some(record))
    }

    /// Appends a log event; returns its sequence number (1, 2, …).
    pub fn append_log(
        &self,
        agent_id: &str,
        kind: &str,
        message: String,
        data: Option<Value>,
    ) -> Result<u64> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(Durability::None)?;
        let seq = {
            let mut logs = txn.open_table(LOGS)?;
            let seq = logs
                .range((agent_id, 0)..=(agent_id, u64::MAX))?
                .next_back()
                .transpose()?
                .map_or(1, |(k, _)| k.value().1 + 1);
            let event = LogEvent {
                seq,
                ts: now_ms(),
                kind: kind.to_string(),
                message,
                data,
            };
            logs.insert((agent_id, seq), serde_json::to_vec(&event)?.as_slice())?;
            seq
        };
        txn.commit()?;
        self.changes.notify(agent_id);
        Ok(seq)
    }

    /// Log events after `after`, at most `limit`, and whether more remain.
    pub fn logs(&self, agent_id: &str, after: u64, limit: usize) -> Result<(Vec<LogEvent>, bool)> {
        let txn = self.db.begin_read()?;
        let logs = txn.open_table(LOGS)?;
        let mut out = Vec::new();
        for entry in logs.range((agent_id, after.saturating_add(1))..=(agent_id, u64::MAX))? {
            if out.len() == limit {
                return Ok((out, true));
            }
            let (_, bytes) = entry?;
            out.push(serde_json::from_slice(bytes.value())?);
        }
        Ok((out, false))
    }

    /// Ids of agents that were not terminal (after a restart: orphans).
    pub fn alive(&self) -> Result<Vec<String>> {
        let txn = self.db.begin_read()?;
        let alive = txn.open_table(ALIVE)?;
        alive
            .iter()?
            .map(|e| e.map(|(k, _)| k.value().to_string()).map_err(Into::into))
            .collect()
    }
}

fn trim_progress(mut progress: Vec<Progress>) -> Vec<Progress> {
    if progress.len() > MAX_PROGRESS {
        progress.drain(..progress.len() - MAX_PROGRESS);
    }
    progress
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, AgentStore) {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Database::create(dir.path().join("db")).unwrap());
        (dir, AgentStore::new(db).unwrap())
    }

    fn record(id: &str, account: &str) -> AgentRecord {
        AgentRecord {
            agent_id: id.into(),
            account: account.into(),
            key_id: "key_1".into(),
            name: "n".into(),
            status: Status::Spawning,
            task: "t".into(),
            created_at: 1,
            updated_at: 1,
            final_result: None,
            progress: vec![],
            error: None,
            model: "m".into(),
            started_at: None,
            ended_at: None,
            usage: Usage::default(),
            memory_mode: MemoryMode::default(),
            agent: None,
            seq: 0,
        }
    }

    #[test]
    fn create_list_get_scoped() {
        let (_d, s) = store();
        for i in 0..5 {
            s.create(record(&format!("ag_{i}"), "a")).unwrap();
        }
        s.create(record("ag_b", "b")).unwrap();
        let (page, next) = s.list("a", None, 2).unwrap();
        assert_eq!(
            page.iter().map(|r| r.agent_id.as_str()).collect::<Vec<_>>(),
            ["ag_4", "ag_3"]
        );
        let (page, next) = s.list("a", next, 2).unwrap();
        assert_eq!(page[0].agent_id, "ag_2");
        let (page, next) = s.list("a", next, 2).unwrap();
        assert_eq!((page.len(), next), (1, None));
        assert!(s.get("a", "ag_b").unwrap().is_none());
        assert!(s.get("b", "ag_b").unwrap().is_some());
    }

    #[test]
    fn updates_and_alive_set() {
        let (_d, s) = store();
        s.create(record("ag_1", "a")).unwrap();
        s.create(record("ag_2", "a")).unwrap();
        s.update("ag_1", |r| {
            r.status = Status::Running;
            true
        })
        .unwrap();
        let done = s
            .update("ag_1", |r| {
                r.status = Status::Completed;
                r.final_result = Some("ok".into());
                true
            })
            .unwrap()
            .unwrap();
        assert_eq!(done.status, Status::Completed);
        assert_eq!(s.alive().unwrap(), vec!["ag_2".to_string()]);
        let unchanged = s.update("ag_1", |_| false).unwrap().unwrap();
        assert_eq!(unchanged.final_result.as_deref(), Some("ok"));
        assert!(s.update("ag_none", |_| true).unwrap().is_none());
    }

    #[test]
    fn progress_is_trimmed_and_logs_page() {
        let (_d, s) = store();
        s.create(record("ag_1", "a")).unwrap();
        s.update("ag_1", |r| {
            r.progress = (0..MAX_PROGRESS + 5)
                .map(|i| Progress {
                    ts: i as u64,
                    kind: "info".into(),
                    message: i.to_string(),
                })
                .collect();
            true
        })
        .unwrap();
        let r = s.get("a", "ag_1").unwrap().unwrap();
        assert_eq!(r.progress.len(), MAX_PROGRESS);
        assert_eq!(r.progress[0].ts, 5);
        for i in 0..5 {
            assert_eq!(
                s.append_log("ag_1", "thinking", format!("m{i}"), None)
                    .unwrap(),
                i + 1
            );
        }
        let (page, more) = s.logs("ag_1", 0, 3).unwrap();
        assert_eq!((page.len(), more, page[2].seq), (3, true, 3));
        let (page, more) = s.logs("ag_1", 3, 3).unwrap();
        assert_eq!((page.len(), more), (2, false));
        assert!(s.logs("ag_2", 0, 3).unwrap().0.is_empty());
    }
}
