//! The HTTP API (axum): routes of the specification under `/api/v1`, the bearer-key
//! extractor, the error envelope, and the OpenAPI document generated from the handlers'
//! request and response types. Handlers read a typed request, call the domain, and render
//! a typed response; nothing below this module knows HTTP.

pub(crate) mod agents;
mod auth;
mod billing;
mod console;
mod cursor;
mod doc;
mod egress;
mod error;
mod extract;
mod front;
mod in_flight;
mod memory;
mod metrics;
pub(crate) mod params;
mod refusal;
mod schema;
mod shared_responses;
pub(crate) mod tools;
mod views;

use std::{borrow::Cow, sync::Arc};

use axum::{Router, body::Bytes, extract::DefaultBodyLimit, http::StatusCode, routing::get};
use utoipa::OpenApi;
use utoipa_axum::{router::OpenApiRouter, routes};

pub use auth::authenticate;
pub use error::{ApiError, ApiResult};
pub use front::{AppSlot, Loaded, front};
pub(crate) use in_flight::hold as hold_in_flight;
pub use in_flight::{InFlight, RequestLimitDetails};
pub use metrics::mount as mount_metrics;

use crate::{
    accounts::{Accounts, Ledger, Plan, PlanLimits, TokenBudgets},
    billing::Billing,
    config::Config,
    console::Console,
    memory::MemoryService,
    mind::Mind,
    runtime::{AgentStore, Runtime},
    tools::Tools,
};

/// Largest request body accepted, except for import.
const BODY_LIMIT: usize = 1 << 20;
/// Largest import body: 10,000 memories of a few hundred characters each.
const IMPORT_BODY_LIMIT: usize = 64 << 20;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub keys: Accounts,
    pub memory: MemoryService,
    pub config: Arc<Config>,
    pub runtime: Runtime,
    pub records: AgentStore,
    pub usage: Ledger,
    /// The plans' monthly Mind-token budgets, which the host's own Mind jobs check.
    pub budgets: TokenBudgets,
    /// The Mind, for the host's own jobs (consolidation summaries).
    pub mind: Arc<dyn Mind>,
    /// Console sign-in (ID tokens).
    pub console: Arc<Console>,
    /// Tenants' registered tools.
    pub tools: Arc<Tools>,
    /// Each account's requests in flight on this node, under its plan's bound.
    pub in_flight: InFlight,
    /// Checkout, portal and the payment provider's webhooks.
    pub billing: Arc<Billing>,
}

impl AppState {
    /// What `plan` allows: the one place every door (REST, MCP, the console) learns an
    /// account's limits from its plan.
    pub fn limits(&self, plan: Plan) -> &PlanLimits {
        self.config.plans.limits(plan)
    }
}

/// The whole API as a router, ready to serve (or to drive with `oneshot` in tests).
pub fn app(state: AppState) -> Router {
    let (api, document) = routes().split_for_parts();
    let mut document = doc::finish(&document);
    doc::bind_to_host(&mut document, &state.config.egress);
    let served = doc::Served::new(&document);
    let (d, i, f) = (served.clone(), served.clone(), served);
    api.route("/api/v1/openapi.json", get(move || doc::document(d)))
        .route("/api/v1/docs", get(doc::page))
        .route("/api/v1/docs/", get(move || doc::index(i)))
        .route("/api/v1/docs/{file}", get(move |file| doc::file(f, file)))
        .route("/console", get(console::page::index))
        .route("/console/", get(console::page::index))
        .route("/console/{file}", get(console::page::file))
        .fallback(|| async { not_found() })
        .method_not_allowed_fallback(|| async { method_not_allowed() })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn(in_flight::hold))
        .layer(axum::middleware::from_fn(metrics::track))
        .with_state(state)
}

/// The OpenAPI document, as served.
pub fn openapi() -> serde_json::Value {
    let mut document = doc::finish(&routes().into_openapi());
    doc::bind_to_host(&mut document, &crate::egress::EgressConfig::default());
    document
}

/// Every keyed route with its document entry: one declaration each.
fn routes() -> OpenApiRouter<AppState> {
    let (schemas, paths, import) = routes!(memory::import);
    OpenApiRouter::with_openapi(doc::ApiDoc::openapi())
        .routes(routes!(memory::put, memory::get, memory::delete))
        .routes(routes!(memory::history))
        .routes(routes!(memory::search))
        .routes(routes!(memory::list))
        .routes(routes!(memory::dedupe))
        .routes(routes!(memory::consolidate))
        .routes(routes!(memory::namespaces))
        .routes(routes!(memory::export))
        .routes((
            schemas,
            paths,
            import.layer(DefaultBodyLimit::max(IMPORT_BODY_LIMIT)),
        ))
        .routes(routes!(
            agents::components::upload,
            agents::components::list
        ))
        .routes(routes!(agents::components::get, agents::components::delete))
        .routes(routes!(agents::spawn, agents::list))
        .routes(routes!(agents::get, agents::stop))
        .routes(routes!(agents::logs))
        .routes(routes!(tools::create, tools::list))
        .routes(routes!(tools::get, tools::delete))
        .routes(routes!(tools::refresh))
        .routes(routes!(tools::call))
        .routes(routes!(egress::egress))
        .routes(routes!(billing::checkout))
        .routes(routes!(billing::portal))
        .routes(routes!(billing::subscription))
        .routes(routes!(billing::webhook))
        .routes(routes!(console::account::me))
        .routes(routes!(
            console::account::list_keys,
            console::account::create_key
        ))
        .routes(routes!(console::account::revoke_key))
        .routes(routes!(console::account::usage))
        .routes(routes!(console::billing::state))
        .routes(routes!(console::billing::checkout))
        .routes(routes!(console::billing::portal))
        .routes(routes!(console::reads::list_agents))
        .routes(routes!(console::reads::get_agent))
        .routes(routes!(console::events::events))
        .routes(routes!(console::reads::namespaces))
        .routes(routes!(console::reads::list_memories))
        .routes(routes!(console::reads::search))
        .routes(routes!(console::reads::history))
        .routes(routes!(console::reads::delete_memory))
        .routes(routes!(
            console::reads::list_tools,
            console::tools::create_tool
        ))
        .routes(routes!(console::tools::delete_tool))
        .routes(routes!(console::tools::refresh_tool))
        .routes(routes!(console::reads::egress))
}

/// An asset's bytes as a response body: one compiled into the binary is sent from there,
/// not copied — a client reading a large one slowly (the documentation's bundle is 1.45 MB)
/// would otherwise hold a copy as long as its connection; one made at run time is moved in.
fn asset_body(bytes: Cow<'static, [u8]>) -> Bytes {
    match bytes {
        Cow::Borrowed(compiled) => Bytes::from_static(compiled),
        Cow::Owned(made) => Bytes::from(made),
    }
}

/// 404 `route_not_found`.
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
