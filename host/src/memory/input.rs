//! Write inputs and their validation (spec §2.1, §4.2, §8). Shared by the HTTP API and, later,
//! the agents' memory tools, so both reject exactly the same things with the same words.

use serde_json::{Map, Value};

use super::{MemoryError, Result, record::Source};
use crate::object::{self, FieldError, Fields};

/// Longest key accepted.
pub const MAX_KEY_CHARS: usize = 128;
/// Longest value accepted (§8).
pub const MAX_VALUE_CHARS: usize = 5_000;
/// Most tags on one memory (§8).
pub const MAX_TAGS: usize = 20;
/// Longest tag (§8).
pub const MAX_TAG_CHARS: usize = 50;
/// Longest namespace accepted.
pub const MAX_NAMESPACE_CHARS: usize = 128;
/// The namespace used when none is given.
pub const DEFAULT_NAMESPACE: &str = "default";
/// Importance when none is given.
pub const DEFAULT_IMPORTANCE: f64 = 5.0;

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
    pub source: Source,
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
}

impl Fields for MemoryDraft {
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("key", "a string"),
        ("value", "a string"),
        ("namespace", "a string"),
        ("tags", "an array of strings"),
        ("importance", "a number"),
        ("expires_in_days", "a number"),
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
    /// The write of `draft` into `account`, held to every bound of [`validate`](Self::validate):
    /// the one way a put body, an import item and a Mind proposal become a write, so all of
    /// them are refused with the same words.
    pub fn new(account: &str, draft: MemoryDraft, source: Source) -> Result<Self> {
        let input = PutInput {
            account: account.to_string(),
            key: draft.key,
            value: draft.value,
            namespace: draft.namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.into()),
            tags: draft.tags.unwrap_or_default(),
            importance: draft.importance.unwrap_or(DEFAULT_IMPORTANCE),
            expires_in_days: draft.expires_in_days,
            source,
        };
        input.validate()?;
        Ok(input)
    }

    /// Checks every bound, naming the field at fault.
    pub fn validate(&self) -> Result<()> {
        validate_key(&self.key)?;
        let chars = self.value.chars().count();
        if chars > MAX_VALUE_CHARS {
            return Err(MemoryError::invalid(
                "value",
                format!("value is {chars} characters; the limit is {MAX_VALUE_CHARS}"),
            ));
        }
        if self.value.trim().is_empty() {
            return Err(MemoryError::invalid("value", "value must not be empty"));
        }
        validate_namespace(&self.namespace)?;
        validate_tags(&self.tags)?;
        if !(1.0..=10.0).contains(&self.importance) {
            return Err(MemoryError::invalid(
                "importance",
                format!(
                    "importance must be a number from 1 to 10, got {}",
                    self.importance
                ),
            ));
        }
        if let Some(days) = self.expires_in_days
            && !(days.is_finite() && days > 0.0)
        {
            return Err(MemoryError::invalid(
                "expires_in_days",
                "expires_in_days must be a positive number of days",
            ));
        }
        Ok(())
    }

    /// The expiry instant for a write at `now` (epoch ms).
    pub fn expires_at(&self, now: u64) -> Option<u64> {
        self.expires_in_days
            .map(|d| now.saturating_add((d * 86_400_000.0).ceil() as u64))
    }
}

/// A key is snake_case: `^[a-z][a-z0-9_]*$`, at most 128 characters.
pub fn validate_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(MemoryError::invalid("key", "key is required"));
    }
    if key.len() > MAX_KEY_CHARS {
        return Err(MemoryError::invalid(
            "key",
            format!(
                "key is {} characters; the limit is {MAX_KEY_CHARS}",
                key.len()
            ),
        ));
    }
    let mut chars = key.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    if !first_ok || !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        return Err(MemoryError::invalid(
            "key",
            format!(
                "key {key:?} must be snake_case: a lowercase letter, then lowercase letters, digits or underscores"
            ),
        ));
    }
    Ok(())
}

/// A namespace is 1–128 characters with no control characters.
pub fn validate_namespace(namespace: &str) -> Result<()> {
    let chars = namespace.chars().count();
    if chars == 0 || chars > MAX_NAMESPACE_CHARS || namespace.chars().any(char::is_control) {
        return Err(MemoryError::invalid(
            "namespace",
            format!(
                "namespace must be 1 to {MAX_NAMESPACE_CHARS} characters without control characters"
            ),
        ));
    }
    Ok(())
}

/// At most 20 tags, each 1–50 characters.
pub fn validate_tags(tags: &[String]) -> Result<()> {
    if tags.len() > MAX_TAGS {
        return Err(MemoryError::invalid(
            "tags",
            format!("{} tags given; the limit is {MAX_TAGS}", tags.len()),
        ));
    }
    for tag in tags {
        let chars = tag.chars().count();
        if chars == 0 || chars > MAX_TAG_CHARS {
            return Err(MemoryError::invalid(
                "tags",
                format!(
                    "tags: each tag must be 1 to {MAX_TAG_CHARS} characters; {tag:?} is {chars}"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> PutInput {
        PutInput {
            account: "acme".into(),
            key: "favourite_colour".into(),
            value: "blue".into(),
            namespace: DEFAULT_NAMESPACE.into(),
            tags: vec![],
            importance: DEFAULT_IMPORTANCE,
            expires_in_days: None,
            source: Source::Manual,
        }
    }

    fn field_of(r: Result<()>) -> &'static str {
        match r {
            Err(MemoryError::Invalid { field, .. }) => field,
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn keys() {
        for good in ["a", "user_name", "x9_", &"k".repeat(128)] {
            validate_key(good).unwrap();
        }
        for bad in [
            "",
            "User",
            "9lives",
            "_x",
            "a-b",
            "a b",
            "é",
            &"k".repeat(129),
        ] {
            assert_eq!(field_of(validate_key(bad)), "key", "{bad}");
        }
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
        let made = PutInput::new("acme", draft, Source::Manual).unwrap();
        assert_eq!(
            made,
            PutInput {
                tags: vec!["a".into()],
                ..input()
            }
        );
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
            PutInput::new("acme", draft, Source::Manual),
            Err(MemoryError::Invalid { field: "value", .. })
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
