//! `ProgressRecorder`: keeps every progress entry and log event.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;

use crate::{LogKind, progress::ProgressBackend};

/// One log event the agent wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEntry {
    pub kind: LogKind,
    pub message: String,
    pub data: Option<Value>,
}

#[derive(Debug, Default)]
struct Recorded {
    reports: Vec<(String, String)>,
    logs: Vec<LogEntry>,
}

/// Records progress entries and log events, in order. Cheap to clone; clones share the
/// record.
///
/// # Examples
///
/// ```
/// use wasmind_sdk::{LogKind, testing::TestContext};
///
/// let t = TestContext::default();
/// t.ctx().progress().report("info", "start");
/// t.ctx().progress().log(LogKind::Thinking, "hmm", None);
/// assert_eq!(t.progress().reports_of("info"), ["start"]);
/// assert_eq!(t.progress().logs_of(LogKind::Thinking), ["hmm"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ProgressRecorder {
    recorded: Arc<Mutex<Recorded>>,
}

impl ProgressRecorder {
    /// Every progress entry as `(kind, message)`, oldest first.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = wasmind_sdk::testing::TestContext::default();
    /// t.ctx().progress().report("tool_use", "service_memory_get");
    /// assert_eq!(t.progress().reports(), [("tool_use".into(), "service_memory_get".into())]);
    /// ```
    pub fn reports(&self) -> Vec<(String, String)> {
        self.lock().reports.clone()
    }

    /// The messages of the progress entries of `kind`, oldest first.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = wasmind_sdk::testing::TestContext::default();
    /// t.ctx().progress().report("info", "a");
    /// t.ctx().progress().report("tool_use", "b");
    /// assert_eq!(t.progress().reports_of("tool_use"), ["b"]);
    /// ```
    pub fn reports_of(&self, kind: &str) -> Vec<String> {
        let recorded = self.lock();
        let of_kind = recorded.reports.iter().filter(|(k, _)| k == kind);
        of_kind.map(|(_, m)| m.clone()).collect()
    }

    /// Every log event, oldest first.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{LogKind, testing::TestContext};
    ///
    /// let t = TestContext::default();
    /// t.ctx().progress().log(LogKind::ToolResult, "{\"deleted\":true}", None);
    /// assert_eq!(t.progress().logs()[0].kind, LogKind::ToolResult);
    /// ```
    pub fn logs(&self) -> Vec<LogEntry> {
        self.lock().logs.clone()
    }

    /// The messages of the log events of `kind`, oldest first.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{LogKind, testing::TestContext};
    ///
    /// let t = TestContext::default();
    /// t.ctx().progress().log(LogKind::Thinking, "plan", None);
    /// assert_eq!(t.progress().logs_of(LogKind::Thinking), ["plan"]);
    /// ```
    pub fn logs_of(&self, kind: LogKind) -> Vec<String> {
        let recorded = self.lock();
        let of_kind = recorded.logs.iter().filter(|e| e.kind == kind);
        of_kind.map(|e| e.message.clone()).collect()
    }

    fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.recorded.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ProgressBackend for ProgressRecorder {
    fn report(&self, kind: &str, message: &str) {
        self.lock()
            .reports
            .push((kind.to_string(), message.to_string()));
    }

    fn log(&self, kind: LogKind, message: &str, data: Option<Value>) {
        self.lock().logs.push(LogEntry {
            kind,
            message: message.to_string(),
            data,
        });
    }
}
