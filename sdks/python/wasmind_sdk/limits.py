"""The memory limits and defaults of the specification (§2.1, §4.4, §8), as the Rust SDK's
`limits` (the rules crate's): the host enforces them; an agent uses them to stay inside."""

MAX_KEY_CHARS = 128
KEY_PATTERN = "^[a-z][a-z0-9_]*$"
MAX_VALUE_CHARS = 5_000
MAX_TAGS = 20
MAX_TAG_CHARS = 50
MAX_NAMESPACE_CHARS = 128
DEFAULT_NAMESPACE = "default"
MIN_IMPORTANCE = 1.0
MAX_IMPORTANCE = 10.0
DEFAULT_IMPORTANCE = 5.0
SEARCH_DEFAULT_LIMIT = 10
SEARCH_MAX_LIMIT = 50
LIST_DEFAULT_LIMIT = 50
LIST_MAX_LIMIT = 200
# The texts of a failed memory tool call (§4.4).
TOOL_FAILURE_PREFIX = "Service Memory failed: "
QUOTA_EXCEEDED = "memory quota exceeded"
