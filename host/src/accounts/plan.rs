//! Plan tiers of the specification (§8) and their limits, the `[plans]` section of the
//! config file.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

use crate::memory::Quota;

/// A plan tier; its limits come from configuration (`[plans.<tier>]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    #[default]
    Free,
    Liftoff,
    Lightyear,
}

impl Plan {
    /// The tier's name as the API and CLI spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Liftoff => "liftoff",
            Plan::Lightyear => "lightyear",
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Plan {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "free" => Ok(Plan::Free),
            "liftoff" => Ok(Plan::Liftoff),
            "lightyear" => Ok(Plan::Lightyear),
            other => Err(format!(
                "unknown plan {other:?}: use free, liftoff or lightyear"
            )),
        }
    }
}

/// Who set an account's plan last: the operator (`keys create --plan`, `accounts
/// set-plan`), or billing (a provider's webhook, or a lapsed grace period).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PlanSource {
    #[default]
    Operator,
    Billing,
}

impl PlanSource {
    /// As the CLI, the admin socket and the database spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanSource::Operator => "operator",
            PlanSource::Billing => "billing",
        }
    }
}

/// The three tiers' limits: the `[plans]` section of the config file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(from = "PlanTables")]
pub struct Plans {
    pub free: PlanLimits,
    pub liftoff: PlanLimits,
    pub lightyear: PlanLimits,
}

impl Default for Plans {
    fn default() -> Self {
        Self {
            free: PlanLimits {
                spawns_per_minute: 5,
                spawns_per_hour: 30,
                concurrent_agents: 2,
                memories: 1_000,
                agent_hours_per_month: 10.0,
                component_max_bytes: 8 << 20,
                components: 10,
                cpu_seconds_per_run: 60.0,
                keys: 5,
                versions_per_key: 10,
                event_streams: 5,
                mcp_sessions: 5,
                tools: 10,
                http_requests_per_run: 100,
                http_bytes_per_run: 10 << 20,
                http_requests_per_month: 10_000,
                http_bytes_per_month: 1 << 30,
                component_uploads_per_hour: 10,
                requests_in_flight: 128,
                tokens_per_run: 200_000,
                tokens_per_month: 2_000_000,
            },
            liftoff: PlanLimits {
                spawns_per_minute: 5,
                spawns_per_hour: 30,
                concurrent_agents: 5,
                memories: 25_000,
                agent_hours_per_month: 100.0,
                component_max_bytes: 32 << 20,
                components: 100,
                cpu_seconds_per_run: 600.0,
                keys: 20,
                versions_per_key: 50,
                event_streams: 20,
                mcp_sessions: 20,
                tools: 50,
                http_requests_per_run: 1_000,
                http_bytes_per_run: 100 << 20,
                http_requests_per_month: 200_000,
                http_bytes_per_month: 20 << 30,
                component_uploads_per_hour: 60,
                requests_in_flight: 256,
                tokens_per_run: 1_000_000,
                tokens_per_month: 50_000_000,
            },
            lightyear: PlanLimits {
                spawns_per_minute: 30,
                spawns_per_hour: 500,
                concurrent_agents: 25,
                memories: 250_000,
                agent_hours_per_month: 1_000.0,
                component_max_bytes: 64 << 20,
                components: 1_000,
                cpu_seconds_per_run: 3_600.0,
                keys: 100,
                versions_per_key: 100,
                event_streams: 100,
                mcp_sessions: 100,
                tools: 200,
                http_requests_per_run: 10_000,
                http_bytes_per_run: 1 << 30,
                http_requests_per_month: 2_000_000,
                http_bytes_per_month: 200 << 30,
                component_uploads_per_hour: 300,
                requests_in_flight: 512,
                tokens_per_run: 4_000_000,
                tokens_per_month: 500_000_000,
            },
        }
    }
}

impl Plans {
    /// The limits of one tier.
    pub fn limits(&self, plan: Plan) -> &PlanLimits {
        match plan {
            Plan::Free => &self.free,
            Plan::Liftoff => &self.liftoff,
            Plan::Lightyear => &self.lightyear,
        }
    }

    /// The largest component any plan may upload.
    pub fn largest_component(&self) -> u64 {
        [&self.free, &self.liftoff, &self.lightyear]
            .iter()
            .map(|l| l.component_max_bytes)
            .max()
            .unwrap_or(0)
    }
}

/// Limits of one plan tier.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanLimits {
    /// Spawns per API key in any rolling 60 s window.
    pub spawns_per_minute: u32,
    /// Spawns per API key in any rolling 3,600 s window.
    pub spawns_per_hour: u32,
    /// Agents spawning or running at once, per account.
    pub concurrent_agents: u32,
    /// Live memories per account, across all its keys and namespaces.
    pub memories: u64,
    /// Agent run time per account per calendar month (UTC), in hours.
    pub agent_hours_per_month: f64,
    /// Largest agent component an account may upload, in bytes.
    pub component_max_bytes: u64,
    /// Most agent components an account may keep.
    pub components: u32,
    /// CPU time one agent's run may use, in seconds; past it the run fails with
    /// `cpu_limit_exceeded`.
    pub cpu_seconds_per_run: f64,
    /// Active (unrevoked) API keys per account; spawn-rate windows are per key, so this
    /// also bounds an account's spawn rate.
    pub keys: u32,
    /// Mind tokens (input plus output) one agent's run may spend; past it the run fails
    /// with `token_limit_exceeded`.
    pub tokens_per_run: u64,
    /// Mind tokens (input plus output) per account per calendar month (UTC), the agents'
    /// and the host's jobs for it (titles, extraction, consolidation); once spent, a spawn
    /// is refused with 402 `monthly_quota_exceeded`.
    pub tokens_per_month: u64,
    /// Stored versions kept per memory key (the latest included); a put that makes a new
    /// version prunes the older ones (see `memory::Quota`).
    pub versions_per_key: u32,
    /// Event streams an account may have open at once (on one node): the console's agent
    /// streams and the MCP sessions' (`GET /mcp`); past it the stream is refused with 429
    /// `stream_limit_reached`.
    pub event_streams: u32,
    /// MCP sessions an account may have open at once (on one node, which keeps them); past
    /// it a new session is refused with 429 `session_limit_reached`.
    pub mcp_sessions: u32,
    /// Component uploads (each validated and compiled) per account in any rolling hour
    /// (on one node); past it 429 `rate_limited` with Retry-After.
    pub component_uploads_per_hour: u32,
    /// Tools (HTTP endpoints and MCP servers) an account may register; past it 402
    /// `tool_quota_exceeded`.
    pub tools: u32,
    /// Requests of an account in flight at once (on one node), from its authentication to
    /// its answer's last byte, so an open event stream counts for as long as it is open;
    /// past it 429 `request_limit_reached` with Retry-After.
    pub requests_in_flight: u32,
    /// Outgoing HTTP requests (`wasi:http`) one agent's run may make; past it a request is
    /// refused (`HTTP-request-denied`, logged as the `budget` rule).
    pub http_requests_per_run: u64,
    /// Bytes of outgoing HTTP (request bodies and response bodies) one run may move.
    pub http_bytes_per_run: u64,
    /// Outgoing HTTP requests per account per calendar month (UTC), as the usage ledger
    /// counts them (its runs' counts are added when each run ends).
    pub http_requests_per_month: u64,
    /// Bytes of outgoing HTTP per account per calendar month (UTC).
    pub http_bytes_per_month: u64,
}

impl PlanLimits {
    /// What the plan allows memory writes.
    pub fn memory_quota(&self) -> Quota {
        Quota {
            memories: self.memories,
            versions_per_key: self.versions_per_key,
        }
    }
}

/// The `[plans]` section as written: tiers left out keep their defaults.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanTables {
    free: Option<PlanTable>,
    liftoff: Option<PlanTable>,
    lightyear: Option<PlanTable>,
}

/// One `[plans.X]` table. The original five limits must all be given, so a partial table
/// cannot silently mix tiers; the component, CPU, key, token and version limits came later
/// and, left out, keep the tier's own defaults (so configuration files written before them still load).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanTable {
    spawns_per_minute: u32,
    spawns_per_hour: u32,
    concurrent_agents: u32,
    memories: u64,
    agent_hours_per_month: f64,
    component_max_bytes: Option<u64>,
    components: Option<u32>,
    cpu_seconds_per_run: Option<f64>,
    keys: Option<u32>,
    tokens_per_run: Option<u64>,
    tokens_per_month: Option<u64>,
    versions_per_key: Option<u32>,
    event_streams: Option<u32>,
    mcp_sessions: Option<u32>,
    component_uploads_per_hour: Option<u32>,
    tools: Option<u32>,
    requests_in_flight: Option<u32>,
    http_requests_per_run: Option<u64>,
    http_bytes_per_run: Option<u64>,
    http_requests_per_month: Option<u64>,
    http_bytes_per_month: Option<u64>,
}

impl PlanTable {
    fn over(self, default: &PlanLimits) -> PlanLimits {
        PlanLimits {
            spawns_per_minute: self.spawns_per_minute,
            spawns_per_hour: self.spawns_per_hour,
            concurrent_agents: self.concurrent_agents,
            memories: self.memories,
            agent_hours_per_month: self.agent_hours_per_month,
            component_max_bytes: self
                .component_max_bytes
                .unwrap_or(default.component_max_bytes),
            components: self.components.unwrap_or(default.components),
            cpu_seconds_per_run: self
                .cpu_seconds_per_run
                .unwrap_or(default.cpu_seconds_per_run),
            keys: self.keys.unwrap_or(default.keys),
            tokens_per_run: self.tokens_per_run.unwrap_or(default.tokens_per_run),
            tokens_per_month: self.tokens_per_month.unwrap_or(default.tokens_per_month),
            versions_per_key: self.versions_per_key.unwrap_or(default.versions_per_key),
            event_streams: self.event_streams.unwrap_or(default.event_streams),
            mcp_sessions: self.mcp_sessions.unwrap_or(default.mcp_sessions),
            http_requests_per_run: (self.http_requests_per_run)
                .unwrap_or(default.http_requests_per_run),
            http_bytes_per_run: self
                .http_bytes_per_run
                .unwrap_or(default.http_bytes_per_run),
            http_requests_per_month: (self.http_requests_per_month)
                .unwrap_or(default.http_requests_per_month),
            http_bytes_per_month: (self.http_bytes_per_month)
                .unwrap_or(default.http_bytes_per_month),
            component_uploads_per_hour: self
                .component_uploads_per_hour
                .unwrap_or(default.component_uploads_per_hour),
            tools: self.tools.unwrap_or(default.tools),
            requests_in_flight: self
                .requests_in_flight
                .unwrap_or(default.requests_in_flight),
        }
    }
}

impl From<PlanTables> for Plans {
    fn from(t: PlanTables) -> Self {
        let d = Plans::default();
        let tier = |table: Option<PlanTable>, default: PlanLimits| match table {
            Some(table) => table.over(&default),
            None => default,
        };
        Plans {
            free: tier(t.free, d.free),
            liftoff: tier(t.liftoff, d.liftoff),
            lightyear: tier(t.lightyear, d.lightyear),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIVE: &str = "spawns_per_minute = 1\nspawns_per_hour = 2\nconcurrent_agents = 3\n\
                        memories = 4\nagent_hours_per_month = 5.0\n";

    #[test]
    fn later_limits_default_per_tier_and_may_be_given() {
        let plans: Plans = toml::from_str(&format!(
            "[lightyear]\n{FIVE}\n[free]\n{FIVE}component_max_bytes = 1024\ncomponents = 2\n\
             cpu_seconds_per_run = 1.5\nkeys = 3\ntokens_per_run = 1000\n\
             tokens_per_month = 9000\nversions_per_key = 4\nrequests_in_flight = 7\n\
             mcp_sessions = 2\ntools = 3\n"
        ))
        .unwrap();
        assert_eq!(plans.lightyear.component_max_bytes, 64 << 20);
        assert_eq!(plans.lightyear.cpu_seconds_per_run, 3_600.0);
        assert_eq!(plans.free.cpu_seconds_per_run, 1.5);
        assert_eq!(plans.lightyear.components, 1_000);
        assert_eq!(plans.lightyear.memories, 4);
        assert_eq!(
            (plans.lightyear.keys, plans.lightyear.tokens_per_run),
            (100, 4_000_000)
        );
        assert_eq!(
            (
                plans.free.keys,
                plans.free.tokens_per_run,
                plans.free.tokens_per_month
            ),
            (3, 1_000, 9_000)
        );
        assert_eq!(
            plans.free.memory_quota(),
            Quota {
                memories: 4,
                versions_per_key: 4
            }
        );
        assert_eq!(plans.lightyear.versions_per_key, 100);
        assert_eq!(
            (
                plans.free.requests_in_flight,
                plans.lightyear.requests_in_flight
            ),
            (7, 512)
        );
        assert_eq!(
            (
                plans.free.event_streams,
                plans.free.component_uploads_per_hour
            ),
            (5, 10)
        );
        assert_eq!(
            (plans.free.mcp_sessions, plans.lightyear.mcp_sessions),
            (2, 100)
        );
        assert_eq!((plans.free.tools, plans.lightyear.tools), (3, 200));
        assert_eq!(
            (plans.free.component_max_bytes, plans.free.components),
            (1024, 2)
        );
        assert_eq!(plans.liftoff, Plans::default().liftoff);
        assert_eq!(plans.largest_component(), 64 << 20);
        let unknown = toml::from_str::<Plans>(&format!("[free]\n{FIVE}component_bytes = 1\n"));
        assert!(unknown.unwrap_err().to_string().contains("component_bytes"));
        let partial = toml::from_str::<Plans>("[free]\nmemories = 4\n");
        assert!(
            partial
                .unwrap_err()
                .to_string()
                .contains("spawns_per_minute")
        );
    }
}
