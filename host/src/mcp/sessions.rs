//! Each MCP session belongs to the key that opened it: a request naming a session with any
//! other key — another account's, or another key of the same account — is answered as a
//! session that does not exist (404, as the SDK answers an unknown id), so a leaked session
//! id is worth nothing without its key, and says nothing about whose it is.

use std::{collections::HashMap, sync::Arc};

use axum::{
    extract::{Request, State},
    http::{Method, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
};
use parking_lot::Mutex;
use rmcp::transport::{
    common::http_header::HEADER_SESSION_ID,
    streamable_http_server::session::local::LocalSessionManager,
};

use crate::accounts::Principal;

/// The key id that opened each live session.
pub struct Owners {
    /// The SDK's sessions, whose ended ones are forgotten here as new ones open.
    manager: Arc<LocalSessionManager>,
    by_session: Mutex<HashMap<Arc<str>, Arc<str>>>,
}

impl Owners {
    pub fn new(manager: Arc<LocalSessionManager>) -> Self {
        Self {
            manager,
            by_session: Mutex::default(),
        }
    }

    /// Notes `session` as opened by `key_id`, forgetting sessions that have ended.
    async fn opened(&self, session: &str, key_id: Arc<str>) {
        let live = self.manager.sessions.read().await;
        let mut owners = self.by_session.lock();
        owners.retain(|id, _| live.contains_key(id));
        owners.insert(session.into(), key_id);
    }

    /// Whether `key_id` may use `session` (one not opened here is the SDK's to refuse).
    fn admits(&self, session: &str, key_id: &str) -> bool {
        (self.by_session.lock().get(session)).is_none_or(|owner| &**owner == key_id)
    }
}

/// The session id a request or response carries.
fn session_of(headers: &http::HeaderMap) -> Option<String> {
    let value = headers.get(HEADER_SESSION_ID)?;
    value.to_str().ok().map(str::to_string)
}

/// Refuses a session used with a key other than its opener's; binds a new session to the
/// key that opened it. Runs after [`super::auth::require_key`].
pub async fn bind(State(owners): State<Arc<Owners>>, request: Request, next: Next) -> Response {
    let Some(who) = request.extensions().get::<Principal>().cloned() else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let session = session_of(request.headers());
    if let Some(id) = &session
        && !owners.admits(id, &who.key_id)
    {
        return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
    }
    let closing = request.method() == Method::DELETE;
    let response = next.run(request).await;
    match session {
        None => {
            if let Some(id) = session_of(response.headers()) {
                owners.opened(&id, who.key_id).await;
            }
        }
        Some(id) if closing && response.status().is_success() => {
            owners.by_session.lock().remove(id.as_str());
        }
        Some(_) => {}
    }
    response
}
