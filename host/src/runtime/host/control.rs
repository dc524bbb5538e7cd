//! `control`: whether a stop was requested.

use crate::runtime::{bindings::control, journal::Call, state::AgentState};

impl control::Host for AgentState {
    async fn stop_requested(&mut self) -> wasmtime::Result<bool> {
        let call = Call::read("control.stop-requested", &());
        self.journaled(call, |s, _| {
            Box::pin(std::future::ready(Ok(s.agent.stop.requested())))
        })
        .await
    }
}
