//! Hibernation: an agent whose host call has waited longer than `[runtime]
//! hibernate_after_ms` (a Mind call, queued for a provider connection or waiting for a slow
//! model) gives back its instance — linear memory, tables, fiber stack and `Store` — and
//! waits parked: its task keeps the call's pending answer, its journal and its stop signal,
//! nothing of the sandbox. When the answer comes it is recorded in the journal like any
//! live result, the agent takes a place under the host's cap again, and it is resumed by
//! replay: instantiated afresh and run from the start, the recorded results answering its
//! calls, the parked one's among them, then live.
//!
//! A parked agent still runs for its account: it counts among the account's concurrent
//! agents and its wait counts as run time. A stop ends it at once (the pending call is
//! dropped); so does its run-time limit. A restart resumes it from its journal as any live
//! agent, the parked call made again.

use std::{fmt, future::Future, pin::Pin, sync::Arc, time::Duration};

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

/// The call a parked agent waits on: its journal entry's function and argument hash, and
/// its result to come, as the journal records it.
pub struct Pending {
    pub func: &'static str,
    pub args: u64,
    pub answer: Pin<Box<dyn Future<Output = serde_json::Value> + Send>>,
}

/// When an agent may hibernate, and where its place is kept.
pub struct Parking {
    after: Duration,
    admission: Arc<Admission>,
}

impl Parking {
    /// Hibernation after `after_ms` of waiting; none when it is 0.
    pub(super) fn new(after_ms: u64, admission: &Arc<Admission>) -> Option<Self> {
        (after_ms > 0).then(|| Self {
            after: Duration::from_millis(after_ms),
            admission: admission.clone(),
        })
    }
}

impl AgentCtx {
    /// Resolves when the agent's pending call has waited long enough to hibernate; never
    /// when it does not hibernate.
    pub async fn hibernation_due(&self) {
        match &self.parking {
            Some(p) => tokio::time::sleep(p.after).await,
            None => std::future::pending().await,
        }
    }

    /// Takes a place among the host's parked agents; false when there is none (the agent
    /// waits in its instance).
    pub fn may_park(&self) -> bool {
        self.parking
            .as_ref()
            .is_some_and(|p| p.admission.try_park())
    }
}

impl Inner {
    /// Parks the agent whose run just unwound for `pending`: gives its place under the cap
    /// back, waits for the answer (or a stop, or the run's time limit), records it, and
    /// takes a place again. `Ok` once the agent may be resumed by replay; else how its run
    /// ended meanwhile.
    pub(super) async fn park(&self, ctx: &AgentCtx, pending: Pending) -> Result<(), Outcome> {
        self.admission.vacate();
        let ends = ctx.started + Duration::from_secs(self.config.max_run_secs);
        let answered = tokio::select! {
            biased;
            _ = ctx.stop.wait() => Err(Outcome::Stopped),
            () = tokio::time::sleep_until(ends.into()) => Err(failure(
                "run_time_exceeded",
                format!("the agent ran longer than {} s", self.config.max_run_secs),
            )),
            answer = pending.answer => Ok(answer),
        };
        let recorded = match answered {
            Ok(answer) => {
                let journal = &ctx.journal;
                match journal.keep(pending.func, pending.args, &answer) {
                    Ok(()) => journal.store(Keep::Synced).await,
                    Err(fault) => Err(fault),
                }
                .map_err(|fault| failure(fault.code(), fault.to_string()))
            }
            Err(ended) => Err(ended),
        };
        if let Err(ended) = recorded {
            self.admission.unpark_ending();
            return Err(ended);
        }
        tokio::select! {
            biased;
            _ = ctx.stop.wait() => {
                self.admission.unpark_ending();
                return Err(Outcome::Stopped);
            }
            () = self.admission.reoccupy() => {}
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
