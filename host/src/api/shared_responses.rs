//! The error responses every keyed route shares, declared once here rather than in each
//! handler's `#[utoipa::path]`: a refused credential (401, in the words of the route's
//! scheme), a JSON body over the limit (413), the account's requests in flight at its
//! plan's bound (429, `crate::app::InFlight`), an unexpected error (500). A route that answers
//! one of these statuses otherwise (a larger body limit, another credential rule, a 429 of
//! its own) declares its own, which stands (and a 429 of its own names
//! `request_limit_reached` too).

use serde_json::{Map, Value, json};

use super::BODY_LIMIT;

/// 401 of a route keyed by an API key (`bearerAuth`).
const API_KEY_REFUSED: &str = "Missing, malformed (not `Bearer <key>`), unknown or revoked API \
    key. Codes: `invalid_api_key`.";
/// 401 of a console route (`idToken`).
const ID_TOKEN_REFUSED: &str = "No ID token (`missing_id_token`), or not a valid one of an \
    existing account: expired, untrusted issuer, another audience, bad signature, malformed, \
    or an API key (`invalid_id_token`, the message says which). Codes: `missing_id_token`, \
    `invalid_id_token`.";
/// 401 of a route that takes either credential: the account's reads and management, which
/// the console calls as the REST API's clients do (`crate::api::auth::AccountAuth`).
const EITHER_REFUSED: &str = "Missing, malformed, unknown or revoked API key \
    (`invalid_api_key`), or a credential shaped as an ID token (a JWT) that is not a valid one \
    of an existing account: expired, untrusted issuer, another audience, bad signature or \
    malformed (`invalid_id_token`, the message says which). Codes: `invalid_api_key`, \
    `invalid_id_token`.";
/// 429 of every keyed route.
const IN_FLIGHT: &str = "The account has its plan's `requests_in_flight` requests in flight \
    (event streams included); retry after Retry-After seconds. Codes: `request_limit_reached`. \
    Details: RequestLimitDetails.";
/// 500 of every keyed route.
const INTERNAL: &str = "Unexpected error; the message quotes a request id that the server \
    log carries with the cause. Codes: `internal_error`.";

/// Adds the shared responses to each keyed operation of `doc` (the generated document as
/// JSON) that does not declare its own: 401 for its security scheme, 500, and 413 when it
/// takes a JSON body. Routes open to all (the document and its page) get none.
pub fn add(doc: &mut Value) {
    let default_security = doc["security"].clone();
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    let too_large = format!(
        "The body is over {} MiB. Codes: `payload_too_large`.",
        BODY_LIMIT >> 20
    );
    for op in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut().filter_map(Value::as_object_mut))
    {
        let security = op.get("security").unwrap_or(&default_security);
        let Some(refused) = refused_credential(security) else {
            continue;
        };
        let json_body = op
            .get("requestBody")
            .is_some_and(|b| b["content"].get("application/json").is_some());
        let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
            continue;
        };
        insert(responses, "401", refused);
        insert(responses, "500", INTERNAL);
        if !responses.contains_key("429") {
            insert(responses, "429", IN_FLIGHT);
            responses["429"]["headers"] = json!({ "Retry-After": {
                "description": "seconds to wait",
                "schema": { "type": "integer", "format": "int64", "minimum": 0 },
            }});
        }
        if json_body {
            insert(responses, "413", &too_large);
        }
    }
}

/// The 401 of an operation's `security`, or `None` for a route that needs no credential.
fn refused_credential(security: &Value) -> Option<&'static str> {
    let schemes = security.as_array()?;
    let named = |name: &str| schemes.iter().any(|s| s.get(name).is_some());
    if named("idToken") && named("bearerAuth") {
        Some(EITHER_REFUSED)
    } else if named("idToken") {
        Some(ID_TOKEN_REFUSED)
    } else if named("bearerAuth") {
        Some(API_KEY_REFUSED)
    } else {
        None
    }
}

/// Response `status` with the error envelope and `description`, unless the route has one.
fn insert(responses: &mut Map<String, Value>, status: &str, description: &str) {
    responses.entry(status).or_insert_with(|| {
        json!({
            "description": description,
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } },
        })
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keyed_operations_get_the_shared_responses_and_keep_their_own() {
        let mut doc = json!({
            "security": [{ "bearerAuth": [] }],
            "paths": {
                "/a": {
                    "post": {
                        "requestBody": { "content": { "application/json": {} } },
                        "responses": { "413": { "description": "over 64 MiB" } },
                    },
                    "get": { "responses": {} },
                },
                "/console": { "get": { "security": [{ "idToken": [] }], "responses": {} } },
                "/either": {
                    "get": { "security": [{ "bearerAuth": [] }, { "idToken": [] }], "responses": {} },
                },
                "/open": { "get": { "security": [{}], "responses": {} } },
            },
        });
        add(&mut doc);
        let described = |path: &str, method: &str, status: &str| {
            doc["paths"][path][method]["responses"][status]["description"].clone()
        };
        assert_eq!(described("/a", "post", "413"), "over 64 MiB");
        assert_eq!(described("/a", "post", "401"), API_KEY_REFUSED);
        assert_eq!(described("/a", "post", "500"), INTERNAL);
        assert_eq!(described("/a", "get", "401"), API_KEY_REFUSED);
        assert_eq!(described("/a", "get", "429"), IN_FLIGHT);
        assert!(
            doc["paths"]["/a"]["get"]["responses"]["429"]["headers"]["Retry-After"].is_object()
        );
        assert_eq!(described("/console", "get", "429"), IN_FLIGHT);
        assert!(described("/a", "get", "413").is_null());
        assert_eq!(described("/console", "get", "401"), ID_TOKEN_REFUSED);
        assert_eq!(described("/either", "get", "401"), EITHER_REFUSED);
        assert_eq!(doc["paths"]["/open"]["get"]["responses"], json!({}));
    }
}
