//! The provider's webhook events we act on, read from Stripe's event JSON into types of
//! our own; every other event type is acknowledged and ignored.

use serde::Deserialize;

use crate::accounts::Plan;

/// One delivered event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The provider's id (`evt_…`): what an event is applied once by.
    pub id: String,
    /// When the provider created it (unix seconds).
    pub created: u64,
    pub what: What,
}

/// What an event says.
#[derive(Debug, Clone, PartialEq)]
pub enum What {
    /// `checkout.session.completed`: `account` (our `client_reference_id`) has paid for
    /// `plan` (our metadata) under `subscription`.
    CheckoutCompleted {
        customer: String,
        account: Option<String>,
        subscription: Option<String>,
        plan: Option<Plan>,
    },
    /// `customer.subscription.created|updated|deleted`: the subscription as it now is
    /// (a deleted one's status is `canceled`).
    Subscription {
        customer: String,
        id: String,
        status: String,
        created: u64,
        /// The price of its first item (`price.id`, or the legacy `plan.id`).
        price: Option<String>,
        /// The plan our checkout put in its metadata.
        plan: Option<Plan>,
    },
    /// `invoice.payment_failed`: a payment of `subscription` failed.
    PaymentFailed {
        customer: String,
        subscription: Option<String>,
    },
    /// Anything else, by type.
    Other(String),
}

impl What {
    /// The provider's customer the event is about, if any.
    pub fn customer(&self) -> Option<&str> {
        match self {
            What::CheckoutCompleted { customer, .. }
            | What::Subscription { customer, .. }
            | What::PaymentFailed { customer, .. } => Some(customer),
            What::Other(_) => None,
        }
    }
}

#[derive(Deserialize)]
struct Raw {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    created: u64,
    data: RawData,
}

#[derive(Deserialize)]
struct RawData {
    object: serde_json::Value,
}

#[derive(Deserialize)]
struct RawCheckout {
    customer: String,
    client_reference_id: Option<String>,
    subscription: Option<String>,
    #[serde(default)]
    metadata: Metadata,
}

#[derive(Deserialize, Default)]
struct Metadata {
    plan: Option<String>,
}

#[derive(Deserialize)]
struct RawSubscription {
    id: String,
    customer: String,
    status: String,
    created: u64,
    items: Option<RawItems>,
    #[serde(default)]
    metadata: Metadata,
}

#[derive(Deserialize)]
struct RawItems {
    data: Vec<RawItem>,
}

#[derive(Deserialize)]
struct RawItem {
    price: Option<RawId>,
    plan: Option<RawId>,
}

#[derive(Deserialize)]
struct RawId {
    id: String,
}

#[derive(Deserialize)]
struct RawInvoice {
    customer: String,
    subscription: Option<String>,
}

impl Event {
    /// Reads one event's JSON; the message says what is missing.
    pub fn parse(payload: &[u8]) -> Result<Self, String> {
        let raw: Raw = serde_json::from_slice(payload).map_err(|e| format!("event: {e}"))?;
        let object = raw.data.object;
        let what = match raw.kind.as_str() {
            "checkout.session.completed" => {
                let c: RawCheckout = object_of(object, &raw.kind)?;
                What::CheckoutCompleted {
                    customer: c.customer,
                    account: c.client_reference_id,
                    subscription: c.subscription,
                    plan: c.metadata.plan.and_then(|p| p.parse().ok()),
                }
            }
            "customer.subscription.created"
            | "customer.subscription.updated"
            | "customer.subscription.deleted" => {
                let s: RawSubscription = object_of(object, &raw.kind)?;
                let first = s.items.and_then(|i| i.data.into_iter().next());
                What::Subscription {
                    customer: s.customer,
                    id: s.id,
                    status: match raw.kind.as_str() {
                        "customer.subscription.deleted" => "canceled".into(),
                        _ => s.status,
                    },
                    created: s.created,
                    price: first.and_then(|i| i.price.or(i.plan)).map(|p| p.id),
                    plan: s.metadata.plan.and_then(|p| p.parse().ok()),
                }
            }
            "invoice.payment_failed" => {
                let i: RawInvoice = object_of(object, &raw.kind)?;
                What::PaymentFailed {
                    customer: i.customer,
                    subscription: i.subscription,
                }
            }
            _ => What::Other(raw.kind),
        };
        Ok(Event {
            id: raw.id,
            created: raw.created,
            what,
        })
    }
}

fn object_of<T: for<'de> Deserialize<'de>>(
    object: serde_json::Value,
    kind: &str,
) -> Result<T, String> {
    serde_json::from_value(object).map_err(|e| format!("{kind} event's data.object: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripe_events_read_as_ours() {
        let deleted = br#"{"id":"evt_1","type":"customer.subscription.deleted","created":20,
            "data":{"object":{"id":"sub_1","customer":"cus_1","status":"active","created":10,
            "items":{"data":[{"plan":{"id":"price_y"}}]},"metadata":{}}}}"#;
        let e = Event::parse(deleted).unwrap();
        assert_eq!(e.id, "evt_1");
        assert_eq!(
            e.what,
            What::Subscription {
                customer: "cus_1".into(),
                id: "sub_1".into(),
                status: "canceled".into(),
                created: 10,
                price: Some("price_y".into()),
                plan: None,
            }
        );
        let checkout = br#"{"id":"evt_2","type":"checkout.session.completed","created":5,
            "data":{"object":{"customer":"cus_1","client_reference_id":"acme",
            "subscription":"sub_1","metadata":{"plan":"liftoff"}}}}"#;
        let e = Event::parse(checkout).unwrap();
        assert_eq!(e.what.customer(), Some("cus_1"));
        assert!(matches!(
            e.what,
            What::CheckoutCompleted {
                plan: Some(Plan::Liftoff),
                ..
            }
        ));
        let other = br#"{"id":"evt_3","type":"charge.succeeded","created":5,"data":{"object":{}}}"#;
        assert_eq!(
            Event::parse(other).unwrap().what,
            What::Other("charge.succeeded".into())
        );
        let bad =
            br#"{"id":"evt_4","type":"invoice.payment_failed","created":5,"data":{"object":{}}}"#;
        assert!(Event::parse(bad).unwrap_err().contains("customer"));
    }
}
