//! A scripted provider for the remote providers' unit tests: an axum router on
//! 127.0.0.1:0 answering `POST` and `GET /v1/{path}` from a script and recording what it
//! was sent (a `GET`'s body is recorded as `null`).
//! It knows no wire format; each provider's tests write the bodies.

use std::{collections::VecDeque, sync::Arc, time::Duration};

use axum::{
    Router,
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::post,
};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::mind::MindConfig;

/// One scripted reply: status, `Retry-After`, body; or a reply that comes too late.
pub(in crate::mind) enum Reply {
    Http(u16, Option<&'static str>, String),
    Late(Duration),
}

/// A 200 with `body`.
pub(in crate::mind) fn ok(body: &Value) -> Reply {
    Reply::Http(200, None, body.to_string())
}

/// An error status with the `{"type": "error", "error": {"message"}}` body both OpenAI
/// and Anthropic send.
pub(in crate::mind) fn status(code: u16) -> Reply {
    let body =
        json!({"type": "error", "error": {"type": "fake", "message": format!("fake {code}")}});
    Reply::Http(code, None, body.to_string())
}

/// The server's script and record.
#[derive(Default)]
pub(in crate::mind) struct Fake {
    replies: Mutex<VecDeque<Reply>>,
    /// (headers, body) of every request.
    seen: Mutex<Vec<(HeaderMap, Value)>>,
}

impl Fake {
    /// Every request body received, in order.
    pub(in crate::mind) fn bodies(&self) -> Vec<Value> {
        self.seen.lock().iter().map(|(_, b)| b.clone()).collect()
    }

    /// Header `name` of request `i`.
    pub(in crate::mind) fn header(&self, i: usize, name: &str) -> Option<String> {
        let seen = self.seen.lock();
        let value = seen[i].0.get(name)?;
        Some(value.to_str().unwrap().to_owned())
    }
}

async fn handle(State(fake): State<Arc<Fake>>, headers: HeaderMap, body: String) -> Response {
    let body = match body.as_str() {
        "" => Value::Null,
        text => serde_json::from_str(text).unwrap(),
    };
    fake.seen.lock().push((headers, body));
    let reply = fake
        .replies
        .lock()
        .pop_front()
        .expect("fake script ran out");
    match reply {
        Reply::Http(code, retry_after, body) => {
            let mut response = (StatusCode::from_u16(code).unwrap(), body).into_response();
            if let Some(secs) = retry_after {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static(secs));
            }
            response
        }
        Reply::Late(delay) => {
            tokio::time::sleep(delay).await;
            (StatusCode::OK, "{}").into_response()
        }
    }
}

/// Serves `replies` in order at `POST /v1/{path}`; returns a `provider` config with
/// model `test-model` pointing at it (the base URL ends `/v1/`, so joining is tested too),
/// and the fake.
pub(in crate::mind) async fn serve(
    provider: &str,
    path: &str,
    replies: Vec<Reply>,
) -> (MindConfig, Arc<Fake>) {
    let fake = Arc::new(Fake {
        replies: Mutex::new(replies.into()),
        ..Fake::default()
    });
    let app = Router::new()
        .route(&format!("/v1/{path}"), post(handle).get(handle))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let cfg = MindConfig {
        provider: provider.into(),
        base_url: Some(format!("http://{addr}/v1/")),
        model: "test-model".into(),
        ..MindConfig::default()
    };
    (cfg, fake)
}

/// A base URL where nothing listens.
pub(in crate::mind) fn closed_base_url() -> String {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    format!("http://{addr}/v1")
}
