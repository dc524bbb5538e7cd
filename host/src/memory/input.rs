//! Write inputs and their validation (spec §2.1, §4.2, §8). Shared by the HTTP API and, later,
//! the agents' memory tools, so both reject exactly the same things with the same words.

use serde_json::{Map, Value};

use super::{
    MemoryError, Result,
    record::{Memory, Provenance, Source},
};
use crate::clock::now_ms;
use crate::object::{self, FieldError, Fields};

use wasmind_rules::validate_not_future;

pub use wasmind_rules::limits::{
    DEFAULT_IMPORTANCE, DEFAULT_NAMESPACE, MAX_KEY_CHARS, MAX_NAMESPACE_CHARS, MAX_TAG_CHARS,
    MAX_TAGS, MAX_VALUE_CHARS,
};
use wasmind_rules::{RuleError, Write};

/// A validated write of one memory.
#[derive(Debug, Clone, PartialEq)]
pub struct PutInput {
    /// The account the memory belongs to (from the caller's key, never from input).
    pub account: String,
    pub key: String,
    pub value: String,
    pub namespace: String,
    pub tags: Vec<String>,
    pub importance: f64,
    pub expires_in_days: Option<f64>,
    /// When the fact was stated or observed (epoch ms); the write time when `None`.
    pub observed_at: Option<u64>,
    /// Who writes it; its door decides the `source`.
    pub provenance: Provenance,
}

/// One memory as a writer gives it — a put body, an import item, a memory the Mind
/// proposed — before the account and source are known and before any bound is checked.
/// `key` and `value` are required; the rest take the defaults of §4.2.
#[derive(Debug, Clone, PartialEq, Default, serde::Deserialize)]
pub struct MemoryDraft {
    pub key: String,
    pub value: String,
    pub namespace: Option<String>,
    pub tags: Option<Vec<String>>,
    pub importance: Option<f64>,
    pub expires_in_days: Option<f64>,
    #[serde(default, deserialize_with = "crate::object::optional_whole")]
    pub observed_at: Option<u64>,
}

impl Fields for MemoryDraft {
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("key", "a string"),
        ("value", "a string"),
        ("namespace", "a string"),
        ("tags", "an array of strings"),
        ("importance", "a number"),
        ("expires_in_days", "a number"),
        ("observed_at", "a whole number of epoch milliseconds"),
    ];
}

impl MemoryDraft {
    /// Reads a draft from an untrusted JSON object (an import item, a Mind proposal).
    pub fn from_object(object: Map<String, Value>) -> Result<Self> {
        object::read(object).map_err(MemoryError::from)
    }
}

impl From<FieldError> for MemoryError {
    fn from(e: FieldError) -> Self {
        MemoryError::invalid(e.field, e.message())
    }
}

impl PutInput {
    /// Whether `version` is this very write applied already: an agent's journaled put
    /// that a resumed run makes again at the same step (its journal entry was lost in a
    /// crash, the write was not) with the same value. Writes of no agent call never are.
    pub fn applied_as(&self, version: &Memory) -> bool {
        let call = self.provenance.agent_call();
        call.is_some()
            && version.value == self.value
            && version.provenance.as_ref().and_then(Provenance::agent_call) == call
    }

    /// The write of `draft` into `account`, held to every bound of [`validate`](Self::validate)
    /// and with an `observed_at` not in the future: the one way a put body, an import item
    /// and a Mind proposal become a write, so all of them are refused with the same words.
    pub fn new(account: &str, draft: MemoryDraft, provenance: Provenance) -> Result<Self> {
        if let Some(at) = draft.observed_at {
            validate_not_future("observed_at", at, now_ms())?;
        }
        let input = PutInput {
            account: account.to_string(),
            key: draft.key,
            value: draft.value,
            namespace: draft.namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.into()),
            tags: draft.tags.unwrap_or_default(),
            importance: draft.importance.unwrap_or(DEFAULT_IMPORTANCE),
            expires_in_days: draft.expires_in_days,
            observed_at: draft.observed_at,
            provenance,
        };
        input.validate()?;
        Ok(input)
    }

    /// Checks every bound, naming the field at fault (the shared rules: the guest SDK's
    /// test doubles check the same).
    pub fn validate(&self) -> Result<()> {
        let write = Write {
            key: &self.key,
            value: &self.value,
            namespace: &self.namespace,
            tags: &self.tags,
            importance: self.importance,
            expires_in_days: self.expires_in_days,
        };
        Ok(write.validate()?)
    }

    /// The specification's `source` of the write, from its door.
    pub fn source(&self) -> Source {
        self.provenance.door.source()
    }

    /// The expiry instant for a write at `now` (epoch ms).
    pub fn expires_at(&self, now: u64) -> Option<u64> {
        self.expires_in_days
            .map(|d| now.saturating_add((d * 86_400_000.0).ceil() as u64))
    }
}

impl From<RuleError> for MemoryError {
    fn from(e: RuleError) -> Self {
        MemoryError::invalid(e.field, e.message)
    }
}

/// A key is snake_case: `^[a-z][a-z0-9_]*$`, at most 128 characters.
pub fn validate_key(key: &str) -> Result<()> {
    Ok(wasmind_rules::validate_key(key)?)
}

/// A namespace is 1–128 characters with no control characters.
pub fn validate_namespace(namespace: &str) -> Result<()> {
    Ok(wasmind_rules::validate_namespace(namespace)?)
}

/// A request's optional `namespace` (a search's, a dedupe's, a consolidation's), checked.
pub fn optional_namespace(namespace: Option<String>) -> Result<Option<String>> {
    if let Some(ns) = &namespace {
        validate_namespace(ns)?;
    }
    Ok(namespace)
}

/// A request's optional number `field` that must lie in `[0, 1]` (a cosine or a score).
pub fn optional_unit(field: &'static str, value: Option<f64>) -> Result<Option<f64>> {
    match value {
        Some(n) if !(0.0..=1.0).contains(&n) => Err(MemoryError::invalid(
            field,
            format!("{field} must be from 0 to 1, got {n}"),
        )),
        n => Ok(n),
    }
}

/// At most 20 tags, each 1–50 characters.
pub fn validate_tags(tags: &[String]) -> Result<()> {
    Ok(wasmind_rules::validate_tags(tags)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::record::Door;

    fn input() -> PutInput {
        PutInput {
            account: "acme".into(),
            key: "favourite_colour".into(),
            value: "blue".into(),
            namespace: DEFAULT_NAMESPACE.into(),
            tags: vec![],
            importance: DEFAULT_IMPORTANCE,
            expires_in_days: None,
            observed_at: None,
            provenance: Provenance::door(Door::Rest),
        }
    }

    fn field_of(r: Result<()>) -> &'static str {
        match r {
            Err(MemoryError::Invalid { field, .. }) => field,
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    /// The rules themselves (every good and bad key, with their words) are tested in the
    /// rules crate; here, that the host's names keep the field at fault.
    #[test]
    fn keys() {
        validate_key(&"k".repeat(MAX_KEY_CHARS)).unwrap();
        assert_eq!(field_of(validate_key("9lives")), "key");
        assert_eq!(field_of(validate_namespace("")), "namespace");
        assert_eq!(field_of(validate_tags(&[String::new()])), "tags");
    }

    #[test]
    fn bounds() {
        input().validate().unwrap();
        let mut i = input();
        i.value = "x".repeat(5_000);
        i.validate().unwrap();
        i.value.push('x');
        assert_eq!(field_of(i.validate()), "value");
        let mut i = input();
        i.tags = (0..21).map(|n| n.to_string()).collect();
        assert_eq!(field_of(i.validate()), "tags");
        i.tags = vec!["t".repeat(51)];
        assert_eq!(field_of(i.validate()), "tags");
        i.tags = vec!["t".repeat(50)];
        i.validate().unwrap();
        for bad in [0.0, 10.5, f64::NAN] {
            let mut i = input();
            i.importance = bad;
            assert_eq!(field_of(i.validate()), "importance");
        }
        let mut i = input();
        i.expires_in_days = Some(0.0);
        assert_eq!(field_of(i.validate()), "expires_in_days");
        let mut i = input();
        i.namespace = String::new();
        assert_eq!(field_of(i.validate()), "namespace");
    }

    #[test]
    fn drafts_become_inputs_through_one_check() {
        let object = |v: Value| v.as_object().unwrap().clone();
        let draft = MemoryDraft::from_object(object(serde_json::json!({
            "key": "favourite_colour", "value": "blue", "namespace": null, "tags": ["a"],
        })))
        .unwrap();
        let made = PutInput::new("acme", draft, Provenance::door(Door::Rest)).unwrap();
        assert_eq!(
            made,
            PutInput {
                tags: vec!["a".into()],
                ..input()
            }
        );
        // JSON Schema's `integer`: a client printing 1560000000000 as a float is heard.
        let spelled = MemoryDraft::from_object(object(serde_json::json!({
            "key": "k", "value": "v", "observed_at": 1_560_000_000_000.0,
        })))
        .unwrap();
        assert_eq!(spelled.observed_at, Some(1_560_000_000_000));
        for (bad, field, message) in [
            (
                serde_json::json!({ "value": "v" }),
                "key",
                "key is required",
            ),
            (
                serde_json::json!({ "key": "k", "value": 5 }),
                "value",
                "value must be a string",
            ),
            (
                serde_json::json!({ "key": "k", "value": "v", "tags": "a" }),
                "tags",
                "tags must be an array of strings",
            ),
            (
                serde_json::json!({ "key": "k", "value": "v", "importance": "high" }),
                "importance",
                "importance must be a number",
            ),
            (
                serde_json::json!({ "key": "k", "value": "v", "observed_at": -1 }),
                "observed_at",
                "observed_at must be a whole number of epoch milliseconds",
            ),
            (
                serde_json::json!({ "key": "k", "value": "v", "observed_at": 1.5 }),
                "observed_at",
                "observed_at must be a whole number of epoch milliseconds",
            ),
            (
                serde_json::json!({ "key": "k", "value": "v", "observed_at": "2019" }),
                "observed_at",
                "observed_at must be a whole number of epoch milliseconds",
            ),
        ] {
            match MemoryDraft::from_object(object(bad)) {
                Err(MemoryError::Invalid {
                    field: f,
                    message: m,
                }) => {
                    assert_eq!((f, m.as_str()), (field, message));
                }
                other => panic!("expected invalid {field}, got {other:?}"),
            }
        }
        let draft = MemoryDraft {
            key: "k".into(),
            value: " ".into(),
            ..MemoryDraft::default()
        };
        assert!(matches!(
            PutInput::new("acme", draft, Provenance::door(Door::Rest)),
            Err(MemoryError::Invalid { field: "value", .. })
        ));
        let future = MemoryDraft {
            key: "k".into(),
            value: "v".into(),
            observed_at: Some(now_ms() + 3_600_000),
            ..MemoryDraft::default()
        };
        assert!(matches!(
            PutInput::new("acme", future, Provenance::door(Door::Rest)),
            Err(MemoryError::Invalid {
                field: "observed_at",
                ..
            })
        ));
    }

    #[test]
    fn expiry_instant() {
        let mut i = input();
        assert_eq!(i.expires_at(1_000), None);
        i.expires_in_days = Some(1.0);
        assert_eq!(i.expires_at(1_000), Some(1_000 + 86_400_000));
    }
}
