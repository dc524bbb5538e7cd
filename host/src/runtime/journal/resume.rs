//! Resume on start: each agent a previous process left alive is launched again from its
//! journal — its component instantiated afresh and run from the start, the recorded
//! results answering the recorded calls, then live. Its record stays `running` and gains a
//! progress entry saying it resumed, why and after which step.
//!
//! Downtime does not count: the run's time before the restart (from its start to its last
//! recorded call) counts against `max_run_secs` and the account's agent hours, the time
//! the host was down does not.
//!
//! An agent that cannot be resumed fails `host_restarted`, saying why: its record or its
//! component is gone, its journal is unreadable or missing (it had not begun to run), or
//! the host has no room for it.

use std::{sync::Arc, time::Duration};

use super::{Entry, JournalStore};
use crate::{
    clock::now_ms,
    runtime::{
        lifecycle::{Runtime, fail},
        records::{Failure, Progress},
    },
};

/// What a resumed run starts from.
pub struct Resumed {
    /// The recorded calls, replayed in order.
    pub entries: Vec<Entry>,
    /// The run time before the restart.
    pub prior: Duration,
}

impl Runtime {
    /// Resumes every agent a previous process left alive, or fails it `host_restarted`.
    pub(in crate::runtime) async fn resume_orphans(
        &self,
        journals: &Arc<dyn JournalStore>,
    ) -> anyhow::Result<()> {
        let records = &self.inner.services.records;
        for (account, id) in records.alive().await? {
            let Err(why) = self.resume(&account, &id, journals).await else {
                continue;
            };
            tracing::warn!(agent = %id, why = %why, "an agent could not be resumed");
            let failure = Failure {
                code: "host_restarted".into(),
                message: format!(
                    "the host restarted and could not resume this agent: {why}; spawn it again"
                ),
            };
            fail(records, &account, &id, None, failure).await?;
            if let Err(e) = journals.end(&id).await {
                tracing::error!(agent = %id, error = %e, "deleting a journal failed");
            }
        }
        Ok(())
    }

    /// Launches the agent `id` again from its journal, or says why it cannot be.
    async fn resume(
        &self,
        account: &str,
        id: &str,
        journals: &Arc<dyn JournalStore>,
    ) -> Result<(), String> {
        let inner = &self.inner;
        let records = &inner.services.records;
        let record = (records.get(account, id).await)
            .map_err(|e| format!("its record is unreadable ({e})"))?
            .ok_or("its record is gone")?;
        let recorded = (journals.load(id).await)
            .map_err(|e| format!("its journal is unreadable ({e})"))?
            .ok_or("it had not begun to run")?;
        let spec = record.agent.as_ref().map(|a| a.component_id.clone());
        let (_, pre) = (inner.agent_for(account, spec).await)
            .map_err(|_| "its component is gone".to_string())?;
        let slot = (inner.admission.reserve(account, u32::MAX))
            .map_err(|_| "the host has no room for it".to_string())?;
        let steps = recorded.entries.len() as u64;
        let started = record.started_at.unwrap_or(record.created_at);
        let last = recorded.entries.last().map_or(started, |e| e.ts);
        let prior = Duration::from_millis(last.saturating_sub(started));
        let entry = Progress {
            ts: now_ms(),
            kind: "resumed".into(),
            message: format!(
                "resumed after the host restarted, after step {steps}: the recorded steps are \
                 replayed from the journal, the next one is made live"
            ),
        };
        let noted = records.update(account, id, None, move |r| {
            r.progress.push(entry);
            true
        });
        noted
            .await
            .map_err(|e| format!("its record could not be updated ({e})"))?;
        let resumed = Resumed {
            entries: recorded.entries,
            prior,
        };
        inner.launch(slot, &record, None, recorded.allowance, pre, Some(resumed));
        Ok(())
    }
}
