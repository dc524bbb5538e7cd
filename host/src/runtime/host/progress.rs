//! `progress`: progress entries on the agent record and events in its log stream.
//! Guest-controlled sizes are bounded before anything is stored: each message is clipped,
//! and each run stores at most `[runtime] max_progress_reports` progress entries and
//! `max_log_events` log events (`max_log_bytes` in all); past a bound further ones are
//! dropped and counted, and one `limit` log event says so when the first is dropped.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::{
    clock::now_ms,
    runtime::{
        bindings::progress,
        bounds::{Admit, clip},
        journal::{Call, Keep},
        records::{AgentStore, LogEvent, Progress},
        state::{AgentState, Services},
    },
};

/// Longest progress message kept, in characters.
const MAX_PROGRESS_CHARS: usize = 2_000;
/// Longest progress kind kept, in characters.
const MAX_KIND_CHARS: usize = 32;
/// Longest log message kept, in characters.
const MAX_LOG_CHARS: usize = 16_000;
/// Largest structured detail of a log event, in bytes.
const MAX_LOG_DATA: usize = 64 * 1024;

/// Which per-run bound a report counts against.
#[derive(Clone, Copy)]
enum Stream {
    Progress,
    Log,
}

impl AgentState {
    /// Counts a report of `bytes` against its stream's bound; whether to store it. The
    /// first one dropped writes a `limit` log event (outside the bound: one per stream).
    async fn admitted(
        &mut self,
        records: &AgentStore,
        stream: Stream,
        bytes: usize,
    ) -> wasmtime::Result<bool> {
        let (meter, what) = match stream {
            Stream::Progress => (&mut self.bounds.progress, "progress reports"),
            Stream::Log => (&mut self.bounds.log, "log events"),
        };
        let limit = match stream {
            Stream::Progress => json!({ "max_progress_reports": meter.max_count() }),
            Stream::Log => json!({
                "max_log_events": meter.max_count(),
                "max_log_bytes": meter.max_bytes(),
            }),
        };
        match meter.admit(bytes) {
            Admit::Keep => Ok(true),
            Admit::Dropped => Ok(false),
            Admit::FirstDropped => {
                let message =
                    format!("the run reached its bound of {what}; further ones are dropped");
                self.append_log(records, "limit", message, Some(limit))
                    .await?;
                Ok(false)
            }
        }
    }

    /// Appends a log event to the agent's stream; the future holds no borrow of the store.
    fn append_log(
        &self,
        records: &AgentStore,
        kind: &'static str,
        message: String,
        data: Option<Value>,
    ) -> impl Future<Output = wasmtime::Result<()>> + Send + 'static {
        let agent = self.agent.clone();
        let records = records.clone();
        async move {
            (records
                .append_log(
                    &agent.account,
                    &agent.agent_id,
                    agent.fence,
                    kind,
                    message,
                    data,
                )
                .await)
                .map_err(wasmtime::Error::msg)?;
            Ok(())
        }
    }
}

impl progress::Host for AgentState {
    async fn report(&mut self, kind: String, message: String) -> wasmtime::Result<()> {
        let call = Call::read("progress.report", &(&kind, &message));
        let writes = self.bounds.writes();
        self.journaled(call, |s, outside| {
            Box::pin(s.report_live(outside, kind, message))
        })
        .await?;
        self.store_if_written(writes).await
    }

    async fn log(
        &mut self,
        kind: progress::LogKind,
        message: String,
        data_json: Option<String>,
    ) -> wasmtime::Result<()> {
        let call = Call::read("progress.log", &(&kind, &message, &data_json));
        let writes = self.bounds.writes();
        self.journaled(call, |s, outside| {
            Box::pin(s.log_live(outside, kind, message, data_json))
        })
        .await?;
        self.store_if_written(writes).await
    }
}

impl AgentState {
    /// Stores the journal's held entries as durably as the record's write the call just
    /// made (`Keep::Written`), when it made one: a restart then finds both or neither, and
    /// a replay neither repeats the report nor loses it. A report past its bound wrote
    /// nothing, and its entry stays held, so a flood costs no journal write per call. The
    /// future holds no borrow of the store.
    fn store_if_written(
        &self,
        writes_before: u64,
    ) -> impl Future<Output = wasmtime::Result<()>> + Send + 'static {
        let journal = (self.bounds.writes() > writes_before).then(|| self.agent.journal.clone());
        async move {
            if let Some(journal) = journal {
                journal.store(Keep::Written).await?;
            }
            Ok(())
        }
    }

    async fn report_live(
        &mut self,
        outside: Arc<Services>,
        kind: String,
        message: String,
    ) -> wasmtime::Result<()> {
        // This call's step, as its journal entry will record it.
        let step = self.agent.journal.next_step();
        let entry = Progress {
            ts: now_ms(),
            kind: clip(&kind, MAX_KIND_CHARS),
            message: clip(&message, MAX_PROGRESS_CHARS),
            step: Some(step),
        };
        let records = &outside.records;
        let bytes = entry.kind.len() + entry.message.len();
        if !self.admitted(records, Stream::Progress, bytes).await? {
            return Ok(());
        }
        let agent = &self.agent;
        let pushed = records.update(&agent.account, &agent.agent_id, agent.fence, move |r| {
            // Made before a crash that lost its journal entry: it is there once already.
            let made = r.progress.iter().rev().any(|p| p.step == Some(step));
            if !made {
                r.progress.push(entry);
                r.steps = step;
            }
            !made
        });
        pushed.await.map_err(wasmtime::Error::msg)?;
        Ok(())
    }

    async fn log_live(
        &mut self,
        outside: Arc<Services>,
        kind: progress::LogKind,
        message: String,
        data_json: Option<String>,
    ) -> wasmtime::Result<()> {
        let step = self.agent.journal.next_step();
        let kind = match kind {
            progress::LogKind::Thinking => "thinking",
            progress::LogKind::ToolUse => "tool_use",
            progress::LogKind::ToolResult => "tool_result",
        };
        let data = data_json.filter(|d| d.len() <= MAX_LOG_DATA);
        let message = clip(&message, MAX_LOG_CHARS);
        let bytes = message.len() + data.as_ref().map_or(0, String::len);
        let records = &outside.records;
        if !self.admitted(records, Stream::Log, bytes).await? {
            return Ok(());
        }
        let data = data.and_then(|d| serde_json::from_str::<Value>(&d).ok());
        let event = LogEvent {
            // This call's step, as its journal entry will record it.
            step: Some(step),
            ..LogEvent::new(kind, message, data)
        };
        let agent = &self.agent;
        let appended =
            records.append_log_event(&agent.account, &agent.agent_id, agent.fence, event);
        appended.await.map_err(wasmtime::Error::msg)?;
        Ok(())
    }
}
