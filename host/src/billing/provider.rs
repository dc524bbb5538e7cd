//! The payment provider as the billing service needs it: a customer per account, a hosted
//! checkout for a plan's price, and a hosted portal where the customer manages payment and
//! cancels. [`Stripe`](super::Stripe) is the implementation; the requests are our own
//! types, so nothing above knows the wire.

use async_trait::async_trait;

use crate::accounts::Plan;

/// The provider failed or did not answer in time: the caller gets 502
/// `billing_unavailable` and may retry; nothing of ours was written.
#[derive(Debug, Clone, thiserror::Error)]
#[error("billing provider: {0}")]
pub struct Unavailable(pub String);

/// A checkout to open for `account`, customer `customer`, buying `plan` at `price`.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckoutRequest<'a> {
    pub account: &'a str,
    pub customer: &'a str,
    pub plan: Plan,
    pub price: &'a str,
    /// Where the provider sends the user back (success and cancel alike).
    pub return_url: &'a str,
}

/// A hosted page the provider made: its id and the URL to send the user to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostedPage {
    pub id: String,
    pub url: String,
}

/// The provider's side of billing.
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    /// Makes the provider's customer for `account`. Retries with the same account get the
    /// same customer where the provider honours idempotency keys (Stripe does, for a day).
    async fn create_customer(&self, account: &str) -> Result<String, Unavailable>;
    /// Opens a subscription checkout.
    async fn checkout(&self, request: &CheckoutRequest<'_>) -> Result<HostedPage, Unavailable>;
    /// Opens the customer portal for `customer`.
    async fn portal(&self, customer: &str, return_url: &str) -> Result<HostedPage, Unavailable>;
}
