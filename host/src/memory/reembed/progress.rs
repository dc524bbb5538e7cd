//! Where a re-embedding stands, for `/readyz` and `/metrics`: read from atomics the
//! re-embedder updates after each batch, so a report costs nothing.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use serde::Serialize;

use super::Standing;

/// A re-embedding's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReembedState {
    /// Asked for, not started yet.
    Pending,
    /// Embedding the stored versions with the target model.
    Running,
    /// The target model's vectors serve; nothing is left to do.
    Done,
    /// The last step failed; it is tried again shortly (the log says why).
    Failed,
}

impl ReembedState {
    pub const ALL: [Self; 4] = [Self::Pending, Self::Running, Self::Done, Self::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }
}

/// A re-embedding's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReembedReport {
    pub state: ReembedState,
    /// The recorded embedder's identity, serving until the flip.
    pub from: String,
    /// The target's.
    pub to: String,
    /// Versions with a vector of the target model.
    pub done: u64,
    /// Versions to re-embed in all.
    pub total: u64,
    /// Why the last step failed, while `state` is `failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A re-embedding's progress, shared by the re-embedder and the reports.
#[derive(Debug)]
pub struct Progress {
    from: String,
    to: String,
    state: Mutex<(ReembedState, Option<String>)>,
    done: AtomicU64,
    total: AtomicU64,
}

impl Progress {
    /// A re-embedding from `from` to `to`, pending.
    pub fn new(from: String, to: String) -> Self {
        Self {
            from,
            to,
            state: Mutex::new((ReembedState::Pending, None)),
            done: AtomicU64::new(0),
            total: AtomicU64::new(0),
        }
    }

    /// Standing at `standing`, in whatever state it is (the count found at open).
    pub fn counted(&self, standing: Standing) {
        // A version removed for good after it was re-embedded keeps its side vector
        // until the flip: never report more done than there is.
        let total = standing.total;
        self.total.store(total, Ordering::Relaxed);
        self.done.store(standing.done.min(total), Ordering::Relaxed);
    }

    /// Running, and standing at `standing`.
    pub fn stood(&self, standing: Standing) {
        self.counted(standing);
        *self.state.lock() = (ReembedState::Running, None);
    }

    /// The last step failed with `error`.
    pub fn failed(&self, error: &dyn std::fmt::Display) {
        *self.state.lock() = (ReembedState::Failed, Some(error.to_string()));
    }

    /// Flipped: every one of `total` versions has the target's vector.
    pub fn finished(&self, total: u64) {
        self.total.store(total, Ordering::Relaxed);
        self.done.store(total, Ordering::Relaxed);
        *self.state.lock() = (ReembedState::Done, None);
    }

    pub fn report(&self) -> ReembedReport {
        let (state, error) = self.state.lock().clone();
        ReembedReport {
            state,
            from: self.from.clone(),
            to: self.to.clone(),
            done: self.done.load(Ordering::Relaxed),
            total: self.total.load(Ordering::Relaxed),
            error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_follow_the_steps_and_never_show_more_done_than_there_is() {
        let progress = Progress::new("a:m:4".into(), "a:n:4".into());
        assert_eq!(progress.report().state, ReembedState::Pending);
        progress.stood(Standing {
            position: 9,
            done: 12,
            total: 10,
        });
        let report = progress.report();
        assert_eq!(
            (report.state, report.done, report.total),
            (ReembedState::Running, 10, 10)
        );
        progress.failed(&"disk full");
        let report = progress.report();
        assert_eq!(
            (report.state, report.error.as_deref()),
            (ReembedState::Failed, Some("disk full"))
        );
        progress.finished(11);
        let json = serde_json::to_value(progress.report()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"state": "done", "from": "a:m:4", "to": "a:n:4", "done": 11, "total": 11})
        );
    }
}
