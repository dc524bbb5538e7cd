//! [`Billing`]: checkout and portal here, the webhook and the grace-period sweep in
//! `webhook`, over a provider, the billing store and the accounts store.
//!
//! Nothing is half-made: a checkout writes the account's customer link only once the
//! provider has opened the checkout (a retry after a failure reuses the provider's
//! customer through its idempotency key), and an event is recorded as applied in the
//! same transaction as the subscription it changed — after the plan is set, so a crash
//! between the two leaves the event unrecorded and the provider's retry sets the same
//! plan again. Events are applied one at a time across the nodes sharing the store (its
//! [`Turn`](super::Turn)), and the store records each event once.

use std::sync::Arc;

use tokio::sync::Mutex;

use super::{
    BillingConfig, BillingError, BillingStore, HostedPage, Link, Provider, Stripe,
    provider::CheckoutRequest,
};
use crate::{
    accounts::{Accounts, Plan},
    clock::now_ms,
    secret::Secret,
};

mod webhook;

/// A configured provider, and the secret its webhooks are signed with.
struct Live {
    provider: Arc<dyn Provider>,
    webhook_secret: Secret,
}

/// The billing service; cheap to share.
pub struct Billing {
    config: BillingConfig,
    live: Option<Live>,
    store: Arc<dyn BillingStore>,
    accounts: Accounts,
    applying: Mutex<()>,
}

/// An opened checkout.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkout {
    pub page: HostedPage,
    pub plan: Plan,
    pub price: String,
    pub currency: String,
}

/// What a webhook delivery did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Applied: the account's plan is now `plan`.
    Applied { account: String, plan: Plan },
    /// Applied before: nothing changed.
    Duplicate,
    /// An event type billing does not act on.
    Ignored,
}

fn unix_now() -> u64 {
    now_ms() / 1_000
}

impl Billing {
    /// Billing over `store` and `accounts`, with `provider` when the config enables it
    /// (`None` otherwise: every operation but the reads is [`BillingError::NotConfigured`]).
    pub fn new(
        config: BillingConfig,
        provider: Option<Arc<dyn Provider>>,
        store: Arc<dyn BillingStore>,
        accounts: Accounts,
    ) -> Self {
        let live = provider
            .zip(config.webhook_secret.clone())
            .map(|(provider, webhook_secret)| Live {
                provider,
                webhook_secret,
            });
        Self {
            config,
            live,
            store,
            accounts,
            applying: Mutex::new(()),
        }
    }

    /// The service `config` asks for: Stripe at its base URL when its secrets are set.
    pub fn open(
        config: &BillingConfig,
        store: Arc<dyn BillingStore>,
        accounts: Accounts,
    ) -> anyhow::Result<Self> {
        let provider: Option<Arc<dyn Provider>> = match (&config.secret_key, config.enabled()) {
            (Some(key), true) => Some(Arc::new(Stripe::new(config, key.clone())?)),
            _ => None,
        };
        Ok(Self::new(config.clone(), provider, store, accounts))
    }

    fn live(&self) -> Result<&Live, BillingError> {
        self.live.as_ref().ok_or(BillingError::NotConfigured)
    }

    /// The account's link (customer and subscription), if it has one.
    pub async fn link(&self, account: &str) -> Result<Option<Link>, BillingError> {
        Ok(self.store.by_account(account).await?)
    }

    /// Every account's link.
    pub async fn links(&self) -> Result<Vec<Link>, BillingError> {
        Ok(self.store.links().await?)
    }

    /// Opens a checkout for `account` buying `plan` (a tier's name) at `price`, or the
    /// plan's first configured price.
    pub async fn checkout(
        &self,
        account: &str,
        plan: &str,
        price: Option<&str>,
    ) -> Result<Checkout, BillingError> {
        let live = self.live()?;
        let plan: Plan = plan.parse().map_err(BillingError::InvalidPlan)?;
        let configured = self.config.price(plan, price).ok_or_else(|| match price {
            Some(price) if plan != Plan::Free => BillingError::InvalidPriceId {
                plan,
                price: price.to_owned(),
            },
            _ => BillingError::InvalidPlan(format!(
                "the {plan} plan has no price to check out: choose one of {}",
                self.purchasable()
            )),
        })?;
        let link = self.store.by_account(account).await?;
        let customer = match &link {
            Some(link) => link.customer.clone(),
            None => live.provider.create_customer(account).await?,
        };
        let request = CheckoutRequest {
            account,
            customer: &customer,
            plan,
            price: &configured.id,
            return_url: &self.config.return_url,
        };
        let page = live.provider.checkout(&request).await?;
        if link.is_none() {
            self.store.link(account, &customer).await?;
        }
        Ok(Checkout {
            page,
            plan,
            price: configured.id.clone(),
            currency: configured.currency.clone(),
        })
    }

    /// The plans a checkout can buy, for messages.
    fn purchasable(&self) -> String {
        let mut plans: Vec<&str> = self.config.prices.iter().map(|p| p.plan.as_str()).collect();
        plans.dedup();
        match plans.is_empty() {
            true => "none is priced on this server".into(),
            false => plans.join(", "),
        }
    }

    /// Opens the provider's portal for `account`'s customer.
    pub async fn portal(&self, account: &str) -> Result<HostedPage, BillingError> {
        let live = self.live()?;
        let link = self
            .store
            .by_account(account)
            .await?
            .ok_or(BillingError::NoCustomer)?;
        Ok(live
            .provider
            .portal(&link.customer, &self.config.return_url)
            .await?)
    }
}
