//! The console's billing: the account's plan and subscription, a checkout and the
//! provider's portal — the public routes' bodies (`api::billing`) reached with an ID token,
//! so the usage page can upgrade and manage billing. Same requests, same answers, same errors.

use axum::{Json, extract::State};

use super::{
    super::{
        billing::{self, BillingState, CheckoutBody, CheckoutSession, PortalSession},
        doc::ErrorEnvelope,
        extract::Body,
    },
    auth::ConsoleAuth,
};
use crate::app::{AppResult, AppState};

/// The account's plan and subscription (as GET /api/v1/billing).
#[utoipa::path(operation_id = "console_billing", get, path = "/api/v1/console/billing", tag = "console",
    security(("idToken" = [])),
    responses(
        (status = 200, description = "the plan and subscription", body = BillingState),
    ))]
pub async fn state(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
) -> AppResult<Json<BillingState>> {
    billing::state_of(&state, &session.account, session.plan)
        .await
        .map(Json)
}

/// Opens a checkout for a plan (as POST /api/v1/billing/checkout).
#[utoipa::path(operation_id = "console_billing_checkout", post, path = "/api/v1/console/billing/checkout", tag = "console",
    security(("idToken" = [])),
    request_body = CheckoutBody,
    responses(
        (status = 200, description = "the checkout to send the user to", body = CheckoutSession),
        (status = 400, description = "Codes: `invalid_plan`, `invalid_price_id`, `invalid_body`.", body = ErrorEnvelope),
        (status = 501, description = "Codes: `billing_not_configured`.", body = ErrorEnvelope),
        (status = 502, description = "Codes: `billing_unavailable`.", body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait before retrying"))),
    ))]
pub async fn checkout(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
    Body(body): Body<CheckoutBody>,
) -> AppResult<Json<CheckoutSession>> {
    billing::checkout_in(&state, &session.account, body)
        .await
        .map(Json)
}

/// Opens the provider's portal (as POST /api/v1/billing/portal).
#[utoipa::path(operation_id = "console_billing_portal", post, path = "/api/v1/console/billing/portal", tag = "console",
    security(("idToken" = [])),
    responses(
        (status = 200, description = "the portal to send the user to", body = PortalSession),
        (status = 404, description = "Codes: `customer_not_found`.", body = ErrorEnvelope),
        (status = 501, description = "Codes: `billing_not_configured`.", body = ErrorEnvelope),
        (status = 502, description = "Codes: `billing_unavailable`.", body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait before retrying"))),
    ))]
pub async fn portal(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
) -> AppResult<Json<PortalSession>> {
    billing::portal_in(&state, &session.account).await.map(Json)
}
