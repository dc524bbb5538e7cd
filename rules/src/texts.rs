//! The words of the memory failures an agent reads: the memory tools' failure results
//! (spec §4.4) and the domain texts inside them that both sides produce.

use std::fmt::Display;

/// How every memory tool failure result begins (§4.4).
pub const TOOL_FAILURE_PREFIX: &str = "Service Memory failed: ";
/// Why a memory call failed when the agent was given no memory (§4.4: the whole tool
/// result is [`TOOL_FAILURE_PREFIX`] followed by this).
pub const NOT_CONFIGURED: &str = "memory channel is not configured.";
/// How the text of a full memory pool begins (§4.4).
pub const QUOTA_EXCEEDED: &str = "memory quota exceeded";

/// The tool result of a failed memory call: what the Mind reads before it goes on.
///
/// # Examples
///
/// ```
/// assert_eq!(
///     wasmind_rules::tool_failure(wasmind_rules::NOT_CONFIGURED),
///     "Service Memory failed: memory channel is not configured."
/// );
/// ```
pub fn tool_failure(reason: impl Display) -> String {
    format!("{TOOL_FAILURE_PREFIX}{reason}")
}

/// Why a put that would add one more live memory to a full pool failed, with the way out.
///
/// # Examples
///
/// ```
/// assert!(wasmind_rules::quota_exceeded(3, 3).starts_with("memory quota exceeded: 3 of 3"));
/// ```
pub fn quota_exceeded(used: u64, limit: u64) -> String {
    format!(
        "{QUOTA_EXCEEDED}: {used} of {limit} live memories in use; run POST /api/v1/memory/dedupe first, otherwise delete memories or upgrade the plan"
    )
}

/// Why a delete (or an HTTP get) of an address that holds no live memory failed.
///
/// # Examples
///
/// ```
/// assert_eq!(
///     wasmind_rules::not_found("k", "default"),
///     r#"no memory with key "k" in namespace "default""#
/// );
/// ```
pub fn not_found(key: &str, namespace: &str) -> String {
    format!("no memory with key {key:?} in namespace {namespace:?}")
}
