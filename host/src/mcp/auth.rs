//! The API key on every request to `/mcp`: the application layer's check ([`authenticate`]),
//! in front of the MCP service. A refused request is the REST API's 401 `invalid_api_key` envelope with
//! `WWW-Authenticate: Bearer`, the answer MCP clients expect; an admitted one carries its
//! [`Principal`](crate::accounts::Principal) in its extensions, where the tool handlers read it,
//! and counts against its account's requests in flight as REST requests do (an event stream
//! for as long as it is open): past the bound, the REST API's 429 `request_limit_reached`.

use axum::{
    extract::{Request, State},
    http::{HeaderValue, header},
    middleware::Next,
    response::{IntoResponse, Response},
};

use crate::{
    accounts::Accounts,
    app::{InFlight, Kind, authenticate},
    server::in_flight::keep,
};

/// Admits a request with a live key (noting its principal) under its account's bound on
/// requests in flight; refuses any other with 401, or 429 at the bound.
pub async fn require_key(
    State((keys, in_flight)): State<(Accounts, InFlight)>,
    mut request: Request,
    next: Next,
) -> Response {
    let authorization = request.headers().get(header::AUTHORIZATION);
    let admitted = match authenticate(&*keys, authorization.map(|v| v.as_bytes())).await {
        Ok(who) => in_flight
            .admit(&who.account, who.plan)
            .and_then(|place| keep(request.extensions(), place))
            .map(|()| who),
        Err(refusal) => Err(refusal),
    };
    match admitted {
        Ok(who) => {
            request.extensions_mut().insert(who);
            next.run(request).await
        }
        Err(refusal) => {
            let unauthorized = refusal.kind == Kind::Unauthorized;
            let mut response = refusal.into_response();
            if unauthorized {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
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
    use crate::{
        accounts::{Accounts, KeyStore, Plans, Principal},
        app::InFlight,
        server::in_flight::hold,
    };

    /// `/mcp` answering the account's name, `/mcp/stream` a body that never ends, as
    /// `mcp::router` layers them; the free plan's account may have `in_flight` requests.
    fn app(keys: Accounts, in_flight: u32) -> Router {
        let mut plans = Plans::default();
        plans.free.requests_in_flight = in_flight;
        let endless = || async {
            Body::from_stream(futures_util::stream::pending::<
                Result<String, std::io::Error>,
            >())
        };
        Router::new()
            .route(
                "/mcp",
                post(|Extension(who): Extension<Principal>| async move { who.account.to_string() }),
            )
            .route("/mcp/stream", post(endless))
            .layer(middleware::from_fn_with_state(
                (keys, InFlight::new(plans)),
                require_key,
            ))
            .layer(middleware::from_fn(hold))
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

    /// A key store in a fresh database (kept while the returned dir lives), and a key of
    /// `acme` in it.
    fn acme_key() -> (tempfile::TempDir, KeyStore, String) {
        let dir = tempfile::tempdir().unwrap();
        let db = std::sync::Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
        let keys = KeyStore::new(db).unwrap();
        let (key, _) = keys.create("acme", None, &Plans::default()).unwrap();
        (dir, keys, key)
    }

    /// The key is checked on each request, so one revoked between two requests of a
    /// session is refused on the second.
    #[tokio::test]
    async fn every_request_is_checked_and_a_revoked_key_is_refused_next_time() {
        let (_dir, keys, key) = acme_key();
        let app = app(std::sync::Arc::new(keys.clone()), 8);

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

    /// An open stream holds its account's place; past the bound the answer is 429, not 401.
    #[tokio::test]
    async fn a_stream_counts_against_the_accounts_requests_in_flight() {
        let (_dir, keys, key) = acme_key();
        let app = app(std::sync::Arc::new(keys), 1);
        let request = Request::post("/mcp/stream")
            .header(header::AUTHORIZATION, format!("Bearer {key}"))
            .body(Body::empty())
            .unwrap();
        let stream = app.clone().oneshot(request).await.unwrap();
        assert_eq!(stream.status(), StatusCode::OK);

        let (status, challenge, body) = call(&app, Some(&key)).await;
        assert_eq!((status, challenge), (StatusCode::TOO_MANY_REQUESTS, None));
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"]["code"], "request_limit_reached", "{body}");
        drop(stream);
        assert_eq!(call(&app, Some(&key)).await.0, StatusCode::OK);
    }
}
