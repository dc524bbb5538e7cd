//! Authentication of an API key to the [`Principal`] it acts for (§5): every door that
//! takes API keys (the REST API, `/mcp`) asks [`authenticate`], so they refuse alike —
//! missing, malformed, unknown or revoked keys are `invalid_api_key`.

use axum::http::{HeaderMap, header};

use super::AppError;
use crate::accounts::{AccountStore, Principal};

/// The caller named by `headers`' `Authorization: Bearer <key>`, or the refusal to answer.
pub async fn authenticate(
    keys: &dyn AccountStore,
    headers: &HeaderMap,
) -> Result<Principal, AppError> {
    let header = headers.get(header::AUTHORIZATION).ok_or_else(|| {
        AppError::invalid_api_key(
            "missing Authorization header: send `Authorization: Bearer <API key>`",
        )
    })?;
    let key = bearer(header.to_str().ok()).ok_or_else(|| {
        AppError::invalid_api_key("malformed Authorization header: expected `Bearer <API key>`")
    })?;
    keys.authenticate(key)
        .await
        .map_err(|e| AppError::internal(&e))?
        .ok_or_else(|| AppError::invalid_api_key("unknown or revoked API key"))
}

/// The credential of an `Authorization: Bearer <credential>` header's value, if it is one.
pub fn bearer(value: Option<&str>) -> Option<&str> {
    value
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|k| !k.is_empty())
}
