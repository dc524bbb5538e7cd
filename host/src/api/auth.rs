//! Bearer-key authentication (§5): every route but the OpenAPI document needs
//! `Authorization: Bearer <key>`; missing, malformed, unknown or revoked keys are 401
//! `invalid_api_key` ([`authenticate`]). The resulting `Principal` scopes everything the
//! handler does, and the request counts against its account's requests in flight.

use axum::{extract::FromRequestParts, http::request::Parts};

use crate::{
    accounts::Principal,
    app::{AppError, AppState, authenticate},
};

/// The authenticated caller.
#[derive(Debug, Clone)]
pub struct Auth(pub Principal);

impl FromRequestParts<AppState> for Auth {
    type Rejection = AppError;

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
