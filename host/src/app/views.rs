//! Renderings of memory records, in the field names of the specification.
//!
//! The full memory record carries both spellings of the access counter the spec uses
//! (`access_count` and `accessCount`); `isLatestVersion` and `deletedAt` (epoch ms or null)
//! are spelled as the spec spells them, and the consolidation link likewise comes in both
//! spellings (`consolidated_into`, `consolidatedInto`).

use serde::{Serialize, Serializer};
use utoipa::ToSchema;

use crate::memory::{Door, Memory, Provenance, SearchHit};

/// Importance as a JSON number: whole numbers stay integers (`5`, not `5.0`).
fn importance<S: Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
    if value.fract() == 0.0 {
        s.serialize_i64(*value as i64)
    } else {
        s.serialize_f64(*value)
    }
}

/// Where a memory came from.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceView {
    Manual,
    AutoExtracted,
    Consolidated,
}

impl From<crate::memory::Source> for SourceView {
    fn from(s: crate::memory::Source) -> Self {
        use crate::memory::Source;
        match s {
            Source::Manual => Self::Manual,
            Source::AutoExtracted => Self::AutoExtracted,
            Source::Consolidated => Self::Consolidated,
        }
    }
}

/// The door a memory version came in by.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = ProvenanceDoor)]
pub enum DoorView {
    Rest,
    Import,
    Mcp,
    AgentTool,
    AutoExtraction,
    Consolidation,
}

impl From<Door> for DoorView {
    fn from(d: Door) -> Self {
        match d {
            Door::Rest => Self::Rest,
            Door::Import => Self::Import,
            Door::Mcp => Self::Mcp,
            Door::AgentTool => Self::AgentTool,
            Door::AutoExtraction => Self::AutoExtraction,
            Door::Consolidation => Self::Consolidation,
        }
    }
}

/// Who wrote a memory version and by which door; finer than `source`. Null on versions
/// written before provenance was recorded.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Provenance)]
pub struct ProvenanceView {
    pub door: DoorView,
    /// The API key's id (`key_…`) for the doors a key opens: `rest`, `import`, `mcp`, and
    /// a `consolidation` asked for over REST.
    pub key_id: Option<String>,
    /// The agent whose tool call (`agent_tool`) or run (`auto_extraction`) wrote it; its
    /// record is `GET /api/v1/agents/{agent_id}`.
    pub agent_id: Option<String>,
    /// The agent run's journal step of the tool call; null where runs are not journaled.
    #[schema(minimum = 1)]
    pub step: Option<u64>,
    /// For a consolidation summary: the `memory_id`s of the memories it replaced.
    pub replaced: Vec<String>,
}

impl From<&Provenance> for ProvenanceView {
    fn from(p: &Provenance) -> Self {
        Self {
            door: p.door.into(),
            key_id: p.key_id.clone(),
            agent_id: p.agent_id.clone(),
            step: p.step,
            replaced: p.replaced.clone(),
        }
    }
}

/// The fields every rendering of a memory shares.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryCore {
    pub key: String,
    pub value: String,
    pub namespace: String,
    pub tags: Vec<String>,
    #[serde(serialize_with = "importance")]
    #[schema(minimum = 1, maximum = 10)]
    pub importance: f64,
    pub source: SourceView,
    /// Epoch milliseconds.
    pub created_at: u64,
}

impl From<&Memory> for MemoryCore {
    fn from(m: &Memory) -> Self {
        Self {
            key: m.key.clone(),
            value: m.value.clone(),
            namespace: m.namespace.clone(),
            tags: m.tags.clone(),
            importance: m.importance,
            source: m.source.into(),
            created_at: m.created_at,
        }
    }
}

/// The full memory record (put, get, list, history, a soft delete).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Memory)]
pub struct MemoryView {
    #[serde(flatten)]
    pub core: MemoryCore,
    pub memory_id: String,
    /// Epoch milliseconds: when this version was written.
    pub updated_at: u64,
    /// Epoch milliseconds: when this version's fact was stated or observed, as its writer
    /// said (`observed_at` of the put or import); its write time otherwise.
    pub observed_at: u64,
    pub access_count: u64,
    /// The same count, in the specification's other spelling.
    #[serde(rename = "accessCount")]
    pub access_count_camel: u64,
    /// Epoch milliseconds, or null when the memory never expires.
    pub expires_at: Option<u64>,
    #[serde(rename = "isLatestVersion")]
    pub is_latest_version: bool,
    /// Epoch milliseconds of a soft delete, or null.
    #[serde(rename = "deletedAt")]
    pub deleted_at: Option<u64>,
    #[schema(minimum = 1)]
    pub version: u32,
    /// The summary's memory_id when consolidation replaced this memory.
    pub consolidated_into: Option<String>,
    #[serde(rename = "consolidatedInto")]
    pub consolidated_into_camel: Option<String>,
    pub provenance: Option<ProvenanceView>,
}

impl From<&Memory> for MemoryView {
    fn from(m: &Memory) -> Self {
        Self {
            core: m.into(),
            memory_id: m.memory_id.clone(),
            updated_at: m.updated_at,
            observed_at: m.observed(),
            access_count: m.access_count,
            access_count_camel: m.access_count,
            expires_at: m.expires_at,
            is_latest_version: m.is_latest,
            deleted_at: m.deleted_at,
            version: m.version,
            consolidated_into: m.consolidated_into.clone(),
            consolidated_into_camel: m.consolidated_into.clone(),
            provenance: m.provenance.as_ref().map(Into::into),
        }
    }
}

/// How a search score was made (§2.2); each part from 0 to 1.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SearchBreakdown)]
pub struct BreakdownView {
    pub semantic: f64,
    pub keyword: f64,
    pub importance: f64,
    #[serde(rename = "timeDecay")]
    pub time_decay: f64,
    /// The cross-encoder's relevance, which is then the score: only in a search with
    /// `rerank: true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 1)]
    pub rerank: Option<f64>,
}

/// A search result item (§2.2).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SearchResult)]
pub struct SearchHitView {
    #[serde(flatten)]
    pub core: MemoryCore,
    pub memory_id: String,
    #[schema(minimum = 0, maximum = 1)]
    pub score: f64,
    pub breakdown: BreakdownView,
    pub provenance: Option<ProvenanceView>,
}

impl From<&SearchHit> for SearchHitView {
    fn from(h: &SearchHit) -> Self {
        let b = &h.breakdown;
        Self {
            core: (&h.memory).into(),
            memory_id: h.memory.memory_id.clone(),
            score: h.score,
            breakdown: BreakdownView {
                semantic: b.semantic,
                keyword: b.keyword,
                importance: b.importance,
                time_decay: b.time_decay,
                rerank: b.rerank,
            },
            provenance: h.memory.provenance.as_ref().map(Into::into),
        }
    }
}

/// One memory of an export document: what import needs to recreate it, plus provenance.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportItem {
    #[serde(flatten)]
    pub core: MemoryCore,
    /// Epoch milliseconds.
    pub updated_at: u64,
    /// Epoch milliseconds: when its fact was observed (import keeps it).
    pub observed_at: u64,
    /// Days left before the memory expires; absent when it never does.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub expires_in_days: Option<f64>,
}

impl ExportItem {
    /// `m` as exported at `now` (epoch ms).
    pub fn new(m: &Memory, now: u64) -> Self {
        Self {
            core: m.into(),
            updated_at: m.updated_at,
            observed_at: m.observed(),
            expires_in_days: m
                .expires_at
                .map(|at| at.saturating_sub(now) as f64 / 86_400_000.0),
        }
    }
}

/// Tokens a Mind spent.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// What an agent's run used: its Mind's tokens and its own CPU time.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct AgentUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// CPU time the agent's code used (its wasm and the host calls' own work; not time
    /// spent waiting), counted against the plan's `cpu_seconds_per_run`; set when the
    /// run ends.
    #[schema(minimum = 0)]
    pub cpu_seconds: f64,
}
