//! The one wrapper every call out of the sandbox goes through (the WIT imports, and the
//! WASI ones whose answers come from outside: `sandbox`): on replay it answers the
//! call with its recorded result (checking it is the recorded call), live it makes the
//! call and records its entry before the guest sees the result: synced, with the entries
//! kept before it, for a call whose effect a replay must not repeat; kept in memory for
//! the others (a progress report that wrote the record then stores it: see `progress`).
//! A memory write is keyed instead: its service applies it once per agent and step, so a
//! replay may make it again and needs no sync of its entry.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::{Serialize, de::DeserializeOwned};

use super::{Keep, args_hash};
use crate::runtime::{
    state::{AgentState, Services},
    timings::Stopwatch,
};

/// A call as the journal knows it.
pub struct Call {
    func: &'static str,
    args: u64,
    keep: Keep,
    /// Whether the entries held before it are stored (unsynced) before it is made.
    keyed: bool,
}

impl Call {
    /// A call without an effect outside the sandbox (a read, a clock): its entry is kept in
    /// memory and stored with the next effect's (see `Journal::store`).
    pub fn read(func: &'static str, args: &impl Serialize) -> Self {
        Self {
            func,
            args: args_hash(args),
            keep: Keep::Held,
            keyed: false,
        }
    }

    /// A clock read: no arguments, recorded with arguments hash 0 (as journals always
    /// recorded clock reads).
    pub(super) fn clock(func: &'static str) -> Self {
        Self {
            args: 0,
            ..Self::read(func, &())
        }
    }

    /// A call whose effect its service applies once per agent and journal step (a memory
    /// write, keyed by its provenance): made again by a replay after a crash lost its
    /// entry, it finds its effect applied and answers alike, so its entry is held like a
    /// read's. The entries held before it are stored unsynced before it is made, and its
    /// effect's durable write keeps them (on the data dir it commits to the same database,
    /// which makes the unsynced commits before it durable; PostgreSQL's outlive the
    /// process anyway): a replay then never remakes, after the effect, the reads that
    /// came before it, which would see it and could lead the agent elsewhere.
    pub fn keyed_effect(func: &'static str, args: &impl Serialize) -> Self {
        Self {
            keyed: true,
            ..Self::read(func, args)
        }
    }

    /// A call whose effect a replay must not repeat (a Mind call, a memory delete): the
    /// entries held before it are synced before it is made, so that what led the guest to
    /// it (a clock read, a search's answer) is what a replay after a crash sees, and a
    /// request in flight at the crash is made again alike; its own entry is synced before
    /// the guest sees the result.
    pub fn effect(func: &'static str, args: &impl Serialize) -> Self {
        Self {
            keep: Keep::Synced,
            ..Self::read(func, args)
        }
    }
}

impl Call {
    /// The function, as its entry names it.
    pub fn func(&self) -> &'static str {
        self.func
    }

    /// The hash of its arguments.
    pub fn args(&self) -> u64 {
        self.args
    }
}

impl AgentState {
    /// Runs `live` as the journal says: answered from the journal while the run replays,
    /// else made, with the services behind the agent's door (see `door`), and recorded. A
    /// journal fault (a divergence, the bound, the store) traps the guest; the run reports
    /// it by its code.
    pub async fn journaled<R, F>(&mut self, call: Call, live: F) -> wasmtime::Result<R>
    where
        R: Serialize + DeserializeOwned + Send,
        F: for<'a> FnOnce(&'a mut AgentState, Arc<Services>) -> BoxFuture<'a, wasmtime::Result<R>>
            + Send,
    {
        let journal = self.agent.journal.clone();
        let checking = Stopwatch::start();
        let replayed = journal.replay(call.func, call.args)?;
        let checked = checking.elapsed();
        let agent = self.agent.clone();
        let noted = |took| (agent.timings).journaled(&agent.agent_id, call.func, took);
        if let Some(recorded) = replayed {
            noted(checked);
            return Ok(recorded);
        }
        let before = Stopwatch::start();
        match (call.keyed, call.keep) {
            (true, _) => journal.store(Keep::Unsynced).await?,
            (false, Keep::Synced) => journal.store(Keep::Synced).await?,
            _ => {}
        }
        let stored_before = before.elapsed();
        let services = self.agent.door.open();
        let result = live(self, services).await?;
        let storing = Stopwatch::start();
        journal.keep(call.func, call.args, &result)?;
        journal.store(call.keep).await?;
        noted(checked + stored_before + storing.elapsed());
        Ok(result)
    }
}
