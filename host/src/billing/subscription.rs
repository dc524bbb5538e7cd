//! An account's subscription as the webhooks told it, and the one rule that folds a new
//! event into it — by the subscription's own timestamps, never by arrival order, since the
//! provider delivers events at least once and in no guaranteed order:
//!
//! - a subscription created later supersedes an earlier one (its `created`);
//! - for the same subscription, the event created later wins (its `created`); a
//!   cancelled subscription stays cancelled (Stripe never revives one);
//! - a checkout's completion only stands in until the subscription's own events arrive.
//!
//! The plan that follows ([`Subscription::plan`]): the subscription's while it is
//! active, trialing or in its grace period after a failed payment; Free once it is
//! cancelled, expired, or its payment has failed for longer than the grace period.

use serde::{Deserialize, Serialize};

use crate::accounts::Plan;

/// What one account's subscription is, as far as the provider has told us.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    /// The provider's id (`sub_…`).
    pub id: String,
    /// The plan its price buys.
    pub plan: Plan,
    /// The provider's status: `active`, `trialing`, `past_due`, `unpaid`, `canceled`,
    /// `incomplete`, `incomplete_expired`, `paused`.
    pub status: String,
    /// When the subscription was created at the provider (unix seconds).
    pub created: u64,
    /// When the event this state came from was created at the provider (unix seconds).
    pub event_at: u64,
    /// When its payment first failed (unix seconds), until it is paid again.
    pub past_due_since: Option<u64>,
    /// Whether only a checkout's completion has told of it yet.
    pub from_checkout: bool,
}

impl Subscription {
    /// Whether the provider has ended it for good.
    pub fn ended(&self) -> bool {
        matches!(self.status.as_str(), "canceled" | "incomplete_expired")
    }

    /// The plan the account has under it at `now` (unix seconds), `grace` seconds after a
    /// failed payment at most.
    pub fn plan(&self, now: u64, grace: u64) -> Plan {
        let lapsed = self
            .past_due_since
            .is_some_and(|since| now.saturating_sub(since) > grace);
        match self.status.as_str() {
            "active" | "trialing" | "past_due" | "unpaid" if !lapsed => self.plan,
            _ => Plan::Free,
        }
    }

    /// `incoming` folded into `current`: the state to keep, or `None` when `incoming`
    /// is older news and changes nothing.
    pub fn fold(
        current: Option<&Subscription>,
        mut incoming: Subscription,
    ) -> Option<Subscription> {
        let Some(current) = current else {
            return Some(incoming);
        };
        if current.id != incoming.id {
            // A checkout's guess of `created` displaces only an ended subscription.
            let newer = incoming.created > current.created;
            return (newer && (!incoming.from_checkout || current.ended())).then_some(incoming);
        }
        if incoming.from_checkout && !current.from_checkout {
            return None;
        }
        if current.ended() || (!current.from_checkout && incoming.event_at < current.event_at) {
            return None;
        }
        incoming.past_due_since = match incoming.status.as_str() {
            "past_due" | "unpaid" => current.past_due_since.or(Some(incoming.event_at)),
            _ => incoming.past_due_since,
        };
        Some(incoming)
    }

    /// A failed payment at `at` for subscription `id`: the grace period starts, if it
    /// has not already; `None` when it changes nothing.
    pub fn payment_failed(&self, id: &str, at: u64) -> Option<Subscription> {
        (self.id == id && self.past_due_since.is_none() && !self.ended()).then(|| Subscription {
            past_due_since: Some(at),
            ..self.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(id: &str, status: &str, created: u64, event_at: u64) -> Subscription {
        Subscription {
            id: id.into(),
            plan: Plan::Lightyear,
            status: status.into(),
            created,
            event_at,
            past_due_since: None,
            from_checkout: false,
        }
    }

    fn fold_all(events: &[Subscription]) -> Option<Subscription> {
        events.iter().fold(None, |current, e| {
            Subscription::fold(current.as_ref(), e.clone()).or(current)
        })
    }

    #[test]
    fn any_order_ends_in_the_same_state() {
        let created = sub("sub_1", "active", 10, 10);
        let past_due = sub("sub_1", "past_due", 10, 20);
        let cancelled = sub("sub_1", "canceled", 10, 30);
        let events = [created, past_due, cancelled];
        for order in [
            [0, 1, 2],
            [2, 1, 0],
            [1, 2, 0],
            [2, 0, 1],
            [0, 2, 1],
            [1, 0, 2],
        ] {
            let delivered: Vec<_> = order.iter().map(|&i| events[i].clone()).collect();
            let end = fold_all(&delivered).unwrap();
            assert_eq!(end.status, "canceled", "{order:?}");
            assert_eq!(end.plan(40, 100), Plan::Free);
        }
        let newer = sub("sub_2", "active", 50, 50);
        for delivered in [
            [events[2].clone(), newer.clone()],
            [newer, events[2].clone()],
        ] {
            assert_eq!(fold_all(&delivered).unwrap().id, "sub_2");
        }
    }

    #[test]
    fn a_checkout_stands_in_until_the_subscription_speaks() {
        let checkout = Subscription {
            from_checkout: true,
            ..sub("sub_1", "active", 12, 12)
        };
        let first = fold_all(std::slice::from_ref(&checkout)).unwrap();
        assert_eq!(first.plan(12, 0), Plan::Lightyear);
        let updated = sub("sub_1", "active", 10, 11);
        assert_eq!(
            fold_all(&[checkout.clone(), updated.clone()]).unwrap(),
            updated
        );
        assert_eq!(fold_all(&[updated.clone(), checkout]).unwrap(), updated);
    }

    #[test]
    fn a_failed_payment_keeps_the_plan_for_the_grace_period() {
        let active = sub("sub_1", "active", 10, 10);
        let failed = active.payment_failed("sub_1", 100).unwrap();
        assert_eq!(failed.plan(150, 60), Plan::Lightyear);
        assert_eq!(failed.plan(161, 60), Plan::Free);
        assert_eq!(
            failed.payment_failed("sub_1", 120),
            None,
            "the first failure counts"
        );
        assert_eq!(active.payment_failed("sub_0", 100), None);
        let past_due = Subscription::fold(Some(&failed), sub("sub_1", "past_due", 10, 130));
        assert_eq!(past_due.unwrap().past_due_since, Some(100));
        let paid = Subscription::fold(Some(&failed), sub("sub_1", "active", 10, 140)).unwrap();
        assert_eq!(paid.plan(1_000, 60), Plan::Lightyear, "paid again");
    }
}
