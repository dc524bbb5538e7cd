//! An account's usage this month against its plan: what the console's usage page shows,
//! gathered from each part that counts (the runtime's run time, spawns, agents and
//! uploads; the ledger's tokens, CPU and HTTP; the memory pool; the keys; the open event
//! streams) and set beside the plan's limits here, not in a handler.

use serde::Serialize;
use utoipa::ToSchema;

use super::{AppResult, AppState, Caller, schema::plan};
use crate::{
    accounts::Places,
    clock::{month_of, now_ms},
};

/// The usage of `who`'s account this month, each figure beside its plan's limit.
pub async fn report(state: &AppState, who: &Caller) -> AppResult<UsageReport> {
    let account = who.account.as_ref();
    let limits = state.limits(who.plan);
    let now = now_ms();
    let run_ms = state.runtime.month_run_ms(account, now).await?;
    let month = state.usage.month(account, now).await?;
    let live: u64 = state
        .memory
        .namespaces(account)
        .await?
        .iter()
        .map(|(_, n)| n)
        .sum();
    let mut spawn_windows = Vec::new();
    let keys = state.keys.keys(account).await?;
    let places = Places::of(keys.iter().map(|k| k.revoked_at), now);
    let live_keys = keys.into_iter().filter(|k| k.revoked_at.is_none());
    for key in live_keys {
        let (minute, hour) = state.runtime.spawns_in_windows(account, &key.id).await?;
        spawn_windows.extend(
            [
                (60, minute, limits.spawns_per_minute),
                (3_600, hour, limits.spawns_per_hour),
            ]
            .map(|(window_secs, used, limit)| SpawnWindow {
                key_id: key.id.clone(),
                window_secs,
                used,
                limit: Some(limit),
            }),
        );
    }
    let running = state.runtime.concurrent(account).await?;
    Ok(UsageReport {
        month: month_of(now),
        plan: who.plan.as_str(),
        agent_hours: HoursUsed {
            used: run_ms as f64 / 3_600_000.0,
            limit: Some(limits.agent_hours_per_month),
        },
        memories: MemoriesUsed {
            live,
            limit: Some(limits.memories),
            versions_per_key: Some(limits.versions_per_key),
        },
        concurrent_agents: ConcurrencyUsed {
            running,
            limit: Some(limits.concurrent_agents),
        },
        spawn_windows,
        keys: KeysUsed {
            active: places.active,
            revoked_last_hour: places.held,
            limit: Some(limits.keys),
        },
        component_uploads: UploadsUsed {
            last_hour: state.runtime.uploads_in_hour(account),
            limit: Some(limits.component_uploads_per_hour),
        },
        event_streams: StreamsUsed {
            open: state.console.streams.count(account),
            limit: Some(limits.event_streams),
        },
        tokens: TokensUsed {
            used: month.tokens(),
            limit: Some(limits.tokens_per_month),
            per_run: Some(limits.tokens_per_run),
        },
        http: HttpUsed {
            requests: month.http_requests,
            requests_limit: limits.http_requests_per_month,
            requests_per_run: limits.http_requests_per_run,
            bytes: month.http_bytes,
            bytes_limit: limits.http_bytes_per_month,
            bytes_per_run: limits.http_bytes_per_run,
        },
        cpu_seconds: month.cpu_ms as f64 / 1_000.0,
        input_tokens: month.input_tokens,
        output_tokens: month.output_tokens,
    })
}

/// A used amount against its plan limit.
#[derive(Debug, Serialize, ToSchema)]
pub struct HoursUsed {
    /// Agent run hours this month (finished runs and running agents so far).
    pub used: f64,
    /// The plan's agent-hours per month.
    pub limit: Option<f64>,
}

/// Live memories against the plan's pool.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemoriesUsed {
    pub live: u64,
    pub limit: Option<u64>,
    /// The plan's `versions_per_key`: versions kept of each key, older ones pruned.
    pub versions_per_key: Option<u32>,
}

/// Agents spawning or running against the plan's cap.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConcurrencyUsed {
    pub running: u32,
    pub limit: Option<u32>,
}

/// The places the account's API keys take against the plan's `keys`: the active ones, and
/// those revoked within the last hour (a revoked key keeps its place for an hour, while
/// its spawn-rate windows last).
#[derive(Debug, Serialize, ToSchema)]
pub struct KeysUsed {
    pub active: u32,
    /// Keys revoked within the last hour, each still taking a place.
    pub revoked_last_hour: u32,
    pub limit: Option<u32>,
}

/// Component uploads counted on this node in the last hour against the plan's
/// `component_uploads_per_hour`.
#[derive(Debug, Serialize, ToSchema)]
pub struct UploadsUsed {
    pub last_hour: u32,
    pub limit: Option<u32>,
}

/// Event streams open on this node against the plan's `event_streams`.
#[derive(Debug, Serialize, ToSchema)]
pub struct StreamsUsed {
    pub open: u32,
    pub limit: Option<u32>,
}

/// Mind tokens (input plus output) this month against the plan's `tokens_per_month`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokensUsed {
    pub used: u64,
    pub limit: Option<u64>,
    /// The plan's `tokens_per_run`: what one agent's run may spend.
    pub per_run: Option<u64>,
}

/// The agents' outgoing HTTP (`wasi:http`) this month (finished runs) against the plan's
/// budgets: requests, and bytes (request and response bodies).
#[derive(Debug, Serialize, ToSchema)]
pub struct HttpUsed {
    pub requests: u64,
    /// The plan's `http_requests_per_month`.
    pub requests_limit: u64,
    /// The plan's `http_requests_per_run`.
    pub requests_per_run: u64,
    pub bytes: u64,
    /// The plan's `http_bytes_per_month`.
    pub bytes_limit: u64,
    /// The plan's `http_bytes_per_run`.
    pub bytes_per_run: u64,
}

/// One live key's spawns in one rolling window.
#[derive(Debug, Serialize, ToSchema)]
pub struct SpawnWindow {
    pub key_id: String,
    /// 60 or 3600.
    #[schema(minimum = 60, maximum = 3600)]
    pub window_secs: u32,
    pub used: u32,
    pub limit: Option<u32>,
}

/// GET /api/v1/console/usage: the account's usage against its plan. A `limit` is null when
/// the plan has none (every plan has all of them today).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ConsoleUsage)]
pub struct UsageReport {
    /// The calendar month (UTC) counted, `YYYY-MM`.
    pub month: String,
    #[schema(schema_with = plan)]
    pub plan: &'static str,
    pub agent_hours: HoursUsed,
    pub memories: MemoriesUsed,
    pub concurrent_agents: ConcurrencyUsed,
    /// Two per live key (60 s and 3,600 s); the windows are kept in memory, so a restart
    /// empties them.
    pub spawn_windows: Vec<SpawnWindow>,
    pub keys: KeysUsed,
    pub event_streams: StreamsUsed,
    pub component_uploads: UploadsUsed,
    /// Mind tokens this month (finished runs and the host's jobs) against the plan.
    pub tokens: TokensUsed,
    /// Agents' outgoing HTTP this month (finished runs) against the plan.
    pub http: HttpUsed,
    /// CPU time the account's agents used this month, in seconds (finished runs).
    #[schema(minimum = 0)]
    pub cpu_seconds: f64,
    /// Tokens the account's Minds spent this month.
    pub input_tokens: u64,
    pub output_tokens: u64,
}
