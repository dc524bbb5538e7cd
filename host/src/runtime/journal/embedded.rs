//! Journals in the data dir's redb database, beside the agent records. Every operation
//! runs on the blocking pool. One process runs the agents here: runs have no fence, and
//! an agent's id is its key (ids are unique across accounts).

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use redb::{Database, Durability, ReadableDatabase, TableDefinition};

use super::{Entry, JournalError, JournalStore, Recorded, Run, contiguous};
use crate::{memory::Quota, runtime::records::Allowance};

/// agent_id → (live memories, versions kept per key, CPU budget in ms, Mind tokens) of the
/// run's allowance: what a resume launches it with.
const RUNS: TableDefinition<&str, (u64, u32, u64, u64)> = TableDefinition::new("agent_runs");
/// (agent_id, step) → entry (JSON, without its step).
pub(super) const JOURNAL: TableDefinition<(&str, u64), &[u8]> =
    TableDefinition::new("agent_journal");

/// An entry as stored: its step is the key.
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    func: String,
    args: u64,
    ts: u64,
    result: serde_json::Value,
}

/// Journals over the data dir's database.
#[derive(Clone)]
pub struct EmbeddedJournal {
    db: Arc<Database>,
}

impl EmbeddedJournal {
    /// Opens the tables, creating them on first use.
    pub fn new(db: Arc<Database>) -> Result<Self, JournalError> {
        let txn = db.begin_write()?;
        txn.open_table(RUNS)?;
        txn.open_table(JOURNAL)?;
        txn.commit()?;
        Ok(Self { db })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Database) -> Result<T, JournalError> + Send + 'static,
    ) -> Result<T, JournalError> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || f(&db)).await?
    }
}

#[async_trait]
impl JournalStore for EmbeddedJournal {
    async fn begin(&self, run: &Run, allowance: Allowance) -> Result<(), JournalError> {
        let agent_id = run.agent_id.clone();
        self.blocking(move |db| {
            let mut txn = db.begin_write()?;
            txn.set_durability(Durability::None)?;
            let quota = allowance.memory_quota;
            let run = (
                quota.memories,
                quota.versions_per_key,
                allowance.cpu_budget_ms(),
                allowance.token_budget,
            );
            txn.open_table(RUNS)?.insert(agent_id.as_str(), run)?;
            txn.commit()?;
            Ok(())
        })
        .await
    }

    async fn load(&self, _account: &str, agent_id: &str) -> Result<Option<Recorded>, JournalError> {
        let agent_id = agent_id.to_owned();
        self.blocking(move |db| {
            let txn = db.begin_read()?;
            let runs = txn.open_table(RUNS)?;
            let Some(run) = runs.get(agent_id.as_str())? else {
                return Ok(None);
            };
            let (memories, versions_per_key, cpu_budget_ms, token_budget) = run.value();
            let key = agent_id.as_str();
            let journal = txn.open_table(JOURNAL)?;
            let mut entries = Vec::new();
            for item in journal.range((key, 0)..=(key, u64::MAX))? {
                let (k, v) = item?;
                let Stored {
                    func,
                    args,
                    ts,
                    result,
                } = serde_json::from_slice(v.value())?;
                entries.push(Entry {
                    step: k.value().1,
                    func,
                    args,
                    ts,
                    result,
                });
            }
            contiguous(&agent_id, &entries)?;
            let allowance = Allowance {
                memory_quota: Quota {
                    memories,
                    versions_per_key,
                },
                cpu_budget: Duration::from_millis(cpu_budget_ms),
                token_budget,
            };
            Ok(Some(Recorded { allowance, entries }))
        })
        .await
    }

    async fn append(
        &self,
        run: &Run,
        entries: Vec<Entry>,
        durable: bool,
    ) -> Result<(), JournalError> {
        let agent_id = run.agent_id.clone();
        self.blocking(move |db| {
            let mut txn = db.begin_write()?;
            if !durable {
                txn.set_durability(Durability::None)?;
            }
            {
                let mut journal = txn.open_table(JOURNAL)?;
                for Entry {
                    step,
                    func,
                    args,
                    ts,
                    result,
                } in entries
                {
                    let stored = serde_json::to_vec(&Stored {
                        func,
                        args,
                        ts,
                        result,
                    })?;
                    journal.insert((agent_id.as_str(), step), stored.as_slice())?;
                }
            }
            txn.commit()?;
            Ok(())
        })
        .await
    }

    /// A crash rolls the file back to its last synced commit.
    fn unsynced_outlives_the_process(&self) -> bool {
        false
    }

    async fn end(&self, run: &Run) -> Result<(), JournalError> {
        let agent_id = run.agent_id.clone();
        self.blocking(move |db| {
            let mut txn = db.begin_write()?;
            // The run is recorded as ended already: a lost delete leaves rows nobody reads.
            txn.set_durability(Durability::None)?;
            {
                let key = agent_id.as_str();
                txn.open_table(RUNS)?.remove(key)?;
                txn.open_table(JOURNAL)?
                    .retain_in((key, 0)..=(key, u64::MAX), |_, _| false)?;
            }
            txn.commit()?;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
impl EmbeddedJournal {
    /// Changes the argument hash of `step` in the store, as a tampering would.
    pub fn tamper(&self, agent_id: &str, step: u64) {
        use redb::ReadableTable;
        let txn = self.db.begin_write().unwrap();
        {
            let mut journal = txn.open_table(JOURNAL).unwrap();
            let bytes = journal
                .get((agent_id, step))
                .unwrap()
                .unwrap()
                .value()
                .to_vec();
            let mut stored: Stored = serde_json::from_slice(&bytes).unwrap();
            stored.args ^= 1;
            let bytes = serde_json::to_vec(&stored).unwrap();
            journal.insert((agent_id, step), bytes.as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
}
