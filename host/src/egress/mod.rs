//! Egress: what a guest may reach outside the sandbox, and the one way it is reached.
//!
//! Deny by default. A request passes, in order: the policy (its scheme, host and port on an
//! allowlist of the operator's: [`policy`]), the plan's budgets (requests and bytes per run
//! and per month: [`Egress::budget`]), the address check (no loopback, private, link-local
//! or other non-public address unless the operator lists its range: [`address`]), the
//! account's share of concurrent requests, then the send itself
//! ([`client`]: to checked addresses only, redirects never followed, the response read
//! whole within its cap and timeouts). The runtime journals each exchange around this
//! (`runtime::host::http`), so a replayed agent never sends a request again.
//!
//! Tenants' registered tools (`crate::tools`) go out through the same door: an HTTP tool's
//! request through [`Egress::send`], an MCP server's session on the door's own
//! client ([`Egress::client`]) in one of the account's places ([`Egress::place`]).

mod address;
mod client;
pub mod policy;

use std::{collections::HashMap, sync::Arc, time::Duration};

use parking_lot::Mutex;
use serde::Deserialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use url::Url;

pub use self::client::{Failure, Response};
use self::{
    address::Addresses,
    client::{Client, Limits},
    policy::{Allow, PlansAllow, Rule},
};
use crate::accounts::{Plan, Plans};

/// The `[egress]` section of the config file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EgressConfig {
    /// Hosts every account's agents may reach (deny by default: none).
    pub allow: Vec<Allow>,
    /// Hosts each plan's accounts may reach beyond those.
    pub plans: PlansAllow,
    /// Address ranges otherwise refused (loopback, private, …) that may be connected to,
    /// as CIDR (`10.1.2.0/24`, `127.0.0.2/32`).
    pub allow_ranges: Vec<String>,
    /// Largest response body kept, in bytes: past it the request fails.
    pub max_response_bytes: u64,
    /// Largest request body sent, in bytes.
    pub max_request_bytes: u64,
    pub connect_timeout_secs: f64,
    /// Longest wait for the response head once connected.
    pub first_byte_timeout_secs: f64,
    /// Longest a whole exchange may take.
    pub total_timeout_secs: f64,
    /// Requests one account's agents may have in flight at once on this node; more wait.
    pub max_concurrent_per_account: u32,
}

impl Default for EgressConfig {
    fn default() -> Self {
        Self {
            allow: Vec::new(),
            plans: PlansAllow::default(),
            allow_ranges: Vec::new(),
            max_response_bytes: 1 << 20,
            max_request_bytes: 1 << 20,
            connect_timeout_secs: 5.0,
            first_byte_timeout_secs: 15.0,
            total_timeout_secs: 30.0,
            max_concurrent_per_account: 8,
        }
    }
}

impl EgressConfig {
    /// Rejects entries that are not hosts, ranges that are not CIDR, timeouts that are not
    /// positive and caps of nothing.
    pub fn check(&self) -> anyhow::Result<()> {
        let plans = [&self.plans.free, &self.plans.liftoff, &self.plans.lightyear];
        for allow in self.allow.iter().chain(plans.iter().flat_map(|p| &p.allow)) {
            allow.check().map_err(anyhow::Error::msg)?;
        }
        Addresses::new(&self.allow_ranges).map_err(anyhow::Error::msg)?;
        for (name, secs) in [
            ("connect_timeout_secs", self.connect_timeout_secs),
            ("first_byte_timeout_secs", self.first_byte_timeout_secs),
            ("total_timeout_secs", self.total_timeout_secs),
        ] {
            if !(secs.is_finite() && secs > 0.0) {
                anyhow::bail!("[egress] {name} must be a positive number of seconds, not {secs}");
            }
        }
        if self.max_concurrent_per_account == 0 {
            anyhow::bail!("[egress] max_concurrent_per_account must be at least 1");
        }
        Ok(())
    }
}

/// Why a request was refused before anything was sent: the rule, and what to fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    pub rule: &'static str,
    pub message: String,
}

impl Refusal {
    fn new(rule: Rule, message: String) -> Self {
        Self {
            rule: rule.as_str(),
            message,
        }
    }
}

/// Requests and bytes moved, against a plan's budgets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moved {
    pub requests: u64,
    pub bytes: u64,
}

/// The egress door every account's requests go through.
pub struct Egress {
    config: EgressConfig,
    plans: Plans,
    client: Client,
    /// Each account's places for requests in flight.
    places: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl Egress {
    pub fn new(config: EgressConfig, plans: Plans) -> anyhow::Result<Self> {
        config.check()?;
        let addresses = Addresses::new(&config.allow_ranges).map_err(anyhow::Error::msg)?;
        let connect = Duration::from_secs_f64(config.connect_timeout_secs);
        let client = Client::new(addresses, connect).map_err(anyhow::Error::msg)?;
        Ok(Self {
            config,
            plans,
            client,
            places: Mutex::new(HashMap::new()),
        })
    }

    /// The largest response body kept.
    pub fn max_response_bytes(&self) -> u64 {
        self.config.max_response_bytes
    }

    /// The largest request body sent.
    pub fn max_request_bytes(&self) -> u64 {
        self.config.max_request_bytes
    }

    /// Whether an account on `plan`, with its own entries `own`, may send to `url`: the URL
    /// parsed as a URL parser does (every spelling of an address is that address), on an
    /// allowlist, and its address, when it names one, not refused.
    pub fn admit(&self, plan: Plan, own: &[Allow], url: &str) -> Result<Url, Refusal> {
        let url = Url::parse(url)
            .map_err(|e| Refusal::new(Rule::Allowlist, format!("{url:?} is not a URL: {e}")))?;
        if !policy::allowed(&self.config.allow, &self.config.plans, plan, own, &url) {
            let host = url.host_str().unwrap_or_default();
            let port = url.port_or_known_default().unwrap_or_default();
            // Not led by the URL: a message that starts like one is read as one (a client
            // scanning bodies for links splits "http://a:80 is on … ([egress] allow)").
            let message = format!(
                "the origin {}://{host}:{port} is on no allowlist of this host ([egress] allow)",
                url.scheme()
            );
            return Err(Refusal::new(Rule::Allowlist, message));
        }
        (self.client.check_literal(&url))
            .map_err(|r| Refusal::new(Rule::Address, format!("{r}, which is refused")))?;
        Ok(url)
    }

    /// The longest a whole exchange may take (`[egress] total_timeout_secs`).
    pub fn total_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.config.total_timeout_secs)
    }

    /// The door's HTTP client: it connects only to addresses that pass the check, follows
    /// no redirect and uses no proxy. For a protocol's client (an MCP session) that makes
    /// its own requests to a URL [`Egress::admit`] allowed, in a [`Egress::place`].
    pub fn client(&self) -> reqwest::Client {
        self.client.http()
    }

    /// Resolves `url`'s host and checks its addresses (an address in the URL too): a
    /// refusal named before a protocol's client connects (see [`Egress::client`]).
    pub async fn check_resolved(&self, url: &Url) -> Result<(), Failure> {
        self.client.check_resolved(url).await
    }

    /// One of `account`'s places for a request in flight, waited for when all are taken.
    pub async fn place(&self, account: &str) -> OwnedSemaphorePermit {
        let places = {
            let mut places = self.places.lock();
            let cap = self.config.max_concurrent_per_account as usize;
            (places.entry(account.to_string()))
                .or_insert_with(|| Arc::new(Semaphore::new(cap)))
                .clone()
        };
        places.acquire_owned().await.expect("never closed")
    }

    /// The response bytes one more request of an account on `plan` may receive, having
    /// `body` bytes to send, its run and its month having moved `run` and `month`: refused
    /// (rule `budget`) once a count of the plan's is spent. The response cap is the
    /// smallest of `[egress] max_response_bytes` and the bytes the budgets leave.
    pub fn budget(&self, plan: Plan, body: u64, run: Moved, month: Moved) -> Result<u64, Refusal> {
        let limits = self.plans.limits(plan);
        // (moved so far, what this request adds, the limit, what it counts, its key)
        let budgets = [
            (
                run.requests,
                1,
                limits.http_requests_per_run,
                "requests per run",
                "http_requests_per_run",
            ),
            (
                month.requests,
                1,
                limits.http_requests_per_month,
                "requests this month",
                "http_requests_per_month",
            ),
            (
                run.bytes,
                body,
                limits.http_bytes_per_run,
                "bytes per run",
                "http_bytes_per_run",
            ),
            (
                month.bytes,
                body,
                limits.http_bytes_per_month,
                "bytes this month",
                "http_bytes_per_month",
            ),
        ];
        let over = budgets
            .iter()
            .find(|(moved, adds, limit, ..)| moved + adds > *limit);
        if let Some((moved, _, limit, what, key)) = over {
            let message = format!(
                "the {plan} plan's {what} are spent ({moved} of {limit}: plans.{plan}.{key})"
            );
            return Err(Refusal::new(Rule::Budget, message));
        }
        let left = (limits.http_bytes_per_run - run.bytes - body)
            .min(limits.http_bytes_per_month - month.bytes - body);
        Ok(left.min(self.config.max_response_bytes))
    }

    /// Sends a request `admit` allowed, in one of `account`'s places, and reads its
    /// response whole, failing `TooLarge` past `max_response_bytes`. A host that resolves
    /// only to refused addresses fails `Refused`.
    pub async fn send(
        &self,
        account: &str,
        method: reqwest::Method,
        url: Url,
        headers: reqwest::header::HeaderMap,
        body: Vec<u8>,
        max_response_bytes: u64,
    ) -> Result<Response, Failure> {
        let _place = self.place(account).await;
        let limits = Limits {
            first_byte: Duration::from_secs_f64(self.config.first_byte_timeout_secs),
            total: self.total_timeout(),
            max_response_bytes,
        };
        (self.client).send(method, url, headers, body, limits).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_budget_refuses_past_it_and_the_bytes_left_cap_the_response() {
        let mut plans = Plans::default();
        let free = &mut plans.free;
        (free.http_requests_per_run, free.http_requests_per_month) = (2, 5);
        (free.http_bytes_per_run, free.http_bytes_per_month) = (1_000, 3_000);
        let egress = Egress::new(EgressConfig::default(), plans).unwrap();
        let moved = |requests, bytes| Moved { requests, bytes };
        let budget = |body, run, month| egress.budget(Plan::Free, body, run, month);
        assert_eq!(budget(100, moved(1, 0), moved(1, 0)), Ok(900));
        let refused = |r: Result<u64, Refusal>| r.unwrap_err().message;
        assert!(refused(budget(0, moved(2, 0), moved(2, 0))).contains("requests per run"));
        assert!(refused(budget(0, moved(0, 0), moved(5, 0))).contains("requests this month"));
        assert!(refused(budget(1_001, moved(0, 0), moved(0, 0))).contains("bytes per run"));
        assert!(refused(budget(10, moved(0, 0), moved(0, 2_995))).contains("bytes this month"));
        assert_eq!(budget(10, moved(0, 0), moved(0, 2_500)), Ok(490));
        let lavish = Egress::new(EgressConfig::default(), Plans::default()).unwrap();
        assert_eq!(
            lavish.budget(Plan::Lightyear, 0, Moved::default(), Moved::default()),
            Ok(EgressConfig::default().max_response_bytes)
        );
    }
}
