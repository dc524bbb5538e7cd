//! What the agent tells its caller while it works (WIT interface `progress`): progress
//! entries on the agent record, and events on its log stream.

use std::{fmt, sync::Arc};

use serde_json::Value;

/// Kinds of log events an agent writes (the host adds `terminal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    /// What the Mind said or planned.
    Thinking,
    /// A tool call: name and arguments.
    ToolUse,
    /// What a tool call returned.
    ToolResult,
}

impl LogKind {
    /// The name the log stream shows: `thinking`, `tool_use` or `tool_result`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wasmind_sdk::LogKind::ToolUse.as_str(), "tool_use");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            LogKind::Thinking => "thinking",
            LogKind::ToolUse => "tool_use",
            LogKind::ToolResult => "tool_result",
        }
    }
}

/// Where reports go: the host's `progress` import, or a test recorder.
pub(crate) trait ProgressBackend: Send + Sync {
    fn report(&self, kind: &str, message: &str);
    fn log(&self, kind: LogKind, message: &str, data: Option<Value>);
}

/// Progress entries and log events. Cheap to clone; never fails.
#[derive(Clone)]
pub struct Progress {
    backend: Arc<dyn ProgressBackend>,
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Progress")
    }
}

impl Progress {
    pub(crate) fn new(backend: Arc<dyn ProgressBackend>) -> Self {
        Self { backend }
    }

    /// Adds a progress entry to the agent record; `kind` is e.g. `info` or `tool_use`.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::testing::TestContext;
    ///
    /// let t = TestContext::default();
    /// t.ctx().progress().report("info", "halfway there");
    /// assert_eq!(t.progress().reports(), [("info".to_string(), "halfway there".to_string())]);
    /// ```
    pub fn report(&self, kind: &str, message: &str) {
        self.backend.report(kind, message);
    }

    /// Appends an event to the agent's log stream, with optional structured detail.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::json;
    /// use wasmind_sdk::{LogKind, testing::TestContext};
    ///
    /// let t = TestContext::default();
    /// t.ctx().progress().log(LogKind::Thinking, "First, recall the user's name.", None);
    /// t.ctx().progress().log(LogKind::ToolUse, "lookup", Some(json!({"q": "name"})));
    /// let logs = t.progress().logs();
    /// assert_eq!(logs[1].kind, LogKind::ToolUse);
    /// assert_eq!(logs[1].data, Some(json!({"q": "name"})));
    /// ```
    pub fn log(&self, kind: LogKind, message: &str, data: Option<Value>) {
        self.backend.log(kind, message, data);
    }
}
