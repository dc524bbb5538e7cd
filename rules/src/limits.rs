//! The memory limits and defaults of the specification (§2.1, §4.4, §8).

/// Longest key, in characters. Keys are snake_case: [`KEY_PATTERN`].
pub const MAX_KEY_CHARS: usize = 128;
/// What a key looks like, as a regular expression (for schemas; the check is in code).
pub const KEY_PATTERN: &str = "^[a-z][a-z0-9_]*$";
/// Longest value, in characters.
pub const MAX_VALUE_CHARS: usize = 5_000;
/// Most tags on one memory.
pub const MAX_TAGS: usize = 20;
/// Longest tag, in characters.
pub const MAX_TAG_CHARS: usize = 50;
/// Longest namespace, in characters.
pub const MAX_NAMESPACE_CHARS: usize = 128;
/// The namespace of a put, get or delete that names none.
pub const DEFAULT_NAMESPACE: &str = "default";
/// Lowest importance.
pub const MIN_IMPORTANCE: f64 = 1.0;
/// Highest importance.
pub const MAX_IMPORTANCE: f64 = 10.0;
/// Importance of a put that gives none.
pub const DEFAULT_IMPORTANCE: f64 = 5.0;
/// Search results when no limit is given.
pub const SEARCH_DEFAULT_LIMIT: u32 = 10;
/// Most search results; a larger limit is lowered to this.
pub const SEARCH_MAX_LIMIT: u32 = 50;
/// Listed memories when no limit is given.
pub const LIST_DEFAULT_LIMIT: u32 = 50;
/// Most listed memories; a larger limit is lowered to this.
pub const LIST_MAX_LIMIT: u32 = 200;
/// How far past the server's clock a given instant (an `observed_at`, an `as_of`) may lie,
/// in milliseconds: clients' clocks drift.
pub const CLOCK_SKEW_MS: u64 = 60_000;
