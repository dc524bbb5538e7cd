//! The journal of an agent's run: every call its guest makes across the sandbox boundary
//! (the WIT imports and the WASI clocks and random it is granted), each with its step
//! number, its function, a hash of its arguments and its result, so that a restarted
//! server can resume the agent by running it again from the start while the recorded
//! results answer the recorded calls (`resume`), then continue live.
//!
//! One wrapper does it all (`AgentState::journaled` in `call`, through which the WASI
//! clocks and random go too: `sandbox`): live, a call's entry is recorded before its result reaches the guest; on
//! replay, the recorded result is returned and the call is checked against the recorded
//! one, a mismatch failing the run (`replay_diverged`, naming the step).
//!
//! What is durable when: a call with an effect outside the sandbox that a replay must not
//! repeat (a Mind call, a memory write) commits its entry durably, with the entries kept
//! before it, before the guest sees the result; every other entry (reads, progress, logs,
//! clocks, random) is kept in memory until then (or, past [`FLUSH_BYTES`], committed
//! without a sync), since a replay may make such calls again. What survives a crash is
//! thus always a prefix of the journal: a lost tail is made again, live, on resume.
//!
//! The journal of a run is bounded by `[runtime] max_journal_bytes`, its sandbox's own
//! entries by `max_journal_sandbox_bytes` (`journal_limit_exceeded`), and deleted when the run ends. It lives behind
//! [`JournalStore`]: redb on the embedded backend, tables on PostgreSQL, where every write
//! of a run's journal is fenced by the node's claim on the agent, as its record's writes
//! are: a node that lost its claim can no longer append to the journal its successor
//! resumes from.

mod call;
mod door;
mod embedded;
mod postgres;
mod readiness;
mod resume;
mod sandbox;

use std::{collections::VecDeque, sync::Arc};

use async_trait::async_trait;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use sha2::{Digest, Sha256};

pub(super) use self::{
    call::Call,
    door::Door,
    readiness::Watched,
    resume::{Cause, Resumed},
    sandbox::{Monotonic, WASI, add_to_linker as add_sandbox_to_linker, sandbox_clocks},
};
pub use self::{embedded::EmbeddedJournal, postgres::PgJournal};
use super::records::{Allowance, Fence};
use crate::{clock::now_ms, storage::StoreError};

/// Bytes of entries kept in memory past which they are stored (without a sync).
pub const FLUSH_BYTES: u64 = 64 << 10;

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Its step: 1, 2, … in the order the guest made its calls.
    pub step: u64,
    /// The function, e.g. `mind.complete` or `wasi:clocks/wall-clock.now`.
    pub func: String,
    /// The hash of its arguments (see [`args_hash`]).
    pub args: u64,
    /// When it was made (ms since the epoch): the run time a resume counts.
    pub ts: u64,
    /// Its result as JSON.
    pub result: serde_json::Value,
}

/// What a run's journal holds: the allowance it was launched with and its entries in
/// step order.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub allowance: Allowance,
    pub entries: Vec<Entry>,
}

/// Why a journal operation failed.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The store failed, or what it holds does not read back (a missing step).
    #[error("agent journal storage: {0}")]
    Storage(#[from] StoreError),
    /// A write of the run's journal by a node whose claim on the agent is no longer its
    /// own: refused.
    #[error("this node's claim on agent {0} is stale: the journal write was refused")]
    Stale(String),
}

crate::storage::storage_errors_into!(JournalError);

/// Whose journal an operation writes: the agent's, of its account, by the node holding
/// the claim `fence` on its run (`None` on the embedded backend, which has no claims).
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub account: String,
    pub agent_id: String,
    pub fence: Fence,
}

/// Where runs' journals are kept: keyed by the agent, entries appended in step order;
/// every write refused ([`JournalError::Stale`]) when its run's fence is superseded.
#[async_trait]
pub trait JournalStore: Send + Sync {
    /// Starts the journal of a run launched with `allowance` (not synced: the record's
    /// durable turn to `running` follows).
    async fn begin(&self, run: &Run, allowance: Allowance) -> Result<(), JournalError>;

    /// The run's journal; `None` when it has none (its run never began).
    async fn load(&self, account: &str, agent_id: &str) -> Result<Option<Recorded>, JournalError>;

    /// Appends `entries` (consecutive steps after the last stored one), synced when
    /// `durable`.
    async fn append(
        &self,
        run: &Run,
        entries: Vec<Entry>,
        durable: bool,
    ) -> Result<(), JournalError>;

    /// Deletes the run's journal (its run ended).
    async fn end(&self, run: &Run) -> Result<(), JournalError>;

    /// Refuses ([`JournalError::Stale`]) once the run's fence is superseded: for an effect
    /// the journal's own fenced writes come too late to stop, a Mind request (its entry is
    /// stored after the answer, and the tokens are spent by then). Where runs have no
    /// claims (one process) it always holds.
    async fn holds(&self, _run: &Run) -> Result<(), JournalError> {
        Ok(())
    }

    /// Whether an unsynced write outlives a crash of this process. PostgreSQL's does once
    /// written; the data dir's unsynced commits do not (a restart opens the last synced
    /// one). Where it does, the agent's record keeps a progress report made before a
    /// crash, so that call's entry must be written as soon (see [`Keep::Written`]).
    fn unsynced_outlives_the_process(&self) -> bool;
}

/// Checks that `entries`, as loaded in step order, are steps 1, 2, … without a gap.
fn contiguous(agent_id: &str, entries: &[Entry]) -> Result<(), JournalError> {
    match (entries.iter().zip(1..)).find(|(e, step)| e.step != *step) {
        Some((_, step)) => Err(JournalError::Storage(StoreError::Corrupt(format!(
            "the journal of {agent_id} misses step {step}"
        )))),
        None => Ok(()),
    }
}

/// Why a journaled call ends the run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Fault {
    /// On replay, the guest made another call than the recorded one at `step`.
    #[error(
        "the resumed agent diverged from its journal at step {step}: it made {made}, the journal recorded {recorded}"
    )]
    Diverged {
        step: u64,
        made: String,
        recorded: String,
    },
    /// The run's journal, or its sandbox's entries, would grow past `max` bytes (`key`).
    #[error("the agent's journal exceeded its bound of {max} bytes ([runtime] {key})")]
    Full { max: u64, key: &'static str },
    /// One random read asked for more bytes than the journal takes in one entry.
    #[error("the agent asked for {asked} random bytes in one call; at most {max} are granted")]
    Random { asked: u64, max: u64 },
    /// The journal could not be stored.
    #[error("{0}")]
    Storage(String),
    /// This node's claim on the agent went stale: another node took the run over, and
    /// this node's write was refused (fencing). That node ends the run; this one's end is
    /// refused the same way (`RecordError::Stale`), so the code below is never recorded.
    #[error("another node runs agent {0} now: this node's journal write was refused")]
    Fenced(String),
}

impl From<JournalError> for Fault {
    fn from(e: JournalError) -> Self {
        match e {
            JournalError::Stale(agent_id) => Fault::Fenced(agent_id),
            JournalError::Storage(e) => Fault::Storage(e.to_string()),
        }
    }
}

impl Fault {
    /// The failure code the run ends with.
    pub fn code(&self) -> &'static str {
        match self {
            Fault::Diverged { .. } => "replay_diverged",
            Fault::Full { .. } => "journal_limit_exceeded",
            Fault::Random { .. } => "random_limit_exceeded",
            Fault::Storage(_) => "journal_failed",
            Fault::Fenced(_) => "claim_lost",
        }
    }
}

/// The hash of a call's arguments: SHA-256 of their JSON, its first 8 bytes.
pub fn args_hash(args: &impl Serialize) -> u64 {
    let mut hasher = HashWriter(Sha256::new());
    // Serializing plain data into a hasher cannot fail.
    let _ = serde_json::to_writer(&mut hasher, args);
    let digest = hasher.0.finalize();
    u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))
}

struct HashWriter(Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// When a live call's entry is stored (see [`Journal::store`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// In memory until the next stored entry, or until the held ones pass [`FLUSH_BYTES`].
    Held,
    /// At once, with those held before it, unsynced, where an unsynced write outlives the
    /// process (the call's write of the agent's record did); else as `Held`, since the
    /// record's write and the entry are kept or lost together.
    Written,
    /// At once, with those held before it, unsynced: before a keyed effect (see
    /// `Call::keyed_effect`), whose own durable write then keeps them.
    Unsynced,
    /// At once, with those held before it, synced.
    Synced,
}

/// A run's journal bounds, in counted bytes (see `size`).
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// The whole journal (`[runtime] max_journal_bytes`).
    pub total: u64,
    /// The entries of the sandbox's own answers: clocks, random, readiness
    /// (`[runtime] max_journal_sandbox_bytes`). A guest makes these in a loop with no
    /// service in it, a few dozen bytes each; their journal, written, stays in the store's
    /// cache (about 1.3 × its size in host RSS on redb), so they get a bound of their own,
    /// far below the one that must fit the services' answers (HTTP bodies, Mind replies).
    pub sandbox: u64,
}

#[cfg(test)]
impl Bounds {
    /// No bound.
    pub const NONE: Self = Self {
        total: u64::MAX,
        sandbox: u64::MAX,
    };
}

/// Whether `func`'s entries are the sandbox's own answers (counted against
/// [`Bounds::sandbox`] too).
fn from_sandbox(func: &str) -> bool {
    use self::{readiness::*, sandbox::*};
    [WALL, MONOTONIC, RANDOM, POLL, READY, BLOCK].contains(&func)
}

/// One run's journal, shared by its store's host calls and its clocks.
pub struct Journal {
    run: Run,
    store: Arc<dyn JournalStore>,
    cursor: Mutex<Cursor>,
}

struct Cursor {
    /// Recorded entries not replayed yet.
    replay: VecDeque<Entry>,
    /// The next step.
    next: u64,
    /// Entries made live and not yet stored, and their size.
    pending: Vec<Entry>,
    pending_bytes: u64,
    /// Bytes of the journal so far, and of its sandbox entries, against `bounds`.
    bytes: u64,
    sandbox_bytes: u64,
    bounds: Bounds,
    /// The first fault met by a call that could not fail the run itself (a clock read);
    /// the next call, or the run's end, reports it.
    fault: Option<Fault>,
}

/// The size an entry counts against the bound: about what it holds in memory (itself,
/// its function's name, its result, counted as its JSON text), so that the bound bounds
/// the host memory of the entries held live and of a journal a resume loads, however
/// small each entry is (a clock read counts ~110 bytes, not the ~50 of its stored form).
fn size(entry: &Entry) -> u64 {
    (size_of::<Entry>() + entry.func.len()) as u64
        + serde_json::to_string(&entry.result).map_or(0, |s| s.len()) as u64
}

impl Journal {
    /// The journal of a run, replaying `recorded` (empty for a fresh run) before it
    /// records live.
    pub fn new(
        run: Run,
        store: Arc<dyn JournalStore>,
        recorded: Vec<Entry>,
        bounds: Bounds,
    ) -> Self {
        let bytes = recorded.iter().map(size).sum();
        let sandbox_bytes = (recorded.iter())
            .filter(|e| from_sandbox(&e.func))
            .map(size)
            .sum();
        let next = recorded.last().map_or(1, |e| e.step + 1);
        Self {
            run,
            store,
            cursor: Mutex::new(Cursor {
                replay: recorded.into(),
                next,
                pending: Vec::new(),
                pending_bytes: 0,
                bytes,
                sandbox_bytes,
                bounds,
                fault: None,
            }),
        }
    }

    /// The recorded result of the call `func` with arguments hashed `args`, when the run
    /// is still replaying (`None` once it is live); a fault when the call is not the
    /// recorded one, or an earlier call met one.
    pub fn replay<R: DeserializeOwned>(&self, func: &str, args: u64) -> Result<Option<R>, Fault> {
        let mut cursor = self.cursor.lock();
        if let Some(fault) = &cursor.fault {
            return Err(fault.clone());
        }
        let Some(entry) = cursor.replay.front() else {
            return Ok(None);
        };
        let diverged = |recorded: String| Fault::Diverged {
            step: entry.step,
            made: format!("{func} (arguments {args:016x})"),
            recorded,
        };
        let fault = if entry.func != func || entry.args != args {
            Some(diverged(format!(
                "{} (arguments {:016x})",
                entry.func, entry.args
            )))
        } else {
            None
        };
        let result = match fault {
            None => serde_json::from_value(entry.result.clone())
                .map_err(|e| diverged(format!("a result that does not fit it ({e})"))),
            Some(f) => Err(f),
        };
        match result {
            Ok(r) => {
                cursor.replay.pop_front();
                Ok(Some(r))
            }
            Err(f) => {
                cursor.fault = Some(f.clone());
                Err(f)
            }
        }
    }

    /// The step the next call will be recorded at (what a memory write names as its
    /// provenance).
    pub fn next_step(&self) -> u64 {
        self.cursor.lock().next
    }

    /// The calls recorded so far, replayed or live (what the agent's record shows).
    pub fn steps(&self) -> u64 {
        self.cursor.lock().next - 1
    }

    /// Keeps the live call's entry in memory, to be stored with the next [`Journal::store`].
    pub fn keep<R: Serialize>(&self, func: &str, args: u64, result: &R) -> Result<(), Fault> {
        let mut cursor = self.cursor.lock();
        if let Some(fault) = &cursor.fault {
            return Err(fault.clone());
        }
        let entry = Entry {
            step: cursor.next,
            func: func.to_owned(),
            args,
            ts: now_ms(),
            result: serde_json::to_value(result).map_err(|e| Fault::Storage(e.to_string()))?,
        };
        let entry_bytes = size(&entry);
        let bytes = cursor.bytes + entry_bytes;
        let sandbox_bytes = cursor.sandbox_bytes + u64::from(from_sandbox(func)) * entry_bytes;
        let bounds = cursor.bounds;
        let over = if bytes > bounds.total {
            Some((bounds.total, "max_journal_bytes"))
        } else if sandbox_bytes > bounds.sandbox {
            Some((bounds.sandbox, "max_journal_sandbox_bytes"))
        } else {
            None
        };
        if let Some((max, key)) = over {
            let fault = Fault::Full { max, key };
            cursor.fault = Some(fault.clone());
            return Err(fault);
        }
        cursor.bytes = bytes;
        cursor.sandbox_bytes = sandbox_bytes;
        cursor.pending_bytes += entry_bytes;
        cursor.next += 1;
        cursor.pending.push(entry);
        Ok(())
    }

    /// Stores the entries kept so far as `keep` says (`Held`: only once they are over
    /// [`FLUSH_BYTES`], unsynced).
    pub async fn store(&self, keep: Keep) -> Result<(), Fault> {
        let held = match keep {
            Keep::Held => true,
            Keep::Written => !self.store.unsynced_outlives_the_process(),
            Keep::Unsynced | Keep::Synced => false,
        };
        let durable = keep == Keep::Synced;
        let pending = {
            let mut cursor = self.cursor.lock();
            if held && cursor.pending_bytes <= FLUSH_BYTES {
                return Ok(());
            }
            cursor.pending_bytes = 0;
            std::mem::take(&mut cursor.pending)
        };
        if pending.is_empty() {
            return Ok(());
        }
        Ok(self.store.append(&self.run, pending, durable).await?)
    }

    /// Bytes the journal may still grow by before its bound.
    pub fn room(&self) -> u64 {
        let cursor = self.cursor.lock();
        cursor.bounds.total.saturating_sub(cursor.bytes)
    }

    /// Ends the run with `fault` (kept, so the run reports it): returned for the trap.
    pub fn fail(&self, fault: Fault) -> Fault {
        self.cursor.lock().fault.get_or_insert(fault).clone()
    }

    /// Fails with the run's fault once its claim no longer holds (see
    /// [`JournalStore::holds`]): checked before a Mind request is sent, so a node that lost
    /// its claim sends none.
    pub async fn holds(&self) -> Result<(), Fault> {
        Ok(self.store.holds(&self.run).await?)
    }

    /// At the run's end: a fault a call met, or a divergence if the guest returned before
    /// making every recorded call.
    pub fn finish(&self) -> Result<(), Fault> {
        let cursor = self.cursor.lock();
        if let Some(fault) = &cursor.fault {
            return Err(fault.clone());
        }
        match cursor.replay.front() {
            Some(entry) => Err(Fault::Diverged {
                step: entry.step,
                made: "no further call (the agent returned)".into(),
                recorded: entry.func.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Replays the run again from its start on `recorded`, the journal as stored (a
    /// hibernated agent resumed: see `park`); it must hold every step made so far.
    pub fn rewind(&self, recorded: Vec<Entry>) -> Result<(), String> {
        let mut cursor = self.cursor.lock();
        let made = cursor.next - 1;
        if recorded.len() as u64 != made || !cursor.pending.is_empty() {
            return Err(format!(
                "its journal holds {} steps, the run made {made}",
                recorded.len()
            ));
        }
        cursor.replay = recorded.into();
        Ok(())
    }

    /// Whether the run is still replaying recorded calls.
    #[cfg(test)]
    pub fn replaying(&self) -> bool {
        !self.cursor.lock().replay.is_empty()
    }
}

#[cfg(test)]
mod poisoned_tests;
#[cfg(test)]
mod tests;
