//! What the console's own routes answer (the routes it shares with the public API answer
//! the public types). Times are ISO 8601 UTC, as on agent records.

use serde::Serialize;
use utoipa::{ToSchema, openapi::Schema};

use crate::app::schema;

/// A plan tier as the API spells it.
fn plan() -> Schema {
    schema::one_of(["free", "liftoff", "lightyear"]).into()
}

/// GET /api/v1/console/me
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ConsoleMe)]
pub struct Me {
    /// The account signed in to.
    pub account: String,
    /// Its plan tier.
    #[schema(schema_with = plan)]
    pub plan: &'static str,
    /// The ID token's `sub`.
    pub subject: String,
    /// When the ID token expires (its `exp`).
    #[schema(format = DateTime)]
    pub expires_at: String,
}

/// One API key of the account; never its secret.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ConsoleKey)]
pub struct KeyEntry {
    /// The key's public id (`key_…`).
    pub key_id: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Null while the key is live.
    #[schema(format = DateTime)]
    pub revoked_at: Option<String>,
}

/// GET /api/v1/console/keys: newest first, revoked keys included.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ConsoleKeyList)]
pub struct KeyList {
    pub data: Vec<KeyEntry>,
}

/// POST /api/v1/console/keys: the secret, shown this once.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ConsoleCreatedKey)]
pub struct CreatedKey {
    pub key_id: String,
    /// The API key itself (`wm_` + 64 hex digits); it is stored only hashed.
    #[schema(pattern = "^wm_[0-9a-f]{64}$")]
    pub key: String,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// DELETE /api/v1/console/keys/{key_id}
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ConsoleRevokedKey)]
pub struct RevokedKey {
    pub key_id: String,
    /// When it was revoked (the first revocation, if it was already).
    #[schema(format = DateTime)]
    pub revoked_at: String,
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

/// The details of 402 `key_quota_exceeded`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyQuotaDetails {
    #[schema(schema_with = plan)]
    pub plan: &'static str,
    /// The account's unrevoked keys.
    pub active_keys: u32,
    /// Its keys revoked within the last hour, each still taking a place.
    pub revoked_keys: u32,
    /// The plan's `keys`.
    pub max_keys: u32,
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
