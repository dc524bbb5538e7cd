//! `progress`: progress entries on the agent record and events in its log stream.
//! Guest-controlled sizes are bounded before anything is stored.

use serde_json::Value;

use crate::{
    blocking::run_blocking,
    clock::now_ms,
    runtime::{bindings::progress, records::Progress, state::AgentState},
};

/// Longest progress message kept, in characters.
const MAX_PROGRESS_CHARS: usize = 2_000;
/// Longest log message kept, in characters.
const MAX_LOG_CHARS: usize = 16_000;
/// Largest structured detail of a log event, in bytes.
const MAX_LOG_DATA: usize = 64 * 1024;

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

impl progress::Host for AgentState {
    async fn report(&mut self, kind: String, message: String) -> wasmtime::Result<()> {
        let entry = Progress {
            ts: now_ms(),
            kind: clip(&kind, 32),
            message: clip(&message, MAX_PROGRESS_CHARS),
        };
        let (records, id) = (
            self.agent.services.records.clone(),
            self.agent.agent_id.clone(),
        );
        run_blocking(move || {
            records.update(&id, |r| {
                r.progress.push(entry);
                true
            })
        })
        .await
        .map_err(wasmtime::Error::msg)?;
        Ok(())
    }

    async fn log(
        &mut self,
        kind: progress::LogKind,
        message: String,
        data_json: Option<String>,
    ) -> wasmtime::Result<()> {
        let kind = match kind {
            progress::LogKind::Thinking => "thinking",
            progress::LogKind::ToolUse => "tool_use",
            progress::LogKind::ToolResult => "tool_result",
        };
        let data = data_json
            .filter(|d| d.len() <= MAX_LOG_DATA)
            .and_then(|d| serde_json::from_str::<Value>(&d).ok());
        let message = clip(&message, MAX_LOG_CHARS);
        let (records, id) = (
            self.agent.services.records.clone(),
            self.agent.agent_id.clone(),
        );
        run_blocking(move || records.append_log(&id, kind, message, data))
            .await
            .map_err(wasmtime::Error::msg)?;
        Ok(())
    }
}
