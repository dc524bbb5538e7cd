//! [`Billing`]: checkout, portal, webhook and the grace-period sweep, over a provider, the
//! billing store and the accounts store.
//!
//! Nothing is half-made: a checkout writes the account's customer link only once the
//! provider has opened the checkout (a retry after a failure reuses the provider's
//! customer through its idempotency key), and an event is recorded as applied in the
//! same transaction as the subscription it changed — after the plan is set, so a crash
//! between the two leaves the event unrecorded and the provider's retry sets the same
//! plan again. Events are applied one at a time on a node; two nodes given the same
//! delivery at once set the same plan, and the store records the event once.

use std::sync::Arc;

use tokio::sync::Mutex;

use super::{
    BillingConfig, BillingError, BillingStore, Event, HostedPage, Link, Provider, Stripe,
    Subscription, What, provider::CheckoutRequest, signature,
};
use crate::{
    accounts::{Accounts, Plan, PlanSource},
    clock::now_ms,
    secret::Secret,
};

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

    /// Runs [`sweep`](Self::sweep) every [`sweep_every`](Self::sweep_every), for as long as
    /// the server runs; a failed sweep is logged and tried again next time.
    pub async fn sweep_forever(self: Arc<Self>) {
        let mut every = tokio::time::interval(self.sweep_every());
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            if let Err(e) = self.sweep().await {
                tracing::warn!(error = %e, "billing sweep failed");
            }
        }
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

    /// Verifies, reads and applies one webhook delivery. An unsigned one is refused as
    /// such first, configured or not.
    pub async fn webhook(
        &self,
        signature: Option<&str>,
        payload: &[u8],
    ) -> Result<Outcome, BillingError> {
        signature.ok_or(super::SignatureError::Missing)?;
        let live = self.live()?;
        let secret = live.webhook_secret.expose();
        signature::verify(
            secret,
            signature,
            payload,
            unix_now(),
            self.config.tolerance_secs,
        )?;
        let event = Event::parse(payload).map_err(BillingError::BadEvent)?;
        self.apply(event).await
    }

    /// Applies a verified event once.
    async fn apply(&self, event: Event) -> Result<Outcome, BillingError> {
        let Some(customer) = event.what.customer() else {
            return Ok(Outcome::Ignored);
        };
        let _one_at_a_time = self.applying.lock().await;
        if self.store.seen(&event.id).await? {
            return Ok(Outcome::Duplicate);
        }
        let link = self.resolve(customer, &event.what).await?;
        let current = link.subscription.as_ref();
        let next = match self.incoming(current, &event) {
            Some(incoming) => Subscription::fold(current, incoming),
            None => None,
        };
        let plan = match next.as_ref().or(current) {
            Some(s) => s.plan(event.created.max(unix_now()), self.config.grace_secs),
            None => self.accounts.plan(&link.account).await?.unwrap_or_default(),
        };
        if next.is_some() && self.accounts.plan(&link.account).await? != Some(plan) {
            self.accounts
                .set_plan(&link.account, plan, PlanSource::Billing)
                .await?;
            tracing::info!(account = %link.account, %plan, event = %event.id, "plan changed by billing");
        }
        self.store
            .record(&event.id, &link.account, next.as_ref())
            .await?;
        Ok(Outcome::Applied {
            account: link.account,
            plan,
        })
    }

    /// The link an event's customer belongs to: a completed checkout links its
    /// `client_reference_id` account if nothing did yet.
    async fn resolve(&self, customer: &str, what: &What) -> Result<Link, BillingError> {
        if let Some(link) = self.store.by_customer(customer).await? {
            return Ok(link);
        }
        if let What::CheckoutCompleted {
            account: Some(account),
            ..
        } = what
            && self.accounts.plan(account).await?.is_some()
        {
            return Ok(self.store.link(account, customer).await?);
        }
        tracing::warn!(%customer, "billing event for a customer no account has");
        Err(BillingError::UserNotFound(customer.to_owned()))
    }

    /// The subscription state `event` tells of, if any.
    fn incoming(&self, current: Option<&Subscription>, event: &Event) -> Option<Subscription> {
        match &event.what {
            What::CheckoutCompleted {
                subscription: Some(id),
                plan: Some(plan),
                ..
            } => Some(Subscription {
                id: id.clone(),
                plan: *plan,
                status: "active".into(),
                created: event.created,
                event_at: event.created,
                past_due_since: None,
                from_checkout: true,
            }),
            What::Subscription {
                id,
                status,
                created,
                price,
                plan,
                ..
            } => {
                let priced = price.as_deref().and_then(|p| self.config.plan_of_price(p));
                let Some(plan) = priced.or(*plan) else {
                    tracing::warn!(subscription = %id, ?price, "subscription at a price no plan has; ignored");
                    return None;
                };
                Some(Subscription {
                    id: id.clone(),
                    plan,
                    status: status.clone(),
                    created: *created,
                    event_at: event.created,
                    past_due_since: None,
                    from_checkout: false,
                })
            }
            What::PaymentFailed {
                subscription: Some(id),
                ..
            } => current.and_then(|c| c.payment_failed(id, event.created)),
            _ => None,
        }
    }

    /// Moves to Free every account whose subscription's grace period after a failed
    /// payment has run out while it still has the subscription's plan; returns them.
    pub async fn sweep(&self) -> Result<Vec<String>, BillingError> {
        let now = unix_now();
        let _one_at_a_time = self.applying.lock().await;
        let mut moved = Vec::new();
        for link in self.store.links().await? {
            let Some(s) = link.subscription else { continue };
            let lapsed = s.past_due_since.is_some()
                && !s.ended()
                && s.plan(now, self.config.grace_secs) == Plan::Free;
            if lapsed
                && self.accounts.plan(&link.account).await? == Some(s.plan)
                && s.plan != Plan::Free
            {
                self.accounts
                    .set_plan(&link.account, Plan::Free, PlanSource::Billing)
                    .await?;
                tracing::info!(account = %link.account, subscription = %s.id, "grace period over: plan moved to free");
                moved.push(link.account);
            }
        }
        Ok(moved)
    }

    /// How often the server runs [`sweep`](Self::sweep): a minute, or the grace period
    /// when shorter (at least a second).
    pub fn sweep_every(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.config.grace_secs.clamp(1, 60))
    }
}
