//! Validation of a memory's fields and of the bounded numbers of a request. Each check
//! names the field at fault and says what to fix, in the words the server answers with
//! (the HTTP API turns the field into `invalid_<field>`; the memory tools show the text).

use std::fmt;

use crate::limits::{
    CLOCK_SKEW_MS, LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT, MAX_IMPORTANCE, MAX_KEY_CHARS,
    MAX_NAMESPACE_CHARS, MAX_TAG_CHARS, MAX_TAGS, MAX_VALUE_CHARS, MIN_IMPORTANCE,
    SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT,
};

/// A broken rule: the request field at fault and what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    /// The request field to fix, e.g. `key`.
    pub field: &'static str,
    /// What is wrong and how to fix it; shown to the caller as is.
    pub message: String,
}

impl RuleError {
    fn new(field: &'static str, message: impl Into<String>) -> Self {
        Self {
            field,
            message: message.into(),
        }
    }
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RuleError {}

type Checked = Result<(), RuleError>;

/// One memory's write fields, borrowed, so that every writer (an HTTP put, an import item,
/// a memory the Mind proposed, an agent's put, the SDK's test double) checks the same
/// things in the same order, and so reports the same first fault.
#[derive(Debug, Clone, Copy)]
pub struct Write<'a> {
    pub key: &'a str,
    pub value: &'a str,
    pub namespace: &'a str,
    pub tags: &'a [String],
    pub importance: f64,
    pub expires_in_days: Option<f64>,
}

impl Write<'_> {
    /// Checks every bound, naming the first field at fault.
    ///
    /// # Examples
    ///
    /// ```
    /// let write = wasmind_rules::Write {
    ///     key: "city",
    ///     value: "Lisbon",
    ///     namespace: "default",
    ///     tags: &[],
    ///     importance: 11.0,
    ///     expires_in_days: None,
    /// };
    /// assert_eq!(write.validate().unwrap_err().field, "importance");
    /// ```
    pub fn validate(&self) -> Checked {
        validate_key(self.key)?;
        validate_value(self.value)?;
        validate_namespace(self.namespace)?;
        validate_tags(self.tags)?;
        validate_importance(self.importance)?;
        validate_expires_in_days(self.expires_in_days)
    }
}

/// A key is snake_case (`^[a-z][a-z0-9_]*$`), at most 128 characters.
pub fn validate_key(key: &str) -> Checked {
    if key.is_empty() {
        return Err(RuleError::new("key", "key is required"));
    }
    if key.len() > MAX_KEY_CHARS {
        return Err(RuleError::new(
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
        return Err(RuleError::new(
            "key",
            format!(
                "key {key:?} must be snake_case: a lowercase letter, then lowercase letters, digits or underscores"
            ),
        ));
    }
    Ok(())
}

/// A value is at most 5,000 characters and not blank.
pub fn validate_value(value: &str) -> Checked {
    let chars = value.chars().count();
    if chars > MAX_VALUE_CHARS {
        return Err(RuleError::new(
            "value",
            format!("value is {chars} characters; the limit is {MAX_VALUE_CHARS}"),
        ));
    }
    if value.trim().is_empty() {
        return Err(RuleError::new("value", "value must not be empty"));
    }
    Ok(())
}

/// A namespace is 1–128 characters with no control characters.
pub fn validate_namespace(namespace: &str) -> Checked {
    let chars = namespace.chars().count();
    if chars == 0 || chars > MAX_NAMESPACE_CHARS || namespace.chars().any(char::is_control) {
        return Err(RuleError::new(
            "namespace",
            format!(
                "namespace must be 1 to {MAX_NAMESPACE_CHARS} characters without control characters"
            ),
        ));
    }
    Ok(())
}

/// At most 20 tags, each 1–50 characters.
pub fn validate_tags(tags: &[String]) -> Checked {
    if tags.len() > MAX_TAGS {
        return Err(RuleError::new(
            "tags",
            format!("{} tags given; the limit is {MAX_TAGS}", tags.len()),
        ));
    }
    for tag in tags {
        let chars = tag.chars().count();
        if chars == 0 || chars > MAX_TAG_CHARS {
            return Err(RuleError::new(
                "tags",
                format!(
                    "tags: each tag must be 1 to {MAX_TAG_CHARS} characters; {tag:?} is {chars}"
                ),
            ));
        }
    }
    Ok(())
}

/// Importance is a number from 1 to 10 (NaN is not).
pub fn validate_importance(importance: f64) -> Checked {
    if !(MIN_IMPORTANCE..=MAX_IMPORTANCE).contains(&importance) {
        return Err(RuleError::new(
            "importance",
            format!("importance must be a number from 1 to 10, got {importance}"),
        ));
    }
    Ok(())
}

/// An expiry, when given, is a positive finite number of days.
pub fn validate_expires_in_days(days: Option<f64>) -> Checked {
    match days {
        Some(days) if !(days.is_finite() && days > 0.0) => Err(RuleError::new(
            "expires_in_days",
            "expires_in_days must be a positive number of days",
        )),
        _ => Ok(()),
    }
}

/// The address of one memory: a valid key in a valid namespace.
pub fn validate_address(key: &str, namespace: &str) -> Checked {
    validate_key(key)?;
    validate_namespace(namespace)
}

/// The filters of a list or a search: the namespace when one is given, and the tags.
pub fn validate_filters(namespace: Option<&str>, tags: &[String]) -> Checked {
    namespace.map_or(Ok(()), validate_namespace)?;
    validate_tags(tags)
}

/// An instant `at` (epoch ms) of `field` no later than `now`, past the clock skew
/// ([`CLOCK_SKEW_MS`]): a fact is not observed, nor a memory read, in the future.
///
/// # Examples
///
/// ```
/// assert!(wasmind_rules::validate_not_future("observed_at", 1_000, 1_000).is_ok());
/// let late = wasmind_rules::validate_not_future("observed_at", 9_000_000, 1_000).unwrap_err();
/// assert_eq!(late.field, "observed_at");
/// ```
pub fn validate_not_future(field: &'static str, at: u64, now: u64) -> Checked {
    match at > now.saturating_add(CLOCK_SKEW_MS) {
        true => Err(RuleError::new(
            field,
            format!(
                "{field} must not be in the future: {at} is more than {} s past the server's clock (give epoch milliseconds)",
                CLOCK_SKEW_MS / 1_000
            ),
        )),
        false => Ok(()),
    }
}

/// A search query says something.
pub fn validate_query(query: &str) -> Checked {
    if query.trim().is_empty() {
        return Err(RuleError::new("query", "query must not be empty"));
    }
    Ok(())
}

/// Why a search mode is refused; the modes are `hybrid`, `semantic` and `keyword`.
pub fn unknown_mode(mode: &str) -> RuleError {
    RuleError::new(
        "mode",
        format!("mode {mode:?} is unknown: use hybrid, semantic or keyword"),
    )
}

/// A memory tool's search size: 10 when absent, at most 50 (a larger limit is lowered), never 0.
///
/// # Examples
///
/// ```
/// assert_eq!(wasmind_rules::search_limit(None), Ok(10));
/// assert_eq!(wasmind_rules::search_limit(Some(500)), Ok(50));
/// assert!(wasmind_rules::search_limit(Some(0)).is_err());
/// ```
pub fn search_limit(requested: Option<u32>) -> Result<u32, RuleError> {
    limit(requested, SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT)
}

/// A memory tool's list size: 50 when absent, at most 200 (a larger limit is lowered), never 0.
pub fn list_limit(requested: Option<u32>) -> Result<u32, RuleError> {
    limit(requested, LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT)
}

fn limit(requested: Option<u32>, default: u32, max: u32) -> Result<u32, RuleError> {
    match requested {
        None => Ok(default),
        Some(0) => Err(RuleError::new(
            "limit",
            format!("limit must be a whole number from 1 to {max}"),
        )),
        Some(n) => Ok(n.min(max)),
    }
}

#[cfg(test)]
mod tests;
