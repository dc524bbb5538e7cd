// The memory limits and defaults of the specification (§2.1, §4.4, §8), as the Rust SDK's
// `limits` (the rules crate's): the host enforces them; an agent uses them to stay inside.

export const MAX_KEY_CHARS = 128;
export const KEY_PATTERN = '^[a-z][a-z0-9_]*$';
export const MAX_VALUE_CHARS = 5000;
export const MAX_TAGS = 20;
export const MAX_TAG_CHARS = 50;
export const MAX_NAMESPACE_CHARS = 128;
export const DEFAULT_NAMESPACE = 'default';
export const MIN_IMPORTANCE = 1;
export const MAX_IMPORTANCE = 10;
export const DEFAULT_IMPORTANCE = 5;
export const SEARCH_DEFAULT_LIMIT = 10;
export const SEARCH_MAX_LIMIT = 50;
export const LIST_DEFAULT_LIMIT = 50;
export const LIST_MAX_LIMIT = 200;
// The texts of a failed memory tool call (§4.4).
export const TOOL_FAILURE_PREFIX = 'Service Memory failed: ';
export const QUOTA_EXCEEDED = 'memory quota exceeded';
