//! What a billing operation can fail with; the API maps each to the specification's code
//! (`invalid_plan`, `invalid_price_id`, `billing_unavailable`, `user_not_found`, …).

use super::{SignatureError, Unavailable};
use crate::{
    accounts::{AccountError, Plan},
    storage::StoreError,
};

#[derive(Debug, thiserror::Error)]
pub enum BillingError {
    /// The deployment has no `[billing]` secrets.
    #[error(
        "billing is not configured on this server: the operator sets [billing] secret_key \
         and webhook_secret (see docs/operating.md, \"Billing\")"
    )]
    NotConfigured,
    /// Not a tier that can be bought here.
    #[error("{0}")]
    InvalidPlan(String),
    /// A price id that is not one of the plan's configured prices.
    #[error(
        "price {price:?} is not a configured price of the {plan} plan; leave price_id out for the plan's default"
    )]
    InvalidPriceId { plan: Plan, price: String },
    /// The account has no customer at the provider yet.
    #[error("this account has no billing customer yet: start a checkout first")]
    NoCustomer,
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    #[error("invalid webhook signature: {0}")]
    Signature(#[from] SignatureError),
    /// A signed event we cannot read.
    #[error("{0}")]
    BadEvent(String),
    /// An event about a customer no account has.
    #[error("no account has billing customer {0:?}")]
    UserNotFound(String),
    #[error(transparent)]
    Accounts(#[from] AccountError),
    #[error(transparent)]
    Storage(#[from] StoreError),
}
