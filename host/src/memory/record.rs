//! A stored memory version: what redb keeps, one row per version.

use serde::{Deserialize, Serialize};

/// Where a memory came from (spec §2.1 `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Written through the HTTP API or an agent's memory tool.
    Manual,
    /// Written by automatic extraction after an agent run.
    AutoExtracted,
    /// A summary written by consolidation.
    Consolidated,
}

impl Source {
    /// The spelling the API uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Manual => "manual",
            Source::AutoExtracted => "auto_extracted",
            Source::Consolidated => "consolidated",
        }
    }

    /// The source [`as_str`](Self::as_str) spells `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        [Source::Manual, Source::AutoExtracted, Source::Consolidated]
            .into_iter()
            .find(|s| s.as_str() == name)
    }
}

/// The door a memory version came in by (its provenance's `door`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Door {
    /// `POST /api/v1/memory`.
    Rest,
    /// `POST /api/v1/memory/import`.
    Import,
    /// A memory tool called over MCP.
    Mcp,
    /// An agent's memory tool call inside the sandbox.
    AgentTool,
    /// Automatic extraction after an agent's run.
    AutoExtraction,
    /// A summary written by consolidation.
    Consolidation,
}

impl Door {
    /// The specification's `source` of a version that came in by this door.
    pub fn source(self) -> Source {
        match self {
            Door::AutoExtraction => Source::AutoExtracted,
            Door::Consolidation => Source::Consolidated,
            Door::Rest | Door::Import | Door::Mcp | Door::AgentTool => Source::Manual,
        }
    }
}

/// Who wrote a memory version and how: finer than `source`, which keeps the
/// specification's three values. Only the fields its door has are set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub door: Door,
    /// The API key's id (`key_…`), for the doors a key opens (REST, import, MCP, a
    /// consolidation asked for over REST).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// The agent whose tool call or run wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The journal step of the agent's tool call (absent where runs are not journaled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// `memory_id`s of the memories a consolidation summary replaced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaced: Vec<String>,
}

impl Provenance {
    /// A door with none of the details set.
    pub fn door(door: Door) -> Self {
        Self {
            door,
            key_id: None,
            agent_id: None,
            step: None,
            replaced: Vec::new(),
        }
    }

    /// A door a key opened.
    pub fn keyed(door: Door, key_id: &str) -> Self {
        Self {
            key_id: Some(key_id.to_string()),
            ..Self::door(door)
        }
    }

    /// The agent and journal step of the tool call that wrote it, when an agent's
    /// journaled call did: what makes a call made again by a resumed run the same write.
    pub fn agent_call(&self) -> Option<(&str, u64)> {
        Some((self.agent_id.as_deref()?, self.step?))
    }

    /// Whether `m` was soft-deleted by this same agent call (a journaled one): then a
    /// delete made again by the resumed run is the one already done.
    pub fn deleted(&self, m: &Memory) -> bool {
        let by = m.deleted_by.as_ref().and_then(Provenance::agent_call);
        self.agent_call().is_some() && by == self.agent_call()
    }
}

/// One version of a memory. Versions of the same (account, namespace, key) form a chain
/// through `previous`, newest at the head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// Internal, monotonically increasing id: the row key and the index document id.
    pub id: u64,
    /// Public id, `mem_` + ULID; every version has its own.
    pub memory_id: String,
    pub account: String,
    pub namespace: String,
    pub key: String,
    pub value: String,
    pub tags: Vec<String>,
    pub importance: f64,
    pub source: Source,
    /// When this key was first written (kept across versions), epoch ms.
    pub created_at: u64,
    /// When this version was written, epoch ms.
    pub updated_at: u64,
    pub access_count: u64,
    /// After this instant (epoch ms) the memory is no longer live.
    pub expires_at: Option<u64>,
    /// False once superseded by a newer version or soft-deleted.
    pub is_latest: bool,
    pub deleted_at: Option<u64>,
    /// 1 for the first version of a key, then 2, 3, …
    pub version: u32,
    /// The version this one superseded, if any.
    pub previous: Option<u64>,
    /// `memory_id` of the consolidation summary that replaced this (soft-deleted) memory.
    /// Absent in rows written before consolidation existed, hence the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consolidated_into: Option<String>,
    /// When the fact was stated or observed (epoch ms), as its writer said (the write time
    /// by default); absent in rows written before it existed: see [`Memory::observed`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<u64>,
    /// Who wrote this version; absent in rows written before provenance existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// Who soft-deleted it, when an agent's journaled call did: what makes that call,
    /// made again by a resumed run, find its delete done rather than nothing to delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_by: Option<Provenance>,
}

impl Memory {
    /// Live: the latest version, not soft-deleted, not expired at `now`.
    pub fn is_live(&self, now: u64) -> bool {
        self.is_latest && self.deleted_at.is_none() && !self.is_expired(now)
    }

    /// When the fact was observed: as its writer said, else when this version was written.
    pub fn observed(&self) -> u64 {
        self.observed_at.unwrap_or(self.updated_at)
    }

    /// Whether this version was live at `at`, given that no newer version of its key was
    /// written by then: written by `at`, and neither deleted nor expired at `at`.
    pub fn was_live_at(&self, at: u64) -> bool {
        self.updated_at <= at && self.deleted_at.is_none_or(|d| d > at) && !self.is_expired(at)
    }

    /// Whether the expiry instant has passed at `now`.
    pub fn is_expired(&self, now: u64) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// True when every one of `tags` is carried by this memory.
    pub fn has_all_tags(&self, tags: &[String]) -> bool {
        tags.iter().all(|t| self.tags.contains(t))
    }
}

#[cfg(test)]
pub(crate) fn sample(id: u64) -> Memory {
    Memory {
        id,
        memory_id: format!("mem_{id}"),
        account: "acme".into(),
        namespace: "default".into(),
        key: format!("k{id}"),
        value: "v".into(),
        tags: vec!["a".into(), "b".into()],
        importance: 5.0,
        source: Source::Manual,
        created_at: 1,
        updated_at: 1,
        access_count: 0,
        expires_at: None,
        is_latest: true,
        deleted_at: None,
        version: 1,
        previous: None,
        consolidated_into: None,
        observed_at: None,
        provenance: None,
        deleted_by: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn liveness() {
        let mut m = sample(1);
        assert!(m.is_live(10));
        m.expires_at = Some(10);
        assert!(m.is_live(9) && !m.is_live(10));
        m.expires_at = None;
        m.deleted_at = Some(5);
        assert!(!m.is_live(10));
    }

    #[test]
    fn tag_filter_is_and() {
        let m = sample(1);
        assert!(m.has_all_tags(&[]));
        assert!(m.has_all_tags(&["a".into(), "b".into()]));
        assert!(!m.has_all_tags(&["a".into(), "c".into()]));
    }
}
