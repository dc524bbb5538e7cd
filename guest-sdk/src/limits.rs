//! The memory limits and defaults of the specification (§2.1, §4.4, §8). The host enforces
//! them; they are here so an agent can stay inside them (e.g. truncate a value before a
//! put) and so the test double enforces the same ones.

/// Longest key, in characters. Keys are snake_case: `^[a-z][a-z0-9_]*$`.
pub const MAX_KEY_CHARS: usize = 128;
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
/// Importance of a put that gives none (the range is 1 to 10).
pub const DEFAULT_IMPORTANCE: f64 = 5.0;
/// Search results when no limit is given.
pub const SEARCH_DEFAULT_LIMIT: u32 = 10;
/// Most search results; a larger limit is lowered to this.
pub const SEARCH_MAX_LIMIT: u32 = 50;
/// Listed memories when no limit is given.
pub const LIST_DEFAULT_LIMIT: u32 = 50;
/// Most listed memories; a larger limit is lowered to this.
pub const LIST_MAX_LIMIT: u32 = 200;
