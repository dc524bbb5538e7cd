//! ID-token authentication of the console-only routes (§5.4): `Authorization: Bearer <ID
//! token>`. None → 401 `missing_id_token`; a token that is not a valid ID token of an
//! existing account (expired, wrong issuer or audience, bad signature, malformed, an API
//! key) → 401 `invalid_id_token` whose message says which. The event stream alone may take
//! the token as `?id_token=` instead ([`StreamAuth`]), because a browser's `EventSource`
//! cannot set headers. The routes the console shares with the REST API take the token
//! through [`super::super::auth::AccountAuth`] instead.

use std::sync::Arc;

use axum::{extract::FromRequestParts, http::request::Parts};

use crate::{
    api::auth::authorization,
    app::{AppError, AppState, Kind, bearer, invalid_id_token},
    console::Session,
    server::in_flight::keep,
};

/// The signed-in tenant of a console request.
#[derive(Debug, Clone)]
pub struct ConsoleAuth(pub Session);

/// The signed-in tenant of the event stream: the header, else `?id_token=`.
#[derive(Debug, Clone)]
pub struct StreamAuth(pub Session);

fn missing(message: &str) -> AppError {
    AppError::new(Kind::Unauthorized, "missing_id_token", message)
}

/// The token of an `Authorization` header, if there is one.
fn token(parts: &Parts) -> Option<Result<&str, AppError>> {
    let header = authorization(&parts.headers)?;
    Some(bearer(header).ok_or_else(|| {
        invalid_id_token("malformed Authorization header: expected `Bearer <ID token>`")
    }))
}

/// The session `token` opens, its request admitted under the account's requests in
/// flight (as an API key's are).
pub(in crate::api) async fn sign_in(
    state: &AppState,
    parts: &Parts,
    token: &str,
) -> Result<Session, AppError> {
    let session = crate::app::sign_in(&state.console, token).await?;
    let account = Arc::from(session.account.as_str());
    keep(
        &parts.extensions,
        state.in_flight.admit(&account, session.plan)?,
    )?;
    Ok(session)
}

impl FromRequestParts<AppState> for ConsoleAuth {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = token(parts).ok_or_else(|| {
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
        if let Some(token) = token(parts) {
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
