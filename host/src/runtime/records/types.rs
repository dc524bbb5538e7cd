//! What is stored about an agent: its record (status, progress, result, usage) and the
//! events of its log stream; the same on every backend.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    accounts::{MonthUsage, PlanLimits},
    memory::Quota,
};

/// Most progress entries kept on a record (oldest dropped first).
pub const MAX_PROGRESS: usize = 500;

/// Lifecycle of an agent (§3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Spawning,
    Running,
    Completed,
    Stopped,
    Failed,
}

impl Status {
    /// No further transitions happen from a terminal status.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Stopped | Status::Failed)
    }

    /// Spelling in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Spawning => "spawning",
            Status::Running => "running",
            Status::Completed => "completed",
            Status::Stopped => "stopped",
            Status::Failed => "failed",
        }
    }
}

/// What an agent may do with its account's memory (§4.4 memory writing modes, plus `off`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryMode {
    /// The tools, and automatic extraction after a completed run (the default).
    #[default]
    Auto,
    /// The tools only: nothing is extracted.
    Explicit,
    /// The tools, extraction, and the agent is told to write what matters as it works.
    Both,
    /// No memory: every tool call fails with "memory channel is not configured".
    Off,
}

impl MemoryMode {
    /// Every mode, in the order the API documents them.
    pub const ALL: [MemoryMode; 4] = [Self::Auto, Self::Explicit, Self::Both, Self::Off];

    /// Spelling in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Explicit => "explicit",
            Self::Both => "both",
            Self::Off => "off",
        }
    }

    /// The mode spelled `s`, if any.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// Whether a completed run's memories are extracted.
    pub fn extracts(self) -> bool {
        matches!(self, Self::Auto | Self::Both)
    }

    /// Whether the memory tools reach the memory service.
    pub fn has_memory(self) -> bool {
        self != Self::Off
    }
}

/// A progress entry (§2.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub ts: u64,
    pub kind: String,
    pub message: String,
    /// The journal step of the guest's report that made it (none for the host's own
    /// entries): a report made again after a crash, its entry lost but its record write
    /// kept, finds itself here and adds nothing. Not shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
}

/// Why an agent failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub code: String,
    pub message: String,
}

/// Tokens an agent's Mind calls spent, and the CPU time it used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// CPU time the guest used, in milliseconds (records made before it was metered
    /// read 0).
    #[serde(default)]
    pub cpu_ms: u64,
    /// Outgoing HTTP requests the guest made (`wasi:http`), answered or refused.
    #[serde(default)]
    pub http_requests: u64,
    /// Their bytes: request bodies sent and response bodies received.
    #[serde(default)]
    pub http_bytes: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cpu_ms += other.cpu_ms;
        self.http_requests += other.http_requests;
        self.http_bytes += other.http_bytes;
    }
}

impl From<crate::mind::Usage> for Usage {
    fn from(u: crate::mind::Usage) -> Self {
        Usage {
            input_tokens: u64::from(u.input_tokens),
            output_tokens: u64::from(u.output_tokens),
            ..Usage::default()
        }
    }
}

impl Usage {
    /// Mind tokens, input and output: what `tokens_per_run` counts.
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// These tokens and CPU time and `run_ms` of run time, as the account's monthly usage
    /// counts them.
    pub fn month(self, run_ms: u64) -> MonthUsage {
        MonthUsage {
            run_ms,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cpu_ms: self.cpu_ms,
            http_requests: self.http_requests,
            http_bytes: self.http_bytes,
        }
    }
}

/// What one run is allowed, from the account's plan when it was spawned.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Allowance {
    /// The account's memory quota, which the agent's writes are checked against.
    pub memory_quota: Quota,
    /// The guest's CPU time.
    pub cpu_budget: Duration,
    /// Mind tokens (input plus output) the guest's Mind calls may spend.
    pub token_budget: u64,
}

impl Allowance {
    /// What `limits` allow one run.
    pub fn of(limits: &PlanLimits) -> Self {
        Allowance {
            memory_quota: limits.memory_quota(),
            cpu_budget: Duration::try_from_secs_f64(limits.cpu_seconds_per_run.max(0.0))
                .unwrap_or(Duration::MAX),
            token_budget: limits.tokens_per_run,
        }
    }

    /// The CPU budget in whole ms, as a row keeps it.
    pub fn cpu_budget_ms(&self) -> u64 {
        u64::try_from(self.cpu_budget.as_millis()).unwrap_or(u64::MAX)
    }

    /// An allowance as a row keeps it; a row without a token budget or versions bound
    /// (offered before there were) has none.
    pub fn from_row(
        memories: u64,
        versions_per_key: Option<u32>,
        cpu_budget_ms: u64,
        token_budget: Option<u64>,
    ) -> Self {
        Allowance {
            memory_quota: Quota {
                memories,
                versions_per_key: versions_per_key.unwrap_or(u32::MAX),
            },
            cpu_budget: Duration::from_millis(cpu_budget_ms),
            token_budget: token_budget.unwrap_or(u64::MAX),
        }
    }
}

/// Which uploaded component an agent runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentComponent {
    pub component_id: String,
    pub name: String,
    pub version: String,
}

/// One agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRecord {
    pub agent_id: String,
    pub account: String,
    pub key_id: String,
    pub name: String,
    pub status: Status,
    pub task: String,
    pub created_at: u64,
    pub updated_at: u64,
    pub final_result: Option<String>,
    pub progress: Vec<Progress>,
    pub error: Option<Failure>,
    pub model: String,
    pub started_at: Option<u64>,
    pub ended_at: Option<u64>,
    pub usage: Usage,
    /// Records written before memory modes existed read as `auto`.
    #[serde(default)]
    pub memory_mode: MemoryMode,
    /// The uploaded component it runs; `None` for the default agent (and for records
    /// written before components existed).
    #[serde(default)]
    pub agent: Option<AgentComponent>,
    /// Position in the account's list (newest has the highest).
    pub seq: u64,
    /// Host calls its run's journal holds: as of its last progress report, its resume or
    /// its end (the record is not written at every call). Records written before journals
    /// existed read as 0.
    #[serde(default)]
    pub steps: u64,
    /// The account's tools it is offered, by name (the spawn's `tools` field); `None`, as
    /// in records written before tools existed: all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
}

/// One event of an agent's log stream.
///
/// [`AgentStore::append_log_event`]: super::AgentStore::append_log_event
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEvent {
    pub seq: u64,
    pub ts: u64,
    /// `thinking`, `tool_use`, `tool_result` or `terminal`.
    pub kind: String,
    pub message: String,
    pub data: Option<Value>,
    /// The journal step of the guest's `progress.log` call that made it (internal, not
    /// shown): one made again after a crash that kept the event but lost its journal entry
    /// is not appended twice (see [`AgentStore::append_log_event`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
}

impl LogEvent {
    /// An event of `kind` made now; its sequence number is given when it is appended.
    pub fn new(kind: &str, message: String, data: Option<Value>) -> Self {
        Self {
            seq: 0,
            ts: crate::clock::now_ms(),
            kind: kind.to_string(),
            message,
            data,
            step: None,
        }
    }
}
