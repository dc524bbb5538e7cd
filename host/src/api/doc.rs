//! The OpenAPI 3.1 document and the reference page.
//!
//! The document is generated: the base here (info, the bearer scheme, the error envelope)
//! and one entry per handler, registered with its route through `OpenApiRouter` (see
//! `super::app`), so a route cannot be served without being documented. The request and
//! response types' schemas carry the bounds the server enforces (see `crate::app::schema`). It
//! is served at `GET /api/v1/openapi.json`, and Swagger UI — its assets compiled into the
//! binary, nothing fetched from elsewhere — at `/api/v1/docs/`. Neither needs a key.

// utoipa's derive and path macro name this module's own types by paths that this lint
// calls redundant; the code written here has none.
#![allow(unused_qualifications)]

use std::sync::Arc;

use axum::{
    extract::Path,
    http::header,
    response::{IntoResponse, Redirect, Response},
};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::{
    Modify, OpenApi, ToSchema,
    openapi::{
        self,
        security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
    },
};
use utoipa_swagger_ui::Config;

use super::console::KeyQuotaDetails;
use crate::{
    app::{
        AppError, RequestLimitDetails, StreamLimitDetails,
        agents::{
            ConcurrentLimitDetails, MonthlyQuotaDetails, RateLimitDetails,
            components::UploadRateDetails,
        },
        memory::{
            ConsolidateRateLimitDetails, ImportQuotaDetails, QuotaDetails, TokenQuotaDetails,
        },
        tools::ToolDeniedDetails,
    },
    egress::EgressConfig,
    tools::Registration,
};

/// The error envelope of every error response.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Error)]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
}

/// One error: a stable code, a message that says what to fix, and structured details.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// Stable identifier to branch on.
    pub code: String,
    /// For humans; says what to fix. May change.
    #[schema(min_length = 1)]
    pub message: String,
    /// Structured context: `field` (the body field at fault, for `invalid_<field>`),
    /// `parameter` (the query parameter at fault, for `invalid_query`), `limit`/`used`
    /// (quotas), `reason`, `plan`, … as each route describes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Object)]
    pub details: Option<Value>,
}

/// The base of the document; the routes add their paths and schemas.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "wasmind",
        description = "The wasmind API (`/api/v1`): the long-term memory store and the agents \
            that use it. Every request needs `Authorization: Bearer <API key>` except this \
            document (GET /api/v1/openapi.json), its reference page (GET /api/v1/docs/) and \
            the payment provider's webhook (POST /api/v1/billing/webhook, signed instead). \
            All responses, errors included, are JSON; errors use the envelope \
            `{ \"error\": { \"code\", \"message\", \"details\"? } }`. Clients must ignore \
            response fields they don't know: fields are added within v1. A path not listed \
            here answers 404 `route_not_found`; a listed path with a method not listed \
            answers 405 `method_not_allowed`. Any request may be answered 429 \
            `connection_limit_reached` (with `Retry-After` and `details.maxConnectionsPerAddress`) \
            before it is read, and its connection closed, when its client's address has the \
            server's maximum of connections open.",
        license(name = "Apache-2.0", identifier = "Apache-2.0")
    ),
    paths(document, page, index, file),
    modifiers(&BearerAuth, &IdToken),
    security(("bearerAuth" = [])),
    components(schemas(
        ErrorEnvelope,
        QuotaDetails,
        ImportQuotaDetails,
        ConsolidateRateLimitDetails,
        MonthlyQuotaDetails,
        TokenQuotaDetails,
        ConcurrentLimitDetails,
        RateLimitDetails,
        KeyQuotaDetails,
        StreamLimitDetails,
        UploadRateDetails,
        ToolDeniedDetails,
        RequestLimitDetails,
    )),
    tags(
        (name = "memory", description = "Long-term memory: write, read, search, tidy, move"),
        (name = "agents", description = "Sandboxed agents: spawn, watch, stop"),
        (name = "tools", description = "The tools an account's agents may call: HTTP \
            endpoints and remote MCP servers, reached through the host's egress policy"),
        (name = "console", description = "The console's API: the signed-in account's keys, \
            agents (with a live event stream), memories and usage; signed in with an ID token, \
            not an API key"),
        (name = "billing", description = "Plans that pay: a checkout at the payment \
            provider, its customer portal, the account's subscription, and the provider's \
            signed webhook (keyless; its signature is its authentication)"),
        (name = "meta", description = "This document and its reference page"),
    )
)]
pub struct ApiDoc;

/// Adds the `bearerAuth` scheme every keyed route names.
struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, doc: &mut openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearerAuth",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "`Authorization: Bearer <key>`; keys (`wm_` + 64 hex digits) are \
                         created with `wasmind keys create`. A missing, malformed, unknown or \
                         revoked key is 401 `invalid_api_key`.",
                    ))
                    .build(),
            ),
        );
    }
}

/// Adds the `idToken` scheme the console routes name.
struct IdToken;

impl Modify for IdToken {
    fn modify(&self, doc: &mut openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "idToken",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "`Authorization: Bearer <ID token>`: an OpenID Connect ID token (RS256 \
                         or ES256) of the configured identity provider, or one that `wasmind \
                         console login` signed with the server's own key. None is 401 \
                         `missing_id_token`; an expired, untrusted, misaddressed, badly signed \
                         or malformed one, an API key, or one naming an unknown account is 401 \
                         `invalid_id_token`. The event stream also takes `?id_token=`.",
                    ))
                    .build(),
            ),
        );
    }
}

/// The document as served: the generated one, with the responses every keyed route shares
/// (`shared_responses`), each error response's codes (listed in
/// its description as "Codes: `a`, `b`.") made the `enum` of `error.code`, its details
/// schema (named as "Details: Name." or, for codes of different details, "Details: A or
/// B.") required, and the answers to requests no route matches under
/// `x-unmatched-requests`.
pub fn finish(doc: &openapi::OpenApi) -> Value {
    let mut doc = serde_json::to_value(doc).expect("the OpenAPI document serializes");
    super::shared_responses::add(&mut doc);
    if let Some(paths) = doc["paths"].as_object_mut() {
        for operation in paths.values_mut().filter_map(Value::as_object_mut) {
            for op in operation.values_mut() {
                let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
                    continue;
                };
                for (status, response) in responses.iter_mut() {
                    if status.starts_with('4') || status.starts_with('5') {
                        name_error_codes(response);
                    }
                }
            }
        }
    }
    doc["x-unmatched-requests"] = json!({
        "404": unmatched("A path no route serves. Codes: `route_not_found`."),
        "405": unmatched("A served path with a method it does not take. Codes: `method_not_allowed`."),
    });
    doc
}

/// Writes the bounds this host's configuration sets into the document it serves, so that
/// what the document allows is what this server takes: a tool's `timeout_secs` is at most
/// `[egress] total_timeout_secs`.
pub fn bind_to_host(doc: &mut Value, egress: &EgressConfig) {
    let registration = format!("/components/schemas/{}", Registration::name());
    let registration =
        (doc.pointer_mut(&registration)).expect("the document has the tools' registration");
    set_maximum(registration, "timeout_secs", egress.total_timeout_secs);
}

/// Sets `maximum` of every property `name` in `schema`, at any depth (each kind of a
/// `oneOf` has its own).
fn set_maximum(schema: &mut Value, name: &str, max: f64) {
    match schema {
        Value::Object(map) => {
            if let Some(property) = map.get_mut("properties").and_then(|p| p.get_mut(name)) {
                property["maximum"] = json!(max);
            }
            map.values_mut().for_each(|v| set_maximum(v, name, max));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| set_maximum(v, name, max)),
        _ => {}
    }
}

fn unmatched(description: &str) -> Value {
    let mut response = json!({
        "description": description,
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } },
    });
    name_error_codes(&mut response);
    response
}

/// The backticked words of `description` after `label`, up to the next full stop.
fn listed<'a>(description: &'a str, label: &str) -> Vec<&'a str> {
    let Some((_, rest)) = description.split_once(label) else {
        return Vec::new();
    };
    let list = rest.split(". ").next().unwrap_or(rest);
    list.split('`').skip(1).step_by(2).collect()
}

fn name_error_codes(response: &mut Value) {
    let description = response["description"].as_str().unwrap_or_default();
    let codes = listed(description, "Codes:");
    let details: Option<Vec<Value>> = description.split_once("Details: ").map(|(_, rest)| {
        rest.trim_end_matches('.')
            .split(" or ")
            .map(|name| json!({ "$ref": format!("#/components/schemas/{name}") }))
            .collect()
    });
    let mut error =
        json!({ "type": "object", "properties": { "code": { "type": "string", "enum": codes } } });
    if let Some(mut schemas) = details {
        error["properties"]["details"] = match schemas.len() {
            1 => schemas.remove(0),
            _ => json!({ "anyOf": schemas }),
        };
        error["required"] = json!(["details"]);
    }
    response["content"]["application/json"]["schema"] = json!({
        "allOf": [
            { "$ref": "#/components/schemas/Error" },
            { "type": "object", "properties": { "error": error } },
        ],
    });
}

/// The served document, rendered once.
#[derive(Clone)]
pub struct Served {
    json: Arc<str>,
    page: Arc<Config<'static>>,
}

impl Served {
    pub fn new(doc: &Value) -> Self {
        let json = doc.to_string();
        let page = Config::from("/api/v1/openapi.json")
            .validator_url("none")
            .persist_authorization(true);
        Self {
            json: json.into(),
            page: Arc::new(page),
        }
    }
}

/// The OpenAPI document.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "meta", security(()),
    responses((status = 200, description = "this document", body = Object)))]
pub async fn document(served: Served) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        served.json.to_string(),
    )
        .into_response()
}

/// The reference page lives at `/api/v1/docs/`, so its assets' relative paths resolve.
#[utoipa::path(get, path = "/api/v1/docs", tag = "meta", security(()),
    responses((status = 303, description = "to the reference page, `/api/v1/docs/`",
        headers(("Location" = String, description = "/api/v1/docs/")))))]
pub async fn page() -> Redirect {
    Redirect::to("/api/v1/docs/")
}

/// The reference page (Swagger UI).
#[utoipa::path(get, path = "/api/v1/docs/", tag = "meta", security(()),
    responses((status = 200, description = "the reference page", body = String, content_type = "text/html")))]
pub async fn index(served: Served) -> Response {
    asset(&served, "")
}

/// One asset of the reference page.
#[utoipa::path(get, path = "/api/v1/docs/{file}", tag = "meta", security(()),
    params(("file" = String, Path, description = "an asset of the page, e.g. `swagger-ui.css`")),
    responses(
        (status = 200, description = "the asset"),
        (status = 404, description = "No such asset. Codes: `route_not_found`.", body = ErrorEnvelope),
    ))]
pub async fn file(served: Served, Path(file): Path<String>) -> Response {
    asset(&served, &file)
}

/// The page's asset `file` (the bundle is 1.45 MB: answered without a copy).
fn asset(served: &Served, file: &str) -> Response {
    match utoipa_swagger_ui::serve(file, served.page.clone()) {
        Ok(Some(found)) => (
            [(header::CONTENT_TYPE, found.content_type)],
            super::asset_body(found.bytes),
        )
            .into_response(),
        Ok(None) => super::not_found().into_response(),
        Err(e) => AppError::internal(&e).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole document, so a change to the contract shows in review.
    #[test]
    fn document_snapshot() {
        insta::assert_json_snapshot!("openapi", super::super::openapi());
    }

    /// Console routes take an ID token, every other keyed route an API key (the account's
    /// reads and management an ID token too); the payment provider's webhook is signed
    /// instead.
    #[test]
    fn only_the_document_its_page_and_the_webhook_need_no_key() {
        let doc = super::super::openapi();
        let mut keyless = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let security = op.get("security").unwrap_or(&doc["security"]);
                let open = security
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r.as_object().unwrap().is_empty());
                if open {
                    keyless.push(format!("{} {path}", method.to_uppercase()));
                } else if path.starts_with("/api/v1/console/") {
                    assert_eq!(security, &json!([{ "idToken": [] }]), "{method} {path}");
                } else {
                    let key = json!([{ "bearerAuth": [] }]);
                    let either = json!([{ "bearerAuth": [] }, { "idToken": [] }]);
                    assert!(*security == key || *security == either, "{method} {path}");
                }
            }
        }
        keyless.sort();
        assert_eq!(
            keyless,
            [
                "GET /api/v1/docs",
                "GET /api/v1/docs/",
                "GET /api/v1/docs/{file}",
                "GET /api/v1/openapi.json",
                "POST /api/v1/billing/webhook",
            ]
        );
    }

    #[test]
    fn error_codes_are_listed_from_the_description() {
        let mut response = json!({
            "description": "Too many. Codes: `a_b`, `c`. Details: QuotaDetails.",
        });
        name_error_codes(&mut response);
        let error =
            &response["content"]["application/json"]["schema"]["allOf"][1]["properties"]["error"];
        assert_eq!(error["properties"]["code"]["enum"], json!(["a_b", "c"]));
        assert_eq!(
            error["properties"]["details"]["$ref"],
            "#/components/schemas/QuotaDetails"
        );
    }

    /// The reference page and its script load nothing from another host.
    #[tokio::test]
    async fn the_page_fetches_nothing_from_elsewhere() {
        let served = Served::new(&super::super::openapi());
        for file in ["", "index.html", "swagger-initializer.js"] {
            let response = asset(&served, file);
            assert_eq!(response.status(), 200, "{file:?}");
            let body = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .unwrap();
            let text = String::from_utf8(body.to_vec()).unwrap();
            assert!(
                !text.contains("http://") && !text.contains("https://"),
                "{file:?} names another host:\n{text}"
            );
        }
        let missing = asset(&served, "nope.js");
        assert_eq!(missing.status(), 404);
    }
}
