//! Readiness of a starting server, for `GET /readyz`: the server answers HTTP before its
//! state is loaded, and is ready once the embedder is loaded, the memory indexes have caught
//! up with the database, and the agent runtime is up. The Mind's check rides along as
//! information only: a provider outage must not mark the server unready, or a load balancer
//! would take memory traffic (which needs no Mind) away from it.
//!
//! Anyone may ask, so the public report holds states only ([`Report::public`]); the
//! Mind's provider, model and the words of its check (which may quote a provider's error)
//! are for a request with a valid API key, and the server log.

use std::sync::Arc;

use parking_lot::Mutex;
use serde::Serialize;

use crate::memory::reembed::{Progress, ReembedReport, ReembedState};
use crate::mind::{MindCheck, MindStatus};

/// A part the server needs before it can serve the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The sentence embedder is loaded.
    Embedder,
    /// The keyword and vector indexes replayed the database's changes.
    Indexes,
    /// The agent runtime compiled the agent component and started, and the API on it is
    /// being served.
    Runtime,
}

/// Where one part stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PartState {
    #[default]
    Loading,
    Ready,
}

/// Each part's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct Checks {
    pub embedder: PartState,
    pub indexes: PartState,
    pub runtime: PartState,
}

/// What `/readyz` says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// `ready` or `loading`.
    pub status: &'static str,
    pub checks: Checks,
    /// The Mind's check: information, not a condition of readiness.
    pub mind: MindCheck,
    /// The memories' re-embedding with another embedder, when one was asked for at this
    /// start: information, not a condition of readiness (the recorded embedder serves).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reembed: Option<ReembedReport>,
}

/// What `/readyz` says to a request without a valid key: states only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PublicReport {
    /// `ready` or `loading`.
    pub status: &'static str,
    pub checks: Checks,
    /// The Mind's check, its state alone.
    pub mind: MindState,
    /// The re-embedding's state alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reembed: Option<ReembedPublic>,
}

/// A re-embedding's state, without its models and counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ReembedPublic {
    pub state: ReembedState,
}

/// The Mind's state, without what the check found.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MindState {
    pub status: MindStatus,
}

impl Report {
    /// Every part is ready.
    pub fn ready(&self) -> bool {
        self.status == "ready"
    }

    /// The report without the Mind's provider, model and message.
    pub fn public(&self) -> PublicReport {
        PublicReport {
            status: self.status,
            checks: self.checks,
            mind: MindState {
                status: self.mind.status,
            },
            reembed: (self.reembed.as_ref()).map(|r| ReembedPublic { state: r.state }),
        }
    }
}

/// The readiness of one server, shared by its loader and its health routes.
#[derive(Debug)]
pub struct Readiness {
    checks: Mutex<Checks>,
    mind: Mutex<MindCheck>,
    reembed: Mutex<Option<Arc<Progress>>>,
}

impl Readiness {
    /// Nothing loaded yet; the Mind as `mind` says (until [`Readiness::set_mind`]).
    pub fn new(mind: MindCheck) -> Self {
        Self {
            checks: Mutex::new(Checks::default()),
            mind: Mutex::new(mind),
            reembed: Mutex::new(None),
        }
    }

    /// Marks `part` ready.
    pub fn mark(&self, part: Part) {
        let mut checks = self.checks.lock();
        let state = match part {
            Part::Embedder => &mut checks.embedder,
            Part::Indexes => &mut checks.indexes,
            Part::Runtime => &mut checks.runtime,
        };
        *state = PartState::Ready;
    }

    /// Reports the memories' re-embedding from now on.
    pub fn set_reembed(&self, progress: Arc<Progress>) {
        *self.reembed.lock() = Some(progress);
    }

    /// Records the Mind's check.
    pub fn set_mind(&self, check: MindCheck) {
        *self.mind.lock() = check;
    }

    /// Where everything stands now.
    pub fn report(&self) -> Report {
        let checks = *self.checks.lock();
        let all = [checks.embedder, checks.indexes, checks.runtime];
        Report {
            status: if all.iter().all(|s| *s == PartState::Ready) {
                "ready"
            } else {
                "loading"
            },
            checks,
            mind: self.mind.lock().clone(),
            reembed: self.reembed.lock().as_ref().map(|p| p.report()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mind::{MindConfig, MindStatus};

    #[test]
    fn ready_once_every_part_is_whatever_the_mind_says() {
        let readiness = Readiness::new(MindCheck::checking(&MindConfig::default()));
        let report = readiness.report();
        assert!(!report.ready());
        assert_eq!(report.checks, Checks::default());
        readiness.mark(Part::Embedder);
        readiness.mark(Part::Indexes);
        let report = readiness.report();
        assert!(!report.ready());
        assert_eq!(report.checks.indexes, PartState::Ready);
        assert_eq!(report.checks.runtime, PartState::Loading);
        readiness.mark(Part::Runtime);
        readiness.set_mind(MindCheck {
            status: MindStatus::KeyRejected,
            ..MindCheck::checking(&MindConfig::default())
        });
        let report = readiness.report();
        assert!(
            report.ready(),
            "a refused Mind key does not make the server unready"
        );
        assert_eq!(report.mind.status, MindStatus::KeyRejected);
        assert_eq!(
            serde_json::to_value(&report).unwrap()["checks"],
            serde_json::json!({"embedder": "ready", "indexes": "ready", "runtime": "ready"})
        );
    }

    #[test]
    fn the_public_report_holds_states_only() {
        let readiness = Readiness::new(MindCheck::checking(&MindConfig::default()));
        readiness.set_mind(MindCheck {
            status: MindStatus::Unreachable,
            message: "provider said: internal host db-7.corp refused".into(),
            ..MindCheck::checking(&MindConfig::default())
        });
        let public = serde_json::to_value(readiness.report().public()).unwrap();
        assert_eq!(
            public,
            serde_json::json!({
                "status": "loading",
                "checks": {"embedder": "loading", "indexes": "loading", "runtime": "loading"},
                "mind": {"status": "unreachable"},
            })
        );
        let progress = Arc::new(Progress::new("onnx:a:384".into(), "onnx:b:384".into()));
        readiness.set_reembed(progress);
        let report = readiness.report();
        assert_eq!(report.reembed.as_ref().unwrap().from, "onnx:a:384");
        let public = serde_json::to_value(report.public()).unwrap();
        assert_eq!(public["reembed"], serde_json::json!({"state": "pending"}));
    }
}
