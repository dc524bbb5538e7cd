//! JSON renderings of domain values, in the field names of the specification.
//!
//! The full memory record carries both spellings of the access counter the spec uses
//! (`access_count` and `accessCount`); `isLatestVersion` and `deletedAt` (epoch ms or null)
//! are spelled as the spec spells them, and the consolidation link likewise comes in both
//! spellings (`consolidated_into`, `consolidatedInto`).

use serde_json::{Value, json};

use crate::memory::{Memory, SearchHit};

/// Importance as a JSON number: whole numbers stay integers (`5`, not `5.0`).
fn importance(value: f64) -> Value {
    if value.fract() == 0.0 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

/// The fields every rendering of a memory shares, plus `extra`'s.
fn with(m: &Memory, extra: Value) -> Value {
    let mut view = json!({
        "key": m.key,
        "value": m.value,
        "namespace": m.namespace,
        "tags": m.tags,
        "importance": importance(m.importance),
        "source": m.source.as_str(),
        "created_at": m.created_at,
    });
    if let (Value::Object(view), Value::Object(extra)) = (&mut view, extra) {
        view.extend(extra);
    }
    view
}

/// The full memory record (put, get, list, history).
pub fn memory(m: &Memory) -> Value {
    with(
        m,
        json!({
            "memory_id": m.memory_id,
            "updated_at": m.updated_at,
            "access_count": m.access_count,
            "accessCount": m.access_count,
            "expires_at": m.expires_at,
            "isLatestVersion": m.is_latest,
            "deletedAt": m.deleted_at,
            "version": m.version,
            "consolidated_into": m.consolidated_into,
            "consolidatedInto": m.consolidated_into,
        }),
    )
}

/// A search result item (§2.2).
pub fn search_hit(h: &SearchHit) -> Value {
    with(
        &h.memory,
        json!({
            "memory_id": h.memory.memory_id,
            "score": h.score,
            "breakdown": {
                "semantic": h.breakdown.semantic,
                "keyword": h.breakdown.keyword,
                "importance": h.breakdown.importance,
                "timeDecay": h.breakdown.time_decay,
            },
        }),
    )
}

/// One memory of an export document: what import needs to recreate it, plus provenance.
pub fn export_item(m: &Memory, now: u64) -> Value {
    let remaining = m
        .expires_at
        .map(|at| at.saturating_sub(now) as f64 / 86_400_000.0);
    let mut item = with(m, json!({ "updated_at": m.updated_at }));
    if let Some(days) = remaining {
        item["expires_in_days"] = json!(days);
    }
    item
}
