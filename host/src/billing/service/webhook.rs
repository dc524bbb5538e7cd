//! The provider's side of [`Billing`]: a webhook delivery verified, read and applied once,
//! in its own order (see `super::super::subscription`), the plan moved through the
//! accounts store; and the sweep that ends a failed payment's grace period.

use std::sync::Arc;

use super::{Billing, Outcome, unix_now};
use crate::{
    accounts::{Plan, PlanSource},
    billing::{BillingError, Event, Link, SignatureError, Subscription, What, signature},
};

impl Billing {
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

    /// Verifies, reads and applies one webhook delivery. An unsigned one is refused as
    /// such first, configured or not.
    pub async fn webhook(
        &self,
        signature: Option<&str>,
        payload: &[u8],
    ) -> Result<Outcome, BillingError> {
        signature.ok_or(SignatureError::Missing)?;
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

    /// Runs `work` in billing's turn: one at a time in this process, then across the nodes
    /// sharing the store ([`Turn`](crate::billing::Turn)).
    async fn in_turn<T>(
        &self,
        work: impl Future<Output = Result<T, BillingError>>,
    ) -> Result<T, BillingError> {
        let _one_at_a_time = self.applying.lock().await;
        let turn = self.store.turn().await?;
        let done = work.await;
        turn.release().await?;
        done
    }

    /// Applies a verified event once.
    async fn apply(&self, event: Event) -> Result<Outcome, BillingError> {
        let Some(customer) = event.what.customer() else {
            return Ok(Outcome::Ignored);
        };
        self.in_turn(self.apply_in_turn(customer, &event)).await
    }

    async fn apply_in_turn(&self, customer: &str, event: &Event) -> Result<Outcome, BillingError> {
        if self.store.seen(&event.id).await? {
            return Ok(Outcome::Duplicate);
        }
        let link = self.resolve(customer, &event.what).await?;
        let current = link.subscription.as_ref();
        let next = match self.incoming(current, event) {
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
        self.in_turn(self.sweep_in_turn()).await
    }

    async fn sweep_in_turn(&self) -> Result<Vec<String>, BillingError> {
        let now = unix_now();
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
