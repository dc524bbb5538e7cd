//! Each MCP session belongs to the key that opened it: a request naming a session with any
//! other key — another account's, or another key of the same account — is answered as a
//! session that does not exist (404, as the SDK answers an unknown id), so a leaked session
//! id is worth nothing without its key, and says nothing about whose it is.
//!
//! Sessions and their event streams are bounded per account at this node, which keeps
//! them: at most the plan's `mcp_sessions` open (a session ends when its client deletes it
//! or after the SDK's idle keep-alive, 5 minutes), the next `initialize` answered 429
//! `session_limit_reached`; and each event stream (`GET /mcp`) holds a place among the
//! account's `event_streams`, the console's streams' bound, for as long as it is open —
//! past it, 429 `stream_limit_reached`. A session being opened holds its place from the
//! request on, so `initialize`s at once never pass the bound together.

use std::{collections::HashMap, sync::Arc};

use axum::{
    body::Body,
    extract::{Request, State},
    http::{Method, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
};
use futures_util::StreamExt;
use parking_lot::Mutex;
use rmcp::transport::{
    common::http_header::HEADER_SESSION_ID,
    streamable_http_server::session::local::LocalSessionManager,
};

use crate::{
    accounts::{Plans, Principal},
    app::{AppError, streams},
    console::Streams,
};

/// The live sessions by owner, and the bounds they are held to.
pub struct Sessions {
    /// The SDK's sessions, whose ended ones are forgotten here as they are counted.
    manager: Arc<LocalSessionManager>,
    plans: Plans,
    /// The account's open event streams, shared with the console's.
    streams: Streams,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    /// Who opened each live session.
    owners: HashMap<Arc<str>, Owner>,
    /// Sessions being opened (an `initialize` in flight), per account.
    opening: HashMap<Arc<str>, u32>,
}

struct Owner {
    key_id: Arc<str>,
    account: Arc<str>,
}

impl Held {
    /// Sessions of `account` open or being opened.
    fn count(&self, account: &str) -> u32 {
        let open = self.owners.values().filter(|o| &*o.account == account);
        let opening = self.opening.get(account).copied().unwrap_or(0);
        u32::try_from(open.count()).unwrap_or(u32::MAX) + opening
    }
}

/// The place of a session being opened, given back when dropped (the session is then
/// counted as open, or was never made).
struct Opening<'a> {
    sessions: &'a Sessions,
    account: Arc<str>,
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        let mut held = self.sessions.held.lock();
        if let Some(n) = held.opening.get_mut(&self.account) {
            *n -= 1;
            if *n == 0 {
                held.opening.remove(&self.account);
            }
        }
    }
}

impl Sessions {
    pub fn new(manager: Arc<LocalSessionManager>, plans: Plans, streams: Streams) -> Self {
        Self {
            manager,
            plans,
            streams,
            held: Mutex::default(),
        }
    }

    /// MCP sessions `account` has open at this node.
    pub fn open(&self, account: &str) -> u32 {
        // Without the SDK's map at hand (a session opening or closing this instant), the
        // ended sessions are forgotten at the next count.
        if let Ok(live) = self.manager.sessions.try_read() {
            self.held
                .lock()
                .owners
                .retain(|id, _| live.contains_key(id));
        }
        self.held.lock().count(account)
    }

    /// A place for one more session of `who`'s account within its plan's `mcp_sessions`,
    /// or the refusal to answer.
    async fn reserve(&self, who: &Principal) -> Result<Opening<'_>, AppError> {
        let max = self.plans.limits(who.plan).mcp_sessions;
        let live = self.manager.sessions.read().await;
        let mut held = self.held.lock();
        held.owners.retain(|id, _| live.contains_key(id));
        let open = held.count(&who.account);
        if open >= max {
            return Err(AppError::session_limit(who.plan, open, max));
        }
        *held.opening.entry(who.account.clone()).or_default() += 1;
        Ok(Opening {
            sessions: self,
            account: who.account.clone(),
        })
    }

    /// Notes `session` as opened by `who` (its opening's place becomes the session's).
    fn opened(&self, session: &str, who: &Principal) {
        let owner = Owner {
            key_id: who.key_id.clone(),
            account: who.account.clone(),
        };
        self.held.lock().owners.insert(session.into(), owner);
    }

    /// Whether `key_id` may use `session` (one not opened here is the SDK's to refuse).
    fn admits(&self, session: &str, key_id: &str) -> bool {
        let held = self.held.lock();
        (held.owners.get(session)).is_none_or(|owner| &*owner.key_id == key_id)
    }
}

/// The session id a request or response carries.
fn session_of(headers: &http::HeaderMap) -> Option<String> {
    let value = headers.get(HEADER_SESSION_ID)?;
    value.to_str().ok().map(str::to_string)
}

/// Refuses a session used with a key other than its opener's, and a session or an event
/// stream past the account's bound; binds a new session to the key that opened it, and an
/// event stream to its place. Runs after [`super::auth::require_key`].
pub async fn bind(State(sessions): State<Arc<Sessions>>, request: Request, next: Next) -> Response {
    let Some(who) = request.extensions().get::<Principal>().cloned() else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let session = session_of(request.headers());
    if let Some(id) = &session
        && !sessions.admits(id, &who.key_id)
    {
        return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
    }
    let method = request.method().clone();
    match session {
        None => {
            let opening = match sessions.reserve(&who).await {
                Ok(opening) => opening,
                Err(refused) => return refused.into_response(),
            };
            let response = next.run(request).await;
            if let Some(id) = session_of(response.headers()) {
                sessions.opened(&id, &who);
            }
            drop(opening);
            response
        }
        Some(_) if method == Method::GET => {
            let (streams, plans) = (&sessions.streams, &sessions.plans);
            let slot = match streams::open(streams, plans, &who.account, who.plan) {
                Ok(slot) => slot,
                Err(refused) => return refused.into_response(),
            };
            let response = next.run(request).await;
            if !response.status().is_success() {
                return response;
            }
            // The stream holds its place until its body ends or its client goes away.
            response.map(|body| {
                Body::from_stream(body.into_data_stream().map(move |chunk| {
                    let _held = &slot;
                    chunk
                }))
            })
        }
        Some(id) => {
            let response = next.run(request).await;
            if method == Method::DELETE && response.status().is_success() {
                sessions.held.lock().owners.remove(id.as_str());
            }
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use rmcp::transport::streamable_http_server::session::local::{
        SessionConfig, create_local_session,
    };

    use super::*;
    use crate::accounts::Plan;

    fn principal(account: &str) -> Principal {
        Principal {
            account: account.into(),
            plan: Plan::Free,
            key_id: format!("key_{account}").into(),
        }
    }

    #[tokio::test]
    async fn sessions_opening_at_once_hold_their_places_and_ended_ones_free_theirs() {
        let manager = Arc::new(LocalSessionManager::default());
        let mut plans = Plans::default();
        plans.free.mcp_sessions = 2;
        let sessions = Sessions::new(manager.clone(), plans, Streams::default());
        let acme = principal("acme");
        let first = sessions.reserve(&acme).await.unwrap();
        let second = sessions.reserve(&acme).await.unwrap();
        let refused = sessions.reserve(&acme).await.err().unwrap();
        assert_eq!(refused.code, "session_limit_reached");
        assert!(
            sessions.reserve(&principal("zeta")).await.is_ok(),
            "per account"
        );

        // The first opening became a session; the second made none.
        let (handle, _worker) = create_local_session("s1", SessionConfig::default());
        manager.sessions.write().await.insert("s1".into(), handle);
        sessions.opened("s1", &acme);
        drop((first, second));
        assert_eq!(sessions.open("acme"), 1);
        assert!(sessions.admits("s1", "key_acme") && !sessions.admits("s1", "key_zeta"));

        // The SDK ends it (deleted, or idle past its keep-alive): its place is free.
        manager.sessions.write().await.remove("s1");
        assert_eq!(sessions.open("acme"), 0);
        let _again = sessions.reserve(&acme).await.unwrap();
    }
}
