//! The billing routes: checkout and portal (an API key, so the operator's CLI and any
//! client can upgrade; the console has its own, `console::billing`), the account's
//! subscription, and the provider's webhook — keyless, authenticated by its signature,
//! and the specification's "internal billing route" (`user_not_found`).

use axum::{Json, extract::State, http::HeaderMap};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{
    auth::AccountAuth,
    doc::ErrorEnvelope,
    extract::{Body, Raw},
};
use crate::{
    app::{AppError, AppResult, AppState, Kind},
    billing::{BillingError, Checkout, Outcome},
    clock::iso8601,
    object::Fields,
};

/// Seconds a client waits before retrying a checkout or portal the provider failed.
const PROVIDER_RETRY_SECS: u64 = 2;

/// `POST /api/v1/billing/checkout`'s body.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CheckoutBody {
    /// The tier to buy: `liftoff` or `lightyear` (whichever the server prices).
    #[schema(example = "lightyear", pattern = "^(liftoff|lightyear)$")]
    pub plan: String,
    /// One of the plan's configured provider prices (another currency, say); the plan's
    /// first when left out.
    #[serde(default)]
    pub price_id: Option<String>,
}

impl Fields for CheckoutBody {
    const FIELDS: &'static [(&'static str, &'static str)] =
        &[("plan", "a string"), ("price_id", "a string")];
}

/// An opened checkout: send the user to `url`; the plan changes when the provider says
/// the payment went through.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckoutSession {
    pub url: String,
    /// The provider's session id (`cs_…`).
    pub session_id: String,
    pub plan: &'static str,
    pub price_id: String,
    pub currency: String,
}

/// An opened customer portal: send the user to `url`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PortalSession {
    pub url: String,
    /// The provider's session id (`bps_…`).
    pub session_id: String,
}

/// The account's plan and its subscription at the provider, as its webhooks told it.
#[derive(Debug, Serialize, ToSchema)]
pub struct BillingState {
    /// The plan the account has now.
    pub plan: &'static str,
    /// Whether this server takes payments (`[billing]` configured).
    pub billing_enabled: bool,
    /// Whether the account has a customer at the provider (it made a checkout).
    pub customer: bool,
    pub subscription: Option<SubscriptionView>,
}

/// A subscription at the provider.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionView {
    /// The provider's id (`sub_…`).
    pub id: String,
    /// The plan it buys.
    pub plan: &'static str,
    /// The provider's status: `active`, `trialing`, `past_due`, `unpaid`, `canceled`, …
    pub status: String,
    /// When its payment first failed (ISO 8601), until it is paid again: the plan is kept
    /// for the grace period from then.
    pub past_due_since: Option<String>,
}

/// What a webhook delivery did.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookReceipt {
    /// `applied`, `duplicate` (applied before: nothing changed) or `ignored` (an event
    /// type billing does not act on).
    pub outcome: &'static str,
    /// The account's plan after it, when applied.
    pub plan: Option<&'static str>,
}

impl From<BillingError> for AppError {
    fn from(e: BillingError) -> Self {
        let message = e.to_string();
        match e {
            BillingError::NotConfigured => {
                AppError::new(Kind::NotImplemented, "billing_not_configured", message)
            }
            BillingError::InvalidPlan(_) => AppError::invalid_field("plan", message),
            BillingError::InvalidPriceId { .. } => AppError::invalid_field("price_id", message),
            BillingError::NoCustomer => {
                AppError::new(Kind::NotFound, "customer_not_found", message)
            }
            BillingError::Unavailable(_) => {
                let mut e = AppError::new(
                    Kind::BadGateway,
                    "billing_unavailable",
                    "the payment provider failed or did not answer in time; nothing was \
                     changed: retry shortly",
                );
                e.retry_after = Some(PROVIDER_RETRY_SECS);
                e
            }
            BillingError::Signature(_) => {
                AppError::new(Kind::BadRequest, "invalid_signature", message)
            }
            BillingError::BadEvent(_) => AppError::invalid_body(message),
            BillingError::UserNotFound(_) => {
                AppError::new(Kind::NotFound, "user_not_found", message)
            }
            BillingError::Accounts(e) => e.into(),
            BillingError::Storage(e) => e.into(),
        }
    }
}

impl From<Checkout> for CheckoutSession {
    fn from(c: Checkout) -> Self {
        Self {
            url: c.page.url,
            session_id: c.page.id,
            plan: c.plan.as_str(),
            price_id: c.price,
            currency: c.currency,
        }
    }
}

/// The account's [`BillingState`].
async fn state_of(
    state: &AppState,
    account: &str,
    plan: crate::accounts::Plan,
) -> AppResult<BillingState> {
    let link = state.billing.link(account).await?;
    let subscription = link.as_ref().and_then(|l| l.subscription.as_ref());
    Ok(BillingState {
        plan: plan.as_str(),
        billing_enabled: state.config.billing.enabled(),
        customer: link.is_some(),
        subscription: subscription.map(|s| SubscriptionView {
            id: s.id.clone(),
            plan: s.plan.as_str(),
            status: s.status.clone(),
            past_due_since: s.past_due_since.map(|t| iso8601(t.saturating_mul(1_000))),
        }),
    })
}

/// Opens a checkout at the payment provider for a plan.
#[utoipa::path(operation_id = "billing_checkout", post, path = "/api/v1/billing/checkout", tag = "billing",
    security(("bearerAuth" = []), ("idToken" = [])),
    request_body = CheckoutBody,
    responses(
        (status = 200, description = "the checkout to send the user to", body = CheckoutSession),
        (status = 400, description = "Codes: `invalid_plan` (not a tier this server sells), `invalid_price_id` (not one of the plan's configured prices), `invalid_body`.", body = ErrorEnvelope),
        (status = 501, description = "This server takes no payments (no `[billing]`). Codes: `billing_not_configured`.", body = ErrorEnvelope),
        (status = 502, description = "The payment provider failed or timed out; nothing was changed, retry after `Retry-After`. Codes: `billing_unavailable`.", body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait before retrying"))),
    ))]
pub async fn checkout(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
    Body(body): Body<CheckoutBody>,
) -> AppResult<Json<CheckoutSession>> {
    let opened = (state.billing)
        .checkout(&who.account, &body.plan, body.price_id.as_deref())
        .await?;
    Ok(Json(opened.into()))
}

/// Opens the payment provider's portal, where the account's payment details, invoices and
/// cancellation are.
#[utoipa::path(operation_id = "billing_portal", post, path = "/api/v1/billing/portal", tag = "billing",
    security(("bearerAuth" = []), ("idToken" = [])),
    responses(
        (status = 200, description = "the portal to send the user to", body = PortalSession),
        (status = 404, description = "The account never made a checkout. Codes: `customer_not_found`.", body = ErrorEnvelope),
        (status = 501, description = "Codes: `billing_not_configured`.", body = ErrorEnvelope),
        (status = 502, description = "Codes: `billing_unavailable`.", body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait before retrying"))),
    ))]
pub async fn portal(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
) -> AppResult<Json<PortalSession>> {
    let page = state.billing.portal(&who.account).await?;
    Ok(Json(PortalSession {
        url: page.url,
        session_id: page.id,
    }))
}

/// The account's plan and subscription.
#[utoipa::path(operation_id = "billing_state", get, path = "/api/v1/billing", tag = "billing",
    security(("bearerAuth" = []), ("idToken" = [])),
    responses(
        (status = 200, description = "the plan and subscription", body = BillingState),
    ))]
pub async fn subscription(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
) -> AppResult<Json<BillingState>> {
    state_of(&state, &who.account, who.plan).await.map(Json)
}

/// The payment provider's events (Stripe's webhook format), signed with the endpoint's
/// secret in `Stripe-Signature`; each applied once, by id.
#[utoipa::path(operation_id = "billing_webhook", post, path = "/api/v1/billing/webhook", tag = "billing",
    security(()),
    params(("Stripe-Signature" = String, Header, description = "`t=<unix seconds>,v1=<HMAC-SHA256 of t.payload, hex>`")),
    request_body(content = Object, description = "a provider event"),
    responses(
        (status = 200, description = "received", body = WebhookReceipt),
        (status = 400, description = "Codes: `invalid_signature` (missing, wrong, or signed outside the tolerance of now), `invalid_body` (not an event).", body = ErrorEnvelope),
        (status = 404, description = "The event's customer belongs to no account; the event is logged and not recorded, so the provider's retry can apply it later. Codes: `user_not_found`.", body = ErrorEnvelope),
        (status = 413, description = "The body is over 1 MiB. Codes: `payload_too_large`.", body = ErrorEnvelope),
        (status = 500, description = "Unexpected error; the provider retries. Codes: `internal_error`.", body = ErrorEnvelope),
        (status = 501, description = "Codes: `billing_not_configured`.", body = ErrorEnvelope),
    ))]
pub async fn webhook(
    State(state): State<AppState>,
    headers: HeaderMap,
    Raw(payload): Raw,
) -> AppResult<Json<WebhookReceipt>> {
    let signature = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok());
    let outcome = state.billing.webhook(signature, &payload).await?;
    let (outcome, plan) = match outcome {
        Outcome::Applied { plan, .. } => ("applied", Some(plan.as_str())),
        Outcome::Duplicate => ("duplicate", None),
        Outcome::Ignored => ("ignored", None),
    };
    Ok(Json(WebhookReceipt { outcome, plan }))
}
