//! Bearer-key authentication (§5): every route but the OpenAPI document needs
//! `Authorization: Bearer <key>`; missing, malformed, unknown or revoked keys are 401
//! `invalid_api_key` ([`authenticate`]). The resulting `Principal` scopes everything the
//! handler does, and the request counts against its account's requests in flight. The
//! routes an account is read and managed through take the console's ID token too
//! ([`AccountAuth`]).

use axum::{
    extract::FromRequestParts,
    http::{HeaderMap, header, request::Parts},
};

use crate::{
    accounts::Principal,
    app::{AppError, AppState, Caller, authenticate, bearer, is_id_token},
    server::in_flight::keep,
};

/// The request's `Authorization` header, as the application layer reads credentials.
pub(in crate::api) fn authorization(headers: &HeaderMap) -> Option<&[u8]> {
    headers.get(header::AUTHORIZATION).map(|v| v.as_bytes())
}

/// The authenticated caller.
#[derive(Debug, Clone)]
pub struct Auth(pub Principal);

impl FromRequestParts<AppState> for Auth {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let who = authenticate(&*state.keys, authorization(&parts.headers)).await?;
        keep(
            &parts.extensions,
            state.in_flight.admit(&who.account, who.plan)?,
        )?;
        Ok(Auth(who))
    }
}

/// The account a request acts for, named by an API key or by the console's ID token (both
/// as `Authorization: Bearer …`, told apart by their shape): the routes an account is read
/// and managed through, which the console calls as the REST API's clients do. What a key
/// does as itself stays [`Auth`]. A missing or malformed header, or a credential shaped as
/// a key, is refused as a key is (401 `invalid_api_key`); a bad ID token is 401
/// `invalid_id_token`. The token rides in a header the console's script sets, never in a
/// cookie, so no page of another site can send it.
#[derive(Debug, Clone)]
pub struct AccountAuth(pub Caller);

impl FromRequestParts<AppState> for AccountAuth {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let credential = authorization(&parts.headers)
            .and_then(bearer)
            .filter(|credential| is_id_token(credential));
        match credential {
            Some(token) => {
                let session = super::console::sign_in(state, parts, token).await?;
                Ok(AccountAuth(session.into()))
            }
            None => Auth::from_request_parts(parts, state)
                .await
                .map(|Auth(who)| AccountAuth(who.into())),
        }
    }
}
