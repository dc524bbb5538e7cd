//! ID-token authentication of the console routes (§5.4): `Authorization: Bearer <ID
//! token>`. None → 401 `missing_id_token`; a token that is not a valid ID token of an
//! existing account (expired, wrong issuer or audience, bad signature, malformed, an API
//! key) → 401 `invalid_id_token` whose message says which. The event stream alone may take
//! the token as `?id_token=` instead ([`StreamAuth`]), because a browser's `EventSource`
//! cannot set headers.

use std::sync::Arc;

use axum::{
    extract::FromRequestParts,
    http::{header, request::Parts},
};

use crate::app::{AppError, AppState, Kind};
use crate::console::{Session, SignInError};

/// The signed-in tenant of a console request.
#[derive(Debug, Clone)]
pub struct ConsoleAuth(pub Session);

/// The signed-in tenant of the event stream: the header, else `?id_token=`.
#[derive(Debug, Clone)]
pub struct StreamAuth(pub Session);

fn missing(message: &str) -> AppError {
    AppError::new(Kind::Unauthorized, "missing_id_token", message)
}

fn invalid(message: impl Into<String>) -> AppError {
    AppError::new(Kind::Unauthorized, "invalid_id_token", message)
}

/// The token of an `Authorization` header, if there is one.
fn bearer(parts: &Parts) -> Option<Result<&str, AppError>> {
    let header = parts.headers.get(header::AUTHORIZATION)?;
    Some(
        header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| invalid("malformed Authorization header: expected `Bearer <ID token>`")),
    )
}

/// The session `token` opens, its request admitted under the account's requests in
/// flight (as an API key's are).
async fn sign_in(state: &AppState, parts: &Parts, token: &str) -> Result<Session, AppError> {
    let session = state.console.sign_in(token).await.map_err(|e| match e {
        SignInError::Refused(refusal) => invalid(refusal.to_string()),
        SignInError::Storage(cause) => AppError::internal(&format!("{cause:#}")),
    })?;
    let account = Arc::from(session.account.as_str());
    state
        .in_flight
        .admit(&parts.extensions, &account, session.plan)?;
    Ok(session)
}

impl FromRequestParts<AppState> for ConsoleAuth {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = bearer(parts).ok_or_else(|| {
            missing("missing Authorization header: send `Authorization: Bearer <ID token>`")
        })??;
        sign_in(state, parts, token).await.map(ConsoleAuth)
    }
}

impl FromRequestParts<AppState> for StreamAuth {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        if let Some(token) = bearer(parts) {
            return sign_in(state, parts, token?).await.map(StreamAuth);
        }
        let pairs: Vec<(String, String)> =
            serde_urlencoded::from_str(parts.uri.query().unwrap_or("")).unwrap_or_default();
        let token = pairs
            .into_iter()
            .find(|(name, _)| name == "id_token")
            .map(|(_, token)| token)
            .ok_or_else(|| {
                missing(
                    "no ID token: send `Authorization: Bearer <ID token>` or `?id_token=<ID token>`",
                )
            })?;
        sign_in(state, parts, &token).await.map(StreamAuth)
    }
}
