//! Bearer-key authentication (§5): every route but the OpenAPI document needs
//! `Authorization: Bearer <key>`; missing, malformed, unknown or revoked keys are 401
//! `invalid_api_key`. The resulting `Principal` scopes everything the handler does, and
//! the request counts against its account's requests in flight (`super::in_flight`).

use axum::{
    extract::FromRequestParts,
    http::{HeaderMap, header, request::Parts},
};

use super::{AppState, error::ApiError};
use crate::accounts::{AccountStore, Principal};

/// The authenticated caller.
#[derive(Debug, Clone)]
pub struct Auth(pub Principal);

impl FromRequestParts<AppState> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let who = authenticate(&*state.keys, &parts.headers).await?;
        state
            .in_flight
            .admit(&parts.extensions, &who.account, who.plan)?;
        Ok(Auth(who))
    }
}

/// The caller named by `headers`' `Authorization: Bearer <key>`, or the 401 to answer. Every
/// door that takes API keys (the REST API, `/mcp`) asks this, so they refuse alike.
pub async fn authenticate(
    keys: &dyn AccountStore,
    headers: &HeaderMap,
) -> Result<Principal, ApiError> {
    let header = headers.get(header::AUTHORIZATION).ok_or_else(|| {
        ApiError::invalid_api_key(
            "missing Authorization header: send `Authorization: Bearer <API key>`",
        )
    })?;
    let key = header
        .to_str()
        .ok()
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .ok_or_else(|| {
            ApiError::invalid_api_key("malformed Authorization header: expected `Bearer <API key>`")
        })?;
    keys.authenticate(key)
        .await
        .map_err(|e| ApiError::internal(&e))?
        .ok_or_else(|| ApiError::invalid_api_key("unknown or revoked API key"))
}
