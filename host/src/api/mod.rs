//! The HTTP API (axum): routes of the specification under `/api/v1`, the bearer-key
//! extractor, the error envelope, and the OpenAPI document generated from the handlers'
//! request and response types. Handlers read a typed request, call the application layer
//! (`crate::app`: its operations, or the domain where one call is the whole rule), and
//! render its typed response or refusal; nothing below this module knows HTTP.

mod agents;
mod auth;
mod billing;
mod console;
mod descriptions;
mod doc;
mod egress;
mod error;
mod extract;
mod front;
mod memory;
mod metrics;
mod shared_responses;
mod tools;

use std::borrow::Cow;

use axum::{Router, body::Bytes, extract::DefaultBodyLimit, routing::get};
use utoipa::OpenApi;
use utoipa_axum::{router::OpenApiRouter, routes};

pub use front::{AppSlot, Loaded, front};
pub use metrics::mount as mount_metrics;

use crate::{
    app::{AppError, AppState, Kind},
    server::in_flight,
};

/// Largest request body accepted, except for import.
const BODY_LIMIT: usize = 1 << 20;
/// Largest import body: 10,000 memories of a few hundred characters each.
const IMPORT_BODY_LIMIT: usize = 64 << 20;

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
        .routes(routes!(console::events::events))
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
fn not_found() -> AppError {
    AppError::new(
        Kind::NotFound,
        "route_not_found",
        "no such route; see GET /api/v1/openapi.json for the routes served",
    )
}

fn method_not_allowed() -> AppError {
    AppError::new(
        Kind::MethodNotAllowed,
        "method_not_allowed",
        "this route does not accept that method; see GET /api/v1/openapi.json",
    )
}
