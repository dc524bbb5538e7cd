//! `control`: whether a stop was requested.

use crate::runtime::{bindings::control, state::AgentState};

impl control::Host for AgentState {
    async fn stop_requested(&mut self) -> wasmtime::Result<bool> {
        Ok(self.agent.stop.requested())
    }
}
