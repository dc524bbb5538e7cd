//! Hibernation: an agent whose host call has waited longer than `[runtime]
//! hibernate_after_ms` (a Mind call, queued for a provider connection or waiting for a slow
//! model) gives back its instance — linear memory, tables, fiber stack and `Store` — and
//! waits parked: its task keeps what the call waits for, its journal (its entries stored,
//! none held in memory) and its stop signal, nothing of the sandbox. Then the agent takes a place under the host's cap again and is
//! resumed by replay: instantiated afresh and run from the start, the recorded results
//! answering its calls, then live.
//!
//! - A call waiting for a slow answer keeps the request in flight; the answer, when it
//!   comes, is recorded in the journal like any live result and answers the replayed call.
//! - A call still queued for a provider connection holds no request at all: the agent waits
//!   for the connection only, and its resumed run, reaching the call again, rebuilds the
//!   request (its conversation comes from the replayed guest) and sends it on that
//!   connection. So thousands of agents queued for a few connections hold no request body.
//!
//! A parked agent still runs for its account: it counts among the account's concurrent
//! agents and its wait counts as run time. A stop ends it at once (the pending call is
//! dropped); so does its run-time limit. A restart resumes it from its journal as any live
//! agent, the parked call made again.

use std::{
    fmt,
    future::Future,
    sync::{Arc, Weak},
    time::{Duration, Instant},
};

use parking_lot::Mutex;

use crate::mind::{BoxFuture, Turn};

use super::{
    admission::Admission,
    journal::Keep,
    lifecycle::Inner,
    run::{Outcome, failure},
    state::AgentCtx,
};

/// What a host call returns (as a trap) to hibernate its agent: the run unwinds, its
/// `Store` is dropped, and the agent waits parked (see [`Inner::park`]).
#[derive(Debug)]
pub struct Hibernating;

impl fmt::Display for Hibernating {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the agent hibernated while its host call waited")
    }
}

impl std::error::Error for Hibernating {}

/// What a parked agent waits on.
pub enum Pending {
    /// The result of a call in flight, as the journal records it (its entry's function
    /// and argument hash).
    Answer {
        func: &'static str,
        args: u64,
        answer: BoxFuture<'static, serde_json::Value>,
    },
    /// A turn to send a Mind request not yet made: the resumed run makes it on that turn.
    Turn(BoxFuture<'static, Option<Turn>>),
}

/// What a parked agent was woken by.
enum Woken {
    Answer(&'static str, u64, serde_json::Value),
    Turn(Option<Turn>),
}

impl Pending {
    async fn woken(self) -> Woken {
        match self {
            Pending::Answer { func, args, answer } => Woken::Answer(func, args, answer.await),
            Pending::Turn(turn) => Woken::Turn(turn.await),
        }
    }
}

/// When an agent may hibernate, and where its place is kept.
pub struct Parking {
    after: Duration,
    /// Weak: the admission keeps each live agent's context, so a strong handle here would
    /// be a cycle that outlives the agent's task (dropped at shutdown, its context would
    /// hold the services, and so the database, for ever).
    admission: Weak<Admission>,
    /// The Mind turn a resumed run's first live Mind call is sent on: the one it parked
    /// waiting for.
    turn: Mutex<Option<Turn>>,
}

impl Parking {
    /// Hibernation after `after_ms` of waiting; none when it is 0.
    pub(super) fn new(after_ms: u64, admission: &Arc<Admission>) -> Option<Self> {
        (after_ms > 0).then(|| Self {
            after: Duration::from_millis(after_ms),
            admission: Arc::downgrade(admission),
            turn: Mutex::new(None),
        })
    }
}

/// What a wait that may hibernate came to.
pub enum Waited<T> {
    Done(T),
    Stopped,
    /// The agent is to hibernate, waiting on this.
    Parked(Pending),
}

impl AgentCtx {
    /// Waits for `work` unless a stop comes first. Once the call has waited since `since`
    /// past the hibernation delay, and a parked place is free, gives `work` up to `park`
    /// instead: the agent hibernates on what that makes of it.
    pub async fn wait_or_park<F>(
        &self,
        since: Instant,
        mut work: F,
        park: impl FnOnce(F) -> Pending,
    ) -> Waited<F::Output>
    where
        F: Future + Unpin,
    {
        tokio::select! {
            done = &mut work => return Waited::Done(done),
            _ = self.stop.wait() => return Waited::Stopped,
            () = self.hibernation_due(since) => {}
        }
        if self.may_park() {
            return Waited::Parked(park(work));
        }
        tokio::select! {
            done = work => Waited::Done(done),
            _ = self.stop.wait() => Waited::Stopped,
        }
    }

    /// Resolves when a call waiting `since` has waited long enough to hibernate; never
    /// when the agent does not hibernate.
    async fn hibernation_due(&self, since: Instant) {
        match &self.parking {
            Some(p) => tokio::time::sleep_until((since + p.after).into()).await,
            None => std::future::pending().await,
        }
    }

    /// The Mind turn this run parked waiting for, if it did: for its next live Mind call.
    pub fn take_turn(&self) -> Option<Turn> {
        self.parking.as_ref()?.turn.lock().take()
    }

    /// Takes a place among the host's parked agents; false when there is none (the agent
    /// waits in its instance).
    fn may_park(&self) -> bool {
        self.parking
            .as_ref()
            .and_then(|p| p.admission.upgrade())
            .is_some_and(|admission| admission.try_park())
    }
}

impl Inner {
    /// Parks the agent whose run just unwound for `pending`: gives its place under the cap
    /// back, waits for the answer (or a stop, or the run's time limit), records it, and
    /// takes a place again. `Ok` once the agent may be resumed by replay; else how its run
    /// ended meanwhile.
    pub(super) async fn park(&self, ctx: &AgentCtx, pending: Pending) -> Result<(), Outcome> {
        // The entries the journal holds in memory are stored first, unsynced (a crash
        // loses a tail that the resumed run makes again), so the parked agent holds none:
        // a Python agent's start leaves up to `FLUSH_BYTES` of clock and random reads there.
        (ctx.journal.store(Keep::Unsynced).await)
            .map_err(|fault| failure(fault.code(), fault.to_string()))?;
        // Dropped on any way out but a resume (the task's too, at shutdown): the agent
        // then leaves the parked as an ending one.
        let mut parked = self.admission.vacate();
        let ends = ctx.started + Duration::from_secs(self.config.max_run_secs);
        let answered = tokio::select! {
            biased;
            _ = ctx.stop.wait() => Err(Outcome::Stopped),
            () = tokio::time::sleep_until(ends.into()) => Err(failure(
                "run_time_exceeded",
                format!("the agent ran longer than {} s", self.config.max_run_secs),
            )),
            woken = pending.woken() => Ok(woken),
        };
        // What the journal kept is stored either way: the resumed run replays from the store.
        let recorded = match answered {
            Ok(woken) => {
                let journal = &ctx.journal;
                let kept = match woken {
                    Woken::Answer(func, args, answer) => journal.keep(func, args, &answer),
                    Woken::Turn(turn) => {
                        if let Some(parking) = &ctx.parking {
                            *parking.turn.lock() = turn;
                        }
                        Ok(())
                    }
                };
                match kept {
                    Ok(()) => journal.store(Keep::Synced).await,
                    Err(fault) => Err(fault),
                }
                .map_err(|fault| failure(fault.code(), fault.to_string()))
            }
            Err(ended) => Err(ended),
        };
        recorded?;
        tokio::select! {
            biased;
            _ = ctx.stop.wait() => return Err(Outcome::Stopped),
            () = parked.reoccupy() => {}
        }
        let loaded = self
            .services
            .journal
            .load(&ctx.account, &ctx.agent_id)
            .await;
        let rewound = match loaded {
            Ok(Some(recorded)) => ctx.journal.rewind(recorded.entries),
            Ok(None) => Err("the journal is gone".to_string()),
            Err(e) => Err(e.to_string()),
        };
        rewound.map_err(|why| {
            failure(
                "journal_failed",
                format!("the hibernated agent could not be resumed: {why}"),
            )
        })
    }
}
