//! What the agent routes answer, and the `details` of their refusals.

use serde::Serialize;
use serde_json::Value;
use utoipa::{ToSchema, openapi::Schema};

use super::{
    super::{schema, views::AgentUsage},
    components::AgentComponentView,
};
use crate::{
    clock::iso8601,
    runtime::{AgentRecord, LogEvent, REGION, Status},
};

fn status() -> Schema {
    schema::one_of(["spawning", "running", "completed", "stopped", "failed"]).into()
}

fn monthly_budget() -> Schema {
    schema::one_of(["agent_hours", "tokens"]).into()
}

fn memory_mode() -> Schema {
    super::request::memory_mode().into()
}

/// Where a spawned agent runs.
#[derive(Debug, Serialize, ToSchema)]
pub struct Container {
    /// Always "iad".
    pub region: &'static str,
    /// Always "starting".
    pub status: &'static str,
}

/// POST /api/v1/agents
#[derive(Debug, Serialize, ToSchema)]
pub struct SpawnedAgent {
    pub agent_id: String,
    pub name: String,
    #[schema(schema_with = status)]
    pub status: &'static str,
    pub task: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    pub model: String,
    pub container: Container,
    /// The uploaded component it runs; null for the built-in default agent.
    pub agent: Option<AgentComponentView>,
}

impl From<&AgentRecord> for SpawnedAgent {
    /// A newly admitted agent, as the spawn answers it.
    fn from(record: &AgentRecord) -> Self {
        SpawnedAgent {
            created_at: iso8601(record.created_at),
            agent_id: record.agent_id.clone(),
            name: record.name.clone(),
            status: Status::Spawning.as_str(),
            task: record.task.clone(),
            model: record.model.clone(),
            container: Container {
                region: REGION,
                status: "starting",
            },
            agent: record.agent.as_ref().map(AgentComponentView::from),
        }
    }
}

/// A progress entry (§2.3).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AgentProgress)]
pub struct ProgressView {
    /// Epoch milliseconds.
    pub ts: u64,
    pub kind: String,
    pub message: String,
}

/// Why an agent failed.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AgentError)]
pub struct FailureView {
    pub code: String,
    pub message: String,
}

/// The agent record as list and get return it.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Agent)]
pub struct AgentView {
    pub agent_id: String,
    pub name: String,
    #[schema(schema_with = status)]
    pub status: &'static str,
    pub task: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// The agent's answer once completed.
    pub final_result: Option<String>,
    pub progress: Vec<ProgressView>,
    pub error: Option<FailureView>,
    pub model: String,
    pub usage: AgentUsage,
    #[schema(schema_with = memory_mode)]
    pub memory_mode: &'static str,
    /// The uploaded component it runs; null for the built-in default agent.
    pub agent: Option<AgentComponentView>,
    /// Calls its guest made to the host, each recorded in the run's journal (what a resume
    /// replays): as of its last progress report, its resume or its end.
    pub steps: u64,
    /// The account's tools it is offered, by name (its spawn's `tools`); absent: all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
}

impl From<&AgentRecord> for AgentView {
    fn from(r: &AgentRecord) -> Self {
        Self {
            agent_id: r.agent_id.clone(),
            name: r.name.clone(),
            status: r.status.as_str(),
            task: r.task.clone(),
            created_at: iso8601(r.created_at),
            updated_at: iso8601(r.updated_at),
            final_result: r.final_result.clone(),
            progress: r
                .progress
                .iter()
                .map(|p| ProgressView {
                    ts: p.ts,
                    kind: p.kind.clone(),
                    message: p.message.clone(),
                })
                .collect(),
            error: r.error.as_ref().map(|e| FailureView {
                code: e.code.clone(),
                message: e.message.clone(),
            }),
            model: r.model.clone(),
            usage: AgentUsage {
                input_tokens: r.usage.input_tokens,
                output_tokens: r.usage.output_tokens,
                cpu_seconds: r.usage.cpu_ms as f64 / 1_000.0,
            },
            memory_mode: r.memory_mode.as_str(),
            agent: r.agent.as_ref().map(AgentComponentView::from),
            steps: r.steps,
            tools: r.tools.clone(),
        }
    }
}

/// GET /api/v1/agents
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentList {
    /// Newest first.
    pub data: Vec<AgentView>,
    /// Pass back as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// DELETE /api/v1/agents/{id}
#[derive(Debug, Serialize, ToSchema)]
pub struct StopResult {
    pub agent_id: String,
    #[schema(schema_with = status)]
    pub status: &'static str,
}

impl StopResult {
    /// Agent `agent_id`'s status after a stop.
    pub fn new(agent_id: String, status: Status) -> Self {
        StopResult {
            agent_id,
            status: status.as_str(),
        }
    }
}

/// One log event of an agent.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AgentLogEvent)]
pub struct LogEventView {
    pub seq: u64,
    /// Epoch milliseconds.
    pub ts: u64,
    pub kind: String,
    pub message: String,
    /// Structured context, when the event has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Object)]
    pub data: Option<Value>,
}

impl From<&LogEvent> for LogEventView {
    fn from(e: &LogEvent) -> Self {
        Self {
            seq: e.seq,
            ts: e.ts,
            kind: e.kind.clone(),
            message: e.message.clone(),
            data: e.data.clone(),
        }
    }
}

/// GET /api/v1/agents/{id}/logs
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AgentLogPage)]
pub struct LogPage {
    /// Oldest first.
    pub data: Vec<LogEventView>,
    pub next_cursor: Option<String>,
}

/// `details` of 402 `monthly_quota_exceeded`: the month's agent-hours and Mind tokens
/// against the plan's, whichever of the two is spent.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonthlyQuotaDetails {
    pub plan: &'static str,
    /// The budget that is spent: `agent_hours` or `tokens`.
    #[schema(schema_with = monthly_budget)]
    pub budget: &'static str,
    pub used_hours: f64,
    pub limit_hours: f64,
    /// Mind tokens (input plus output) spent this month.
    pub used_tokens: u64,
    /// The plan's `tokens_per_month`.
    pub limit_tokens: u64,
    #[schema(format = DateTime)]
    pub resets_at: String,
}

/// `details` of 429 `concurrent_limit_reached`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConcurrentLimitDetails {
    pub plan: &'static str,
    pub current_concurrent: u64,
    pub max_concurrent: u64,
}

/// `details` of 429 `rate_limited` on spawn.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitDetails {
    pub plan: &'static str,
    /// "minute" or "hour".
    pub window: &'static str,
    pub limit_per_minute: u32,
    pub limit_per_hour: u32,
}
