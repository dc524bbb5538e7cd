//! Agent records in the data dir's redb database: one machine's agents, one process, so no
//! fencing. Every operation runs on the blocking pool.

use std::sync::Arc;

use async_trait::async_trait;
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};

use super::{
    AgentBackend, AgentRecord, Applied, Change, ChangeLog, Fence, LogEvent, RecordError, Result,
    apply,
};
use crate::runtime::newest;

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

/// Agent records over the data dir's database.
#[derive(Clone)]
pub struct EmbeddedAgents {
    db: Arc<Database>,
}

impl EmbeddedAgents {
    /// Opens the tables, creating them on first use.
    pub fn new(db: Arc<Database>) -> Result<Self> {
        let txn = db.begin_write()?;
        txn.open_table(AGENTS)?;
        txn.open_table(BY_ACCOUNT)?;
        txn.open_table(ALIVE)?;
        txn.open_table(LOGS)?;
        txn.open_table(META)?;
        txn.commit()?;
        Ok(Self { db })
    }

    /// Runs `f` on the blocking pool.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Database) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || f(&db)).await?
    }
}

/// The record of `agent_id` in `agents` if it belongs to `account`.
fn read(
    agents: &impl ReadableTable<&'static str, &'static [u8]>,
    account: &str,
    agent_id: &str,
) -> Result<Option<AgentRecord>> {
    let Some(bytes) = agents.get(agent_id)? else {
        return Ok(None);
    };
    let record: AgentRecord = serde_json::from_slice(bytes.value())?;
    Ok((record.account == account).then_some(record))
}

/// The agent's last log event, if any.
fn last_log(logs: &redb::Table<(&str, u64), &[u8]>, agent_id: &str) -> Result<Option<LogEvent>> {
    match logs
        .range((agent_id, 0)..=(agent_id, u64::MAX))?
        .next_back()
    {
        None => Ok(None),
        Some(entry) => Ok(Some(serde_json::from_slice(entry?.1.value())?)),
    }
}

/// Appends `event` to the agent's log with the next sequence number, which it returns.
fn push_log(
    logs: &mut redb::Table<(&str, u64), &[u8]>,
    agent_id: &str,
    event: LogEvent,
) -> Result<u64> {
    let seq = last_log(logs, agent_id)?.map_or(1, |l| l.seq + 1);
    let event = LogEvent { seq, ..event };
    logs.insert((agent_id, seq), serde_json::to_vec(&event)?.as_slice())?;
    Ok(seq)
}

#[async_trait]
impl AgentBackend for EmbeddedAgents {
    async fn create(&self, mut record: AgentRecord) -> Result<AgentRecord> {
        self.blocking(move |db| {
            let txn = db.begin_write()?;
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
        })
        .await
    }

    async fn get(&self, account: &str, agent_id: &str) -> Result<Option<AgentRecord>> {
        let (account, agent_id) = (account.to_owned(), agent_id.to_owned());
        self.blocking(move |db| {
            let txn = db.begin_read()?;
            read(&txn.open_table(AGENTS)?, &account, &agent_id)
        })
        .await
    }

    async fn list(
        &self,
        account: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<AgentRecord>, Option<u64>)> {
        let account = account.to_owned();
        self.blocking(move |db| {
            let txn = db.begin_read()?;
            let page = (account.as_str(), before, limit);
            newest::page(&txn, AGENTS, BY_ACCOUNT, page, |r: &AgentRecord| r.seq)
        })
        .await
    }

    async fn update(
        &self,
        account: &str,
        agent_id: &str,
        _fence: Fence,
        change: Change,
        log: Option<ChangeLog>,
    ) -> Result<Option<AgentRecord>> {
        let (account, agent_id) = (account.to_owned(), agent_id.to_owned());
        self.blocking(move |db| {
            let mut txn = db.begin_write()?;
            let record = {
                let mut agents = txn.open_table(AGENTS)?;
                let Some(mut record) = read(&agents, &account, &agent_id)? else {
                    return Ok(None);
                };
                let Applied::Changed { durable, ended } = apply(&mut record, change) else {
                    return Ok(Some(record));
                };
                agents.insert(agent_id.as_str(), serde_json::to_vec(&record)?.as_slice())?;
                drop(agents);
                if let Some(log) = log {
                    push_log(&mut txn.open_table(LOGS)?, &agent_id, log(&record))?;
                }
                if ended {
                    txn.open_table(ALIVE)?.remove(agent_id.as_str())?;
                }
                if !durable {
                    txn.set_durability(Durability::None)?;
                }
                record
            };
            txn.commit()?;
            Ok(Some(record))
        })
        .await
    }

    async fn append_log(
        &self,
        account: &str,
        agent_id: &str,
        _fence: Fence,
        event: LogEvent,
    ) -> Result<u64> {
        let (account, agent_id) = (account.to_owned(), agent_id.to_owned());
        self.blocking(move |db| {
            let mut txn = db.begin_write()?;
            txn.set_durability(Durability::None)?;
            let seq = {
                if read(&txn.open_table(AGENTS)?, &account, &agent_id)?.is_none() {
                    return Err(RecordError::no_agent(&account, &agent_id));
                }
                let mut logs = txn.open_table(LOGS)?;
                let last = last_log(&logs, &agent_id)?;
                if let Some(stored) = last.filter(|l| event.step.is_some() && l.step == event.step)
                {
                    return Ok(stored.seq);
                }
                push_log(&mut logs, &agent_id, event)?
            };
            txn.commit()?;
            Ok(seq)
        })
        .await
    }

    async fn logs(
        &self,
        account: &str,
        agent_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<(Vec<LogEvent>, bool)> {
        let (account, agent_id) = (account.to_owned(), agent_id.to_owned());
        self.blocking(move |db| {
            let txn = db.begin_read()?;
            if read(&txn.open_table(AGENTS)?, &account, &agent_id)?.is_none() {
                return Ok((Vec::new(), false));
            }
            let logs = txn.open_table(LOGS)?;
            let key = agent_id.as_str();
            let mut out = Vec::new();
            for entry in logs.range((key, after.saturating_add(1))..=(key, u64::MAX))? {
                if out.len() == limit {
                    return Ok((out, true));
                }
                let (_, bytes) = entry?;
                out.push(serde_json::from_slice(bytes.value())?);
            }
            Ok((out, false))
        })
        .await
    }

    async fn alive(&self) -> Result<Vec<(String, String)>> {
        self.blocking(|db| {
            let txn = db.begin_read()?;
            let (alive, agents) = (txn.open_table(ALIVE)?, txn.open_table(AGENTS)?);
            let mut out = Vec::new();
            for entry in alive.iter()? {
                let (id, _) = entry?;
                let id = id.value();
                if let Some(bytes) = agents.get(id)? {
                    let record: AgentRecord = serde_json::from_slice(bytes.value())?;
                    out.push((record.account, id.to_owned()));
                }
            }
            Ok(out)
        })
        .await
    }
}
