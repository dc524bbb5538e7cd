//! The HTTP API (axum): routes of the specification under `/api/v1`, the bearer-key
//! extractor, the error envelope, and the OpenAPI document. Handlers translate between
//! JSON and the domain types and nothing more; nothing below this module knows HTTP.

mod agents;
mod auth;
mod cursor;
mod error;
mod extract;
mod fields;
mod memory;
mod openapi;
mod refusal;
mod views;

use std::sync::Arc;

use axum::{
    Router,
    extract::DefaultBodyLimit,
    http::StatusCode,
    routing::{get, post},
};

pub use error::{ApiError, ApiResult};

use crate::{
    accounts::{KeyStore, UsageStore},
    config::Config,
    memory::MemoryService,
    mind::Mind,
    runtime::{AgentStore, Runtime},
};

/// Largest request body accepted, except for import.
const BODY_LIMIT: usize = 1 << 20;
/// Largest import body: 10,000 memories of a few hundred characters each.
const IMPORT_BODY_LIMIT: usize = 64 << 20;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub keys: KeyStore,
    pub memory: MemoryService,
    pub config: Arc<Config>,
    pub runtime: Runtime,
    pub records: AgentStore,
    pub usage: UsageStore,
    /// The Mind, for the host's own jobs (consolidation summaries).
    pub mind: Arc<dyn Mind>,
}

/// The whole API as a router, ready to serve (or to drive with `oneshot` in tests).
pub fn app(state: AppState) -> Router {
    Router::new()
        .route(
            "/api/v1/memory",
            post(memory::put).get(memory::get).delete(memory::delete),
        )
        .route("/api/v1/memory/history", get(memory::history))
        .route("/api/v1/memory/search", post(memory::search))
        .route("/api/v1/memory/list", get(memory::list))
        .route("/api/v1/memory/dedupe", post(memory::dedupe))
        .route("/api/v1/memory/consolidate", post(memory::consolidate))
        .route("/api/v1/memory/namespaces", get(memory::namespaces))
        .route("/api/v1/memory/export", get(memory::export))
        .route(
            "/api/v1/memory/import",
            post(memory::import).layer(DefaultBodyLimit::max(IMPORT_BODY_LIMIT)),
        )
        .route("/api/v1/agents", post(agents::spawn).get(agents::list))
        .route("/api/v1/agents/{id}", get(agents::get).delete(agents::stop))
        .route("/api/v1/agents/{id}/logs", get(agents::logs))
        .route("/api/v1/openapi.json", get(openapi::document))
        .fallback(|| async { not_found() })
        .method_not_allowed_fallback(|| async { method_not_allowed() })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}

fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "route_not_found",
        "no such route; see GET /api/v1/openapi.json for the routes served",
    )
}

fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not accept that method; see GET /api/v1/openapi.json",
    )
}
