//! Resume: an agent whose run was cut off — its process restarted, or on PostgreSQL its
//! node was lost and another node claimed it (`cluster::reaper`) — is launched again from
//! its journal: its component instantiated afresh and run from the start, the recorded
//! results answering the recorded calls, then live. Its record stays `running` and gains a
//! progress entry saying it resumed, why and after which step.
//!
//! Downtime does not count: the run's time before the cut (from its start to its last
//! recorded call) counts against `max_run_secs` and the account's agent hours, the time
//! no host ran it does not.
//!
//! An agent that cannot be resumed fails — `host_restarted` after a restart, `host_lost`
//! after its node was lost — saying why: its record or its component is gone, its journal
//! is unreadable or missing (it had not begun to run), or the host has no room for it.

use std::{sync::Arc, time::Duration};

use super::{Entry, Run};
use crate::{
    clock::now_ms,
    runtime::{
        admission::Slot,
        lifecycle::{Inner, Runtime, fail},
        records::{Failure, Fence, Progress},
    },
};

/// What a resumed run starts from.
pub struct Resumed {
    /// The recorded calls, replayed in order.
    pub entries: Vec<Entry>,
    /// The run time before the restart.
    pub prior: Duration,
}

/// Why a run is resumed, and the code it fails with when it cannot be.
pub struct Cause {
    /// `host_restarted` or `host_lost`.
    pub code: &'static str,
    /// What happened, as the progress entry and the failure say it: "the host restarted".
    pub what: String,
}

impl Runtime {
    /// Resumes every agent a previous process of this host left alive, or fails it
    /// `host_restarted`. On PostgreSQL, each is claimed again first under the next epoch,
    /// so a write the previous process left in flight is refused; one another node took
    /// meanwhile is left to it.
    pub(in crate::runtime) async fn resume_orphans(&self) -> anyhow::Result<()> {
        let inner = &self.inner;
        let cause = Cause {
            code: "host_restarted",
            what: "the host restarted".into(),
        };
        for (account, id) in inner.services.records.alive().await? {
            let fence = match &inner.cluster {
                None => None,
                Some(cluster) => match cluster.reclaim(&account, &id).await? {
                    Some(epoch) => Some(epoch),
                    None => continue,
                },
            };
            let slot = inner.admission.reserve(&account, u32::MAX).ok();
            inner
                .resume_or_fail(&account, &id, fence, slot, &cause)
                .await?;
        }
        Ok(())
    }
}

impl Inner {
    /// Launches the agent `id` again from its journal in `slot` (none: the host has no
    /// room), its run's writes fenced by `fence`; or fails it with `cause`'s code saying
    /// why it cannot be, and deletes its journal.
    pub(in crate::runtime) async fn resume_or_fail(
        self: &Arc<Self>,
        account: &str,
        id: &str,
        fence: Fence,
        slot: Option<Slot>,
        cause: &Cause,
    ) -> anyhow::Result<()> {
        let Err(why) = self.resume(account, id, fence, slot, &cause.what).await else {
            return Ok(());
        };
        tracing::warn!(agent = %id, why = %why, "an agent could not be resumed");
        let failure = Failure {
            code: cause.code.into(),
            message: format!(
                "{} and could not resume this agent: {why}; spawn it again",
                cause.what
            ),
        };
        fail(&self.services.records, account, id, fence, failure).await?;
        let run = Run {
            account: account.into(),
            agent_id: id.into(),
            fence,
        };
        if let Err(e) = self.services.journal.end(&run).await {
            tracing::error!(agent = %id, error = %e, "deleting a journal failed");
        }
        Ok(())
    }

    /// Launches the agent `id` again from its journal, or says why it cannot be. One
    /// ended meanwhile (stopped while no host ran it) is left as it is.
    async fn resume(
        self: &Arc<Self>,
        account: &str,
        id: &str,
        fence: Fence,
        slot: Option<Slot>,
        what: &str,
    ) -> Result<(), String> {
        let records = &self.services.records;
        let record = (records.get(account, id).await)
            .map_err(|e| format!("its record is unreadable ({e})"))?
            .ok_or("its record is gone")?;
        if record.status.is_terminal() {
            return Ok(());
        }
        let recorded = (self.services.journal.load(account, id).await)
            .map_err(|e| format!("its journal is unreadable ({e})"))?
            .ok_or("it had not begun to run")?;
        let spec = record.agent.as_ref().map(|a| a.component_id.clone());
        let (_, pre) = (self.agent_for(account, spec).await)
            .map_err(|_| "its component is gone".to_string())?;
        let slot = slot.ok_or("the host has no room for it")?;
        let steps = recorded.entries.len() as u64;
        let started = record.started_at.unwrap_or(record.created_at);
        let last = recorded.entries.last().map_or(started, |e| e.ts);
        let prior = Duration::from_millis(last.saturating_sub(started));
        let entry = Progress {
            ts: now_ms(),
            kind: "resumed".into(),
            message: format!(
                "resumed after {what}, after step {steps}: the recorded steps are replayed \
                 from the journal, the next one is made live"
            ),
            step: None,
        };
        let noted = records.update(account, id, fence, move |r| {
            r.progress.push(entry);
            r.steps = steps;
            true
        });
        noted
            .await
            .map_err(|e| format!("its record could not be updated ({e})"))?;
        let resumed = Resumed {
            entries: recorded.entries,
            prior,
        };
        self.launch(slot, &record, fence, recorded.allowance, pre, Some(resumed));
        Ok(())
    }
}
