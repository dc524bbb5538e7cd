//! The memory rules that the wasmind host and its guest SDK must agree on, in one place:
//! the limits and defaults of the specification (§2.1, §4.4, §8), the validation of a
//! memory's fields with the words the server answers, and the texts of the memory tools'
//! failures.
//!
//! The host enforces these rules; the SDK's test doubles enforce them too, so an agent
//! unit-tested against the doubles reads exactly what it will read in production. Keeping
//! them here rather than in two copies is what stops the two sides drifting apart.

pub mod limits;
mod texts;
mod validate;

pub use texts::{
    NOT_CONFIGURED, QUOTA_EXCEEDED, TOOL_FAILURE_PREFIX, not_found, quota_exceeded, tool_failure,
};
pub use validate::{
    RuleError, Write, list_limit, search_limit, unknown_mode, validate_address,
    validate_expires_in_days, validate_filters, validate_importance, validate_key,
    validate_namespace, validate_not_future, validate_query, validate_tags, validate_value,
};
