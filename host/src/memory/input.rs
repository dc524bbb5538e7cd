//! Write inputs and their validation (spec §2.1, §4.2, §8). Shared by the HTTP API and, later,
//! the agents' memory tools, so both reject exactly the same things with the same words.

use serde_json::{Map, Value};

use super::{MemoryError, Result, record::Source};

pub use wasmind_rules::limits::{DEFAULT_IMPORTANCE, DEFAULT_NAMESPACE, MAX_KEY_CHARS, MAX_TAGS};
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
    pub source: Source,
}

impl PutInput {
    /// Reads and validates one memory's write fields from a JSON object — a put body, an
    /// import item, or a memory the Mind proposed — so all of them are held to exactly the
    /// same rules, with the same words.
    pub fn from_json(account: &str, obj: &Map<String, Value>, source: Source) -> Result<Self> {
        let input = PutInput {
            account: account.to_string(),
            key: string(obj, "key")?.ok_or_else(|| required("key"))?,
            value: string(obj, "value")?.ok_or_else(|| required("value"))?,
            namespace: string(obj, "namespace")?.unwrap_or_else(|| DEFAULT_NAMESPACE.into()),
            tags: strings(obj, "tags")?,
            importance: number(obj, "importance")?.unwrap_or(DEFAULT_IMPORTANCE),
            expires_in_days: number(obj, "expires_in_days")?,
            source,
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

    /// The expiry instant for a write at `now` (epoch ms).
    pub fn expires_at(&self, now: u64) -> Option<u64> {
        self.expires_in_days
            .map(|d| now.saturating_add((d * 86_400_000.0).ceil() as u64))
    }
}

fn required(field: &'static str) -> MemoryError {
    MemoryError::invalid(field, format!("{field} is required"))
}

/// An optional string field (`null` counts as absent).
fn string(obj: &Map<String, Value>, field: &'static str) -> Result<Option<String>> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(MemoryError::invalid(
            field,
            format!("{field} must be a string"),
        )),
    }
}

/// An optional array of strings.
fn strings(obj: &Map<String, Value>, field: &'static str) -> Result<Vec<String>> {
    let wrong = || MemoryError::invalid(field, format!("{field} must be an array of strings"));
    match obj.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(wrong))
            .collect(),
        Some(_) => Err(wrong()),
    }
}

/// An optional number.
fn number(obj: &Map<String, Value>, field: &'static str) -> Result<Option<f64>> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(MemoryError::invalid(
            field,
            format!("{field} must be a number"),
        )),
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

/// At most 20 tags, each 1–50 characters.
pub fn validate_tags(tags: &[String]) -> Result<()> {
    Ok(wasmind_rules::validate_tags(tags)?)
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
    fn expiry_instant() {
        let mut i = input();
        assert_eq!(i.expires_at(1_000), None);
        i.expires_in_days = Some(1.0);
        assert_eq!(i.expires_at(1_000), Some(1_000 + 86_400_000));
    }
}
