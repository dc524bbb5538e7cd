//! The MCP server at `/mcp` (Model Context Protocol, streamable HTTP transport, built with
//! the official SDK `rmcp`): any MCP client reaches an account's memory, agents and tools
//! with the account's API key. A thin adapter: the memory tools are the guest SDK's own, run over
//! the host side agents reach ([`crate::runtime::account_memory`]); the agent and tool tools
//! are the operations the REST routes call too. `/mcp` is not a JSON API route, so it is
//! not in the OpenAPI document.
//!
//! Every HTTP request to `/mcp` is authenticated ([`auth`]), not just a session's first:
//! a revoked key is refused on its session's next request, and each tool call acts for the
//! key of the request that carries it — which must be the key that opened the session
//! ([`sessions`], which also bounds an account's sessions and event streams).

mod agents;
mod auth;
mod memory;
mod server;
mod sessions;
mod tools;

pub use sessions::Sessions;

use std::sync::Arc;

use axum::{Router, middleware};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};

use crate::{app::AppState, server::in_flight};

/// The path the MCP endpoint is served at.
pub const PATH: &str = "/mcp";

/// Ends the MCP sessions (their event streams would otherwise hold a graceful shutdown open).
#[derive(Debug, Clone)]
pub struct Closer(tokio_util::sync::CancellationToken);

impl Closer {
    /// Closes every session and refuses new requests.
    pub fn close(&self) {
        self.0.cancel();
    }
}

/// `/mcp` as a router to merge into the API's, what closes its sessions at shutdown, and
/// its sessions (for the live counts `wasmind usage` shows).
pub fn router(state: AppState) -> (Router, Closer, Arc<Sessions>) {
    // Every request carries an API key, so a page that rebinds a name to this host still
    // holds no key: `Host` checks (rmcp's default admits loopback names only) would only
    // refuse the names a public deployment is reached by.
    let config = StreamableHttpServerConfig::default().disable_allowed_hosts();
    let closer = Closer(config.cancellation_token.clone());
    let (keys, in_flight) = (state.keys.clone(), state.in_flight.clone());
    let manager = Arc::new(LocalSessionManager::default());
    let plans = state.config.plans.clone();
    let streams = state.console.streams.clone();
    let sessions = Arc::new(Sessions::new(manager.clone(), plans, streams));
    let service = StreamableHttpService::new(
        move || Ok(server::Wasmind::new(state.clone())),
        manager,
        config,
    );
    // The last layer runs first: a slot for the request's place in flight, the key (and
    // the account's place), then its hold on the session.
    let router = Router::new()
        .route_service(PATH, service)
        .layer(middleware::from_fn_with_state(
            sessions.clone(),
            sessions::bind,
        ))
        .layer(middleware::from_fn_with_state(
            (keys, in_flight),
            auth::require_key,
        ))
        .layer(middleware::from_fn(in_flight::hold));
    (router, closer, sessions)
}
