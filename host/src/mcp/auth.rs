//! The API key on every request to `/mcp`: the REST API's check ([`authenticate`]), in front
//! of the MCP service. A refused request is the REST API's 401 `invalid_api_key` envelope with
//! `WWW-Authenticate: Bearer`, the answer MCP clients expect; an admitted one carries its
//! [`Principal`](crate::accounts::Principal) in its extensions, where the tool handlers read it.

use axum::{
    extract::{Request, State},
    http::{HeaderValue, header},
    middleware::Next,
    response::{IntoResponse, Response},
};

use crate::{accounts::Accounts, api::authenticate};

/// Admits a request with a live key (noting its principal), refuses any other with 401.
pub async fn require_key(
    State(keys): State<Accounts>,
    mut request: Request,
    next: Next,
) -> Response {
    match authenticate(&*keys, request.headers()).await {
        Ok(who) => {
            request.extensions_mut().insert(who);
            next.run(request).await
        }
        Err(refusal) => {
            let mut response = refusal.into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::{
        Extension, Router,
        body::{Body, to_bytes},
        http::{Request, StatusCode, header},
        middleware,
        routing::post,
    };
    use tower::ServiceExt;

    use super::require_key;
    use crate::accounts::{Accounts, KeyStore, Plans, Principal};

    fn app(keys: Accounts) -> Router {
        Router::new()
            .route(
                "/mcp",
                post(|Extension(who): Extension<Principal>| async move { who.account.to_string() }),
            )
            .layer(middleware::from_fn_with_state(keys, require_key))
    }

    async fn call(app: &Router, key: Option<&str>) -> (StatusCode, Option<String>, String) {
        let mut request = Request::post("/mcp");
        if let Some(key) = key {
            request = request.header(header::AUTHORIZATION, format!("Bearer {key}"));
        }
        let response = app
            .clone()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let challenge = response
            .headers()
            .get(header::WWW_AUTHENTICATE)
            .map(|v| v.to_str().unwrap().to_string());
        let status = response.status();
        let body = to_bytes(response.into_body(), 1 << 16).await.unwrap();
        (status, challenge, String::from_utf8(body.to_vec()).unwrap())
    }

    /// The key is checked on each request, so one revoked between two requests of a
    /// session is refused on the second.
    #[tokio::test]
    async fn every_request_is_checked_and_a_revoked_key_is_refused_next_time() {
        let dir = tempfile::tempdir().unwrap();
        let db = std::sync::Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
        let keys = KeyStore::new(db).unwrap();
        let (key, _) = keys.create("acme", None, &Plans::default()).unwrap();
        let app = app(std::sync::Arc::new(keys.clone()));

        let (status, challenge, body) = call(&app, Some(&key)).await;
        assert_eq!(
            (status, challenge, body.as_str()),
            (StatusCode::OK, None, "acme")
        );

        keys.revoke(&key).unwrap();
        for key in [Some(key.as_str()), None, Some("wm_0000")] {
            let (status, challenge, body) = call(&app, key).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{key:?}");
            assert_eq!(challenge.as_deref(), Some("Bearer"));
            let body: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(body["error"]["code"], "invalid_api_key", "{body}");
        }
    }
}
