//! The cap on an account's requests in flight: its plan's `requests_in_flight`, on this
//! node. Connections are not the account's (a key comes with each request, and one
//! connection may carry several accounts' requests one after another), so the cap counts
//! requests: from the moment one is authenticated to the last byte of its answer. An
//! event stream (`/mcp`'s, the console's) is a request whose answer lasts, and counts for
//! as long as it is open; so does a body being trickled in, or an answer its client reads
//! slowly. Past the cap: 429 `request_limit_reached` with `Retry-After`.
//!
//! Where: every path that authenticates a request — the REST extractors, `/mcp`'s key
//! check, the console's ID-token extractor — admits it here ([`InFlight::admit`]); the
//! HTTP server keeps the [`Admitted`] place until the answer's body is dropped
//! (`crate::server::in_flight`). A request that names no account (the documentation,
//! health) is bounded by the per-address cap only.

use std::sync::Arc;

use serde::Serialize;
use utoipa::ToSchema;

use super::{AppError, Kind};
use crate::{
    accounts::{Plan, Plans},
    places::{Full, Place, Places},
};

/// `Retry-After` at the cap: most requests take well under a second.
const RETRY_SECS: u64 = 1;

/// The requests in flight per account, and each plan's bound.
#[derive(Clone)]
pub struct InFlight {
    places: Places<Arc<str>>,
    plans: Arc<Plans>,
}

/// An admitted request's place under its account's bound, given back when dropped.
pub struct Admitted {
    _place: Place<Arc<str>>,
}

impl InFlight {
    pub fn new(plans: Plans) -> Self {
        Self {
            places: Places::default(),
            plans: Arc::new(plans),
        }
    }

    /// Admits a request of `account` (on `plan`) under its plan's bound: its place, to be
    /// held until the answer's end; or the 429 to answer.
    pub fn admit(&self, account: &Arc<str>, plan: Plan) -> Result<Admitted, AppError> {
        let max = self.plans.limits(plan).requests_in_flight;
        let place = self
            .places
            .take(account.clone(), max)
            .map_err(|full| request_limit(plan, full))?;
        Ok(Admitted { _place: place })
    }

    /// The requests `account` has in flight.
    pub fn count(&self, account: &str) -> u32 {
        self.places.count(account)
    }
}

/// 429 `request_limit_reached`, in the words of `concurrent_limit_reached`.
fn request_limit(plan: Plan, full: Full) -> AppError {
    let mut e = AppError::new(
        Kind::TooManyRequests,
        "request_limit_reached",
        format!(
            "{} requests of this account are in flight (event streams included), the {plan} \
             plan's maximum; retry once one has finished",
            full.held
        ),
    )
    .with_details(RequestLimitDetails {
        plan: plan.as_str(),
        current_requests: full.held,
        max_requests: full.max,
    });
    e.retry_after = Some(RETRY_SECS);
    e
}

/// `details` of 429 `request_limit_reached`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestLimitDetails {
    pub plan: &'static str,
    /// Requests the account has in flight on the node that answered.
    pub current_requests: u32,
    /// The plan's `requests_in_flight`.
    pub max_requests: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_is_held_until_dropped_and_the_bound_refuses_with_its_figures() {
        let mut plans = Plans::default();
        plans.free.requests_in_flight = 2;
        let in_flight = InFlight::new(plans);
        let acme: Arc<str> = Arc::from("acme");
        let held = [
            in_flight.admit(&acme, Plan::Free).unwrap(),
            in_flight.admit(&acme, Plan::Free).unwrap(),
        ];
        assert_eq!(in_flight.count("acme"), 2);
        let Err(refused) = in_flight.admit(&acme, Plan::Free) else {
            panic!("a third request was admitted at a bound of 2");
        };
        assert_eq!(refused.code, "request_limit_reached");
        assert_eq!(refused.retry_after, Some(1));
        assert_eq!(
            serde_json::to_value(&refused.details).unwrap(),
            serde_json::json!({ "plan": "free", "currentRequests": 2, "maxRequests": 2 })
        );
        let other = in_flight.admit(&Arc::from("zeta"), Plan::Free);
        assert!(other.is_ok(), "another account's requests are its own");
        drop(held);
        assert_eq!(in_flight.count("acme"), 0);
    }
}
