//! The door: the only way from a guest's call to what lies outside its sandbox — the Mind,
//! memory, the agent's record and log, and every service added after them.
//!
//! An agent's context holds its services behind a [`Door`] whose one opener is private to
//! the journal: `AgentState::journaled` opens it for a live call, after the call is known
//! not to be answered from the journal, and hands the services to the call's live half. A
//! host function cannot reach a service any other way, so one that forgets the journal
//! does not compile, and a replayed call never reaches outside (tested with a door that
//! panics when opened: `poisoned_tests`).
//!
//! The supervisor's own work around a run (its admission, its end, extraction after it)
//! is not a guest's call: it holds the runtime's services, not the agent's door.

use std::sync::Arc;

use crate::runtime::state::Services;

/// The services one agent's calls reach, opened only by its journal.
pub struct Door {
    services: Arc<Services>,
    /// Shut: opening it panics (a replay that must reach nothing outside).
    #[cfg(test)]
    shut: bool,
}

impl Door {
    pub(in crate::runtime) fn new(services: Arc<Services>) -> Self {
        Self {
            services,
            #[cfg(test)]
            shut: false,
        }
    }

    /// A door that panics when opened: a run on it must be answered by its journal alone.
    #[cfg(test)]
    pub(in crate::runtime) fn shut(services: Arc<Services>) -> Self {
        Self {
            services,
            shut: true,
        }
    }

    /// Whether the Mind answers a conversation alike every time, for free (the offline
    /// one): what kind of call a completion is, decided before the journal is asked.
    pub fn mind_answers_alike(&self) -> bool {
        self.services.mind.answers_alike()
    }

    /// The largest request body a guest's outgoing request may have (`[egress]`).
    pub fn max_request_bytes(&self) -> u64 {
        self.services.egress.max_request_bytes()
    }

    /// The services, for a call being made live (`journaled` alone calls this).
    pub(super) fn open(&self) -> Arc<Services> {
        #[cfg(test)]
        assert!(
            !self.shut,
            "a call reached outside the sandbox through a shut door"
        );
        self.services.clone()
    }
}
