//! Where billing keeps what it knows: each account's provider customer and subscription,
//! and the ids of the events applied (each once). One trait, two backends:
//! [`EmbeddedBilling`](super::EmbeddedBilling) in the data dir's redb,
//! [`PgBilling`](super::PgBilling) in PostgreSQL shared by every node.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::Subscription;
use crate::storage::StoreError;

/// An account's provider customer, and its subscription once the provider told of one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    pub account: String,
    pub customer: String,
    pub subscription: Option<Subscription>,
}

/// Billing's turn, held while one event (or the grace sweep) reads an account's
/// subscription, folds the news in and writes the result: across every node sharing the
/// store, so two nodes given two events of one account at once apply them in turn rather
/// than each fold into the same old state, the later write winning.
#[async_trait]
pub trait Turn: Send {
    /// Lets the next one in.
    async fn release(self: Box<Self>) -> Result<(), StoreError>;
}

/// Billing's state.
#[async_trait]
pub trait BillingStore: Send + Sync + 'static {
    /// The link of `account`, if it has a customer.
    async fn by_account(&self, account: &str) -> Result<Option<Link>, StoreError>;
    /// The link of the provider's `customer`, if it is one of ours.
    async fn by_customer(&self, customer: &str) -> Result<Option<Link>, StoreError>;
    /// Every link, by account.
    async fn links(&self) -> Result<Vec<Link>, StoreError>;
    /// Links `account` to `customer`; an account already linked keeps its customer, which
    /// is returned.
    async fn link(&self, account: &str, customer: &str) -> Result<Link, StoreError>;
    /// Waits for billing's [`Turn`].
    async fn turn(&self) -> Result<Box<dyn Turn>, StoreError>;
    /// Whether event `id` was applied.
    async fn seen(&self, id: &str) -> Result<bool, StoreError>;
    /// Records event `id` as applied and, in the same transaction, `account`'s
    /// subscription (when it changed); `false`, writing nothing, when `id` was recorded
    /// already (two nodes given the same delivery at once).
    async fn record(
        &self,
        id: &str,
        account: &str,
        subscription: Option<&Subscription>,
    ) -> Result<bool, StoreError>;
}
