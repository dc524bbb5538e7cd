//! `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of everything served. It is a
//! checked-in file (`openapi.json` beside this one), kept true by the end-to-end test that
//! drives every route and checks each response against it.

use axum::{http::header, response::IntoResponse};

/// The document, verbatim.
pub const DOCUMENT: &str = include_str!("openapi.json");

/// Serves the document; no key needed (it describes, it reveals nothing).
pub async fn document() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], DOCUMENT)
}
