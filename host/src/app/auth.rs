//! Authentication of a request's credential to whom it acts for (§5): an API key to the
//! [`Principal`] it belongs to ([`authenticate`]: missing, malformed, unknown or revoked keys
//! are `invalid_api_key`), the console's ID token to its [`Session`] ([`sign_in`]: an
//! invalid one is `invalid_id_token`, saying why). Every door that takes API keys (the
//! REST API, `/mcp`) asks [`authenticate`], so they refuse alike; the routes an account is
//! read and managed through take either credential ([`Caller`]).

use std::sync::Arc;

use super::{AppError, Kind};
use crate::{
    accounts::{AccountStore, Plan, Principal},
    console::{Console, Session, SignInError},
};

/// The account a request acts for and its plan, whichever credential named them: an API
/// key, or the console's ID token of one of the account's people. What a key does as
/// itself (a spawn, counted against the key's rate; a memory write, which records the key)
/// needs the key's [`Principal`] instead.
#[derive(Debug, Clone)]
pub struct Caller {
    pub account: Arc<str>,
    pub plan: Plan,
}

impl From<Principal> for Caller {
    fn from(who: Principal) -> Self {
        Self {
            account: who.account,
            plan: who.plan,
        }
    }
}

impl From<Session> for Caller {
    fn from(session: Session) -> Self {
        Self {
            account: Arc::from(session.account),
            plan: session.plan,
        }
    }
}

/// The caller an `Authorization: Bearer <key>` names (`authorization` is the header's value,
/// as the adapter found it), or the refusal to answer.
pub async fn authenticate(
    keys: &dyn AccountStore,
    authorization: Option<&[u8]>,
) -> Result<Principal, AppError> {
    let header = authorization.ok_or_else(|| {
        AppError::invalid_api_key(
            "missing Authorization header: send `Authorization: Bearer <API key>`",
        )
    })?;
    let key = bearer(header).ok_or_else(|| {
        AppError::invalid_api_key("malformed Authorization header: expected `Bearer <API key>`")
    })?;
    keys.authenticate(key)
        .await
        .map_err(|e| AppError::internal(&e))?
        .ok_or_else(|| AppError::invalid_api_key("unknown or revoked API key"))
}

/// The credential of an `Authorization: Bearer <credential>` header's value (its bytes,
/// as the adapters find them), if it is one.
pub fn bearer(value: &[u8]) -> Option<&str> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

/// Whether `credential` is shaped as an ID token (a JWT: three dot-separated parts) rather
/// than an API key (`wm_` and hex, no dots): how a route that takes either tells which one
/// it was given, and so which refusal a bad one gets.
pub fn is_id_token(credential: &str) -> bool {
    credential.split('.').count() == 3
}

/// 401 `invalid_id_token`, saying why.
pub fn invalid_id_token(message: impl Into<String>) -> AppError {
    AppError::new(Kind::Unauthorized, "invalid_id_token", message)
}

/// The session a valid ID token of an existing account opens; 401 `invalid_id_token` (the
/// message says which check failed) for any other.
pub async fn sign_in(console: &Console, token: &str) -> Result<Session, AppError> {
    console.sign_in(token).await.map_err(|e| match e {
        SignInError::Refused(refusal) => invalid_id_token(refusal.to_string()),
        SignInError::Storage(cause) => AppError::internal(&format!("{cause:#}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_token_is_told_from_an_api_key_by_its_shape() {
        assert!(is_id_token("eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJhIn0.c2ln"));
        assert!(!is_id_token(&format!("wm_{}", "0f".repeat(32))));
        assert!(!is_id_token("junk"));
        assert_eq!(bearer(b"Bearer  wm_1 "), Some("wm_1"));
        assert_eq!(bearer(b"Basic wm_1"), None);
        assert_eq!(bearer(b"Bearer "), None);
    }
}
