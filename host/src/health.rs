//! Readiness of a starting server, for `GET /readyz`: the server answers HTTP before its
//! state is loaded, and is ready once the embedder is loaded, the memory indexes have caught
//! up with the database, and the agent runtime is up. The Mind's check rides along as
//! information only: a provider outage must not mark the server unready, or a load balancer
//! would take memory traffic (which needs no Mind) away from it.

use parking_lot::Mutex;
use serde::Serialize;

use crate::mind::MindCheck;

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
}

impl Report {
    /// Every part is ready.
    pub fn ready(&self) -> bool {
        self.status == "ready"
    }
}

/// The readiness of one server, shared by its loader and its health routes.
#[derive(Debug)]
pub struct Readiness {
    checks: Mutex<Checks>,
    mind: Mutex<MindCheck>,
}

impl Readiness {
    /// Nothing loaded yet; the Mind as `mind` says (until [`Readiness::set_mind`]).
    pub fn new(mind: MindCheck) -> Self {
        Self {
            checks: Mutex::new(Checks::default()),
            mind: Mutex::new(mind),
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
}
