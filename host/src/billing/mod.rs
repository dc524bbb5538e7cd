//! Plans that pay: checkout, the customer portal and the payment provider's webhooks.
//!
//! [`Billing`] is the one service: it opens a provider checkout for a plan's configured
//! price (making the account's provider customer on its first), opens the provider's
//! portal, and applies the provider's signed events — each once, by id, in the order
//! their own timestamps give (`subscription`) — moving the account's plan live through
//! the accounts store, recorded as billing's doing. The provider is behind [`Provider`]
//! ([`Stripe`] over its REST API); the state behind [`BillingStore`] (redb or PostgreSQL).
//! Nothing here knows HTTP.

mod config;
mod embedded;
mod error;
mod event;
mod postgres;
mod provider;
mod service;
mod signature;
mod store;
mod stripe;
mod subscription;

pub use config::{BillingConfig, PriceConfig};
pub use embedded::EmbeddedBilling;
pub use error::BillingError;
pub use event::{Event, What};
pub use postgres::PgBilling;
pub use provider::{CheckoutRequest, HostedPage, Provider, Unavailable};
pub use service::{Billing, Checkout, Outcome};
pub use signature::SignatureError;
pub use store::{BillingStore, Link, Turn};
pub use stripe::Stripe;
pub use subscription::Subscription;
