//! The memory tools of the specification (§4.4), ready to offer to the Mind: their specs
//! (names, descriptions, JSON Schemas with the spec's defaults and bounds) and one
//! dispatcher that runs a call against [`Memory`] and renders the tool result text.
//!
//! The result texts are documented on [`call_memory_tool`].

use serde_json::{Map, Value, json};

use crate::{
    ListRequest, Memory, MemoryError, MemoryRecord, PutRequest, SearchHit, SearchRequest, ToolCall,
    ToolSpec, limits,
};

const PUT: &str = "service_memory_put";
const GET: &str = "service_memory_get";
const LIST: &str = "service_memory_list";
const DELETE: &str = "service_memory_delete";
const SEARCH: &str = "service_memory_search";

/// The names of the five memory tools.
///
/// # Examples
///
/// ```
/// assert!(wasmind_sdk::MEMORY_TOOL_NAMES.contains(&"service_memory_search"));
/// ```
pub const MEMORY_TOOL_NAMES: [&str; 5] = [PUT, GET, LIST, DELETE, SEARCH];

/// Whether `name` is one of the memory tools that [`call_memory_tool`] runs.
///
/// # Examples
///
/// ```
/// assert!(wasmind_sdk::is_memory_tool("service_memory_put"));
/// assert!(!wasmind_sdk::is_memory_tool("web_search"));
/// ```
pub fn is_memory_tool(name: &str) -> bool {
    MEMORY_TOOL_NAMES.contains(&name)
}

/// The specs of the five memory tools, to pass to [`Mind::complete`](crate::Mind::complete).
///
/// # Examples
///
/// ```
/// let tools = wasmind_sdk::memory_tools();
/// let put = tools.iter().find(|t| t.name == "service_memory_put").unwrap();
/// assert_eq!(put.parameters["required"], serde_json::json!(["key", "value"]));
/// assert_eq!(put.parameters["properties"]["importance"]["default"], 5);
/// ```
pub fn memory_tools() -> Vec<ToolSpec> {
    let namespace = |what: &str| json!({ "type": "string", "maxLength": limits::MAX_NAMESPACE_CHARS, "description": what });
    let key = json!({
        "type": "string",
        "pattern": limits::KEY_PATTERN,
        "maxLength": limits::MAX_KEY_CHARS,
        "description": "snake_case identifier, unique per namespace, e.g. `favourite_food`",
    });
    let tags = |what: &str| {
        json!({
            "type": "array",
            "items": { "type": "string", "minLength": 1, "maxLength": limits::MAX_TAG_CHARS },
            "maxItems": limits::MAX_TAGS,
            "description": what,
        })
    };
    vec![
        ToolSpec::new(
            PUT,
            "Save a fact to long-term memory, where it outlives this run. Writing an existing \
             key in the same namespace stores the new value as a new version; an identical value \
             changes nothing. Returns {memory_id, key, namespace}.",
            json!({
                "type": "object",
                "properties": {
                    "key": key,
                    "value": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": limits::MAX_VALUE_CHARS,
                        "description": "the text to remember (stringify structured data)",
                    },
                    "namespace": with_default(namespace("logical bucket"), json!(limits::DEFAULT_NAMESPACE)),
                    "tags": tags("labels to filter by later"),
                    "importance": {
                        "type": "number",
                        "minimum": 1,
                        "maximum": 10,
                        "default": 5,
                        "description": "1 to 10; higher ranks higher in search",
                    },
                    "expires_in_days": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "description": "leave the memory out of search after this many days (default: never)",
                    },
                    "observed_at": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "when the fact was stated or observed, in epoch milliseconds, if not now (e.g. the time of the message that said it)",
                    },
                },
                "required": ["key", "value"],
                "additionalProperties": false,
            }),
        ),
        ToolSpec::new(
            GET,
            "Fetch one memory by its exact key. Returns {found: true, value, key, namespace, tags, \
             importance, created_at, updated_at, access_count}, or {found: false} when no memory \
             has that key.",
            json!({
                "type": "object",
                "properties": {
                    "key": key,
                    "namespace": with_default(namespace("where the memory lives"), json!(limits::DEFAULT_NAMESPACE)),
                },
                "required": ["key"],
                "additionalProperties": false,
            }),
        ),
        ToolSpec::new(
            SEARCH,
            "Search long-term memory by meaning and keywords, best match first; use it when you \
             do not know the exact key. Returns {results: [{key, value, namespace, tags, \
             importance, score, breakdown, created_at}]}.",
            json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string", "minLength": 1, "description": "what you are looking for, in natural language" },
                    "namespace": namespace("search only this namespace (default: all)"),
                    "tags": tags("only memories carrying every one of these tags"),
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": limits::SEARCH_MAX_LIMIT,
                        "default": limits::SEARCH_DEFAULT_LIMIT,
                    },
                    "mode": {
                        "type": "string",
                        "enum": ["hybrid", "semantic", "keyword"],
                        "default": "hybrid",
                    },
                },
                "required": ["query"],
                "additionalProperties": false,
            }),
        ),
        ToolSpec::new(
            LIST,
            "List memories, newest first, without ranking. Returns {memories: [{key, value, \
             namespace, tags, importance, created_at, updated_at, access_count}], count}.",
            json!({
                "type": "object",
                "properties": {
                    "namespace": namespace("list only this namespace (default: all)"),
                    "tags": tags("only memories carrying every one of these tags"),
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": limits::LIST_MAX_LIMIT,
                        "default": limits::LIST_DEFAULT_LIMIT,
                    },
                },
                "additionalProperties": false,
            }),
        ),
        ToolSpec::new(
            DELETE,
            "Delete a memory by its exact key (it leaves get, search and list). Returns {deleted: true}.",
            json!({
                "type": "object",
                "properties": {
                    "key": key,
                    "namespace": with_default(namespace("where the memory lives"), json!(limits::DEFAULT_NAMESPACE)),
                },
                "required": ["key"],
                "additionalProperties": false,
            }),
        ),
    ]
}

fn with_default(mut schema: Value, default: Value) -> Value {
    schema["default"] = default;
    schema
}

/// Runs a memory tool call and returns the tool result text. Never fails: whatever
/// happened, the text is what the Mind should read next.
///
/// Results are JSON text shaped as §4.4:
///
/// | tool | result |
/// |------|--------|
/// | `service_memory_put` | `{"memory_id","key","namespace"}` |
/// | `service_memory_get` | `{"found":true,"value","key","namespace","tags","importance","created_at","updated_at","access_count"}` or `{"found":false}` |
/// | `service_memory_search` | `{"results":[{"key","value","namespace","tags","importance","score","breakdown":{"semantic","keyword","importance","timeDecay"},"created_at"}]}` |
/// | `service_memory_list` | `{"memories":[{"key","value","namespace","tags","importance","created_at","updated_at","access_count"}],"count":n}` (newest first; the spec leaves this shape open) |
/// | `service_memory_delete` | `{"deleted":true}` |
///
/// Failures are plain text, so the Mind reads them and the run goes on: `Service Memory
/// failed: memory quota exceeded…` when the pool is full, `Service Memory failed: memory
/// channel is not configured.` when the agent has no memory, `Service Memory failed:
/// invalid arguments: …` when the arguments are not what the schema asks, and `Service
/// Memory failed: <what to fix>` for everything else (a bad key, an oversized value, a
/// delete of a key that holds nothing, …).
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use wasmind_sdk::{ToolCall, call_memory_tool, testing::TestContext};
///
/// let t = TestContext::default();
/// let memory = t.ctx().memory();
/// let put = ToolCall::new("c1", "service_memory_put", &json!({"key": "city", "value": "Lisbon"}));
/// let out: serde_json::Value = serde_json::from_str(&call_memory_tool(memory, &put)).unwrap();
/// assert_eq!(out["namespace"], "default");
///
/// let get = ToolCall::new("c2", "service_memory_get", &json!({"key": "city"}));
/// let out: serde_json::Value = serde_json::from_str(&call_memory_tool(memory, &get)).unwrap();
/// assert_eq!((out["found"].clone(), out["value"].clone()), (json!(true), json!("Lisbon")));
///
/// let bad = ToolCall::new("c3", "service_memory_put", &json!({"key": "Not Snake", "value": "x"}));
/// assert!(call_memory_tool(memory, &bad).starts_with("Service Memory failed: "));
/// ```
pub fn call_memory_tool(memory: &Memory, call: &ToolCall) -> String {
    run_memory_tool(memory, call).map_or_else(|failure| failure, |result| result.to_string())
}

/// [`call_memory_tool`] with success and failure apart, for callers that must tell them
/// apart (an MCP server flags a failure as a tool error): `Ok` holds the result object,
/// `Err` the failure text (`Service Memory failed: …`, or `Unknown tool …`).
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use wasmind_sdk::{ToolCall, run_memory_tool, testing::TestContext};
///
/// let t = TestContext::default();
/// let put = ToolCall::new("c1", "service_memory_put", &json!({"key": "city", "value": "Lisbon"}));
/// assert_eq!(run_memory_tool(t.ctx().memory(), &put).unwrap()["key"], "city");
/// let bad = ToolCall::new("c2", "service_memory_put", &json!({"key": "city"}));
/// assert_eq!(
///     run_memory_tool(t.ctx().memory(), &bad).unwrap_err(),
///     "Service Memory failed: invalid arguments: `value` is required"
/// );
/// ```
pub fn run_memory_tool(memory: &Memory, call: &ToolCall) -> Result<Value, String> {
    if !is_memory_tool(&call.name) {
        return Err(format!(
            "Unknown tool {:?}: the memory tools are {}.",
            call.name,
            MEMORY_TOOL_NAMES.join(", ")
        ));
    }
    let args = match call.arguments() {
        Ok(Value::Object(map)) => map,
        Ok(other) => return Err(invalid(&format!("expected a JSON object, got {other}"))),
        Err(e) => return Err(invalid(&e.to_string())),
    };
    let args = Args(&args);
    let outcome = match call.name.as_str() {
        PUT => put(memory, &args),
        GET => get(memory, &args),
        LIST => list(memory, &args),
        DELETE => delete(memory, &args),
        _ => search(memory, &args),
    };
    outcome.map_err(|failure| match failure {
        Failure::Arguments(what) => invalid(&what),
        Failure::Memory(e) => wasmind_rules::tool_failure(e),
    })
}

fn invalid(what: &str) -> String {
    wasmind_rules::tool_failure(format_args!("invalid arguments: {what}"))
}

enum Failure {
    /// The arguments do not fit the schema.
    Arguments(String),
    Memory(MemoryError),
}

impl From<MemoryError> for Failure {
    fn from(e: MemoryError) -> Self {
        Failure::Memory(e)
    }
}

fn put(memory: &Memory, args: &Args) -> Result<Value, Failure> {
    let request = PutRequest {
        key: args.string("key")?,
        value: args.string("value")?,
        namespace: args.opt_string("namespace")?,
        tags: args.strings("tags")?,
        importance: args.opt_number("importance")?,
        expires_in_days: args.opt_number("expires_in_days")?,
        observed_at: args.opt_epoch_ms("observed_at")?,
    };
    let put = memory.put(&request)?;
    Ok(json!({ "memory_id": put.memory_id, "key": put.key, "namespace": put.namespace }))
}

fn get(memory: &Memory, args: &Args) -> Result<Value, Failure> {
    let key = args.string("key")?;
    let namespace = args.opt_string("namespace")?;
    Ok(match memory.get(&key, namespace.as_deref())? {
        Some(m) => json!({
            "found": true,
            "value": m.value,
            "key": m.key,
            "namespace": m.namespace,
            "tags": m.tags,
            "importance": importance(m.importance),
            "created_at": m.created_at,
            "updated_at": m.updated_at,
            "access_count": m.access_count,
        }),
        None => json!({ "found": false }),
    })
}

fn list(memory: &Memory, args: &Args) -> Result<Value, Failure> {
    let request = ListRequest {
        namespace: args.opt_string("namespace")?,
        tags: args.strings("tags")?,
        limit: args.opt_limit("limit", limits::LIST_MAX_LIMIT)?,
    };
    let memories: Vec<Value> = memory.list(&request)?.iter().map(record).collect();
    Ok(json!({ "count": memories.len(), "memories": memories }))
}

fn record(m: &MemoryRecord) -> Value {
    json!({
        "key": m.key,
        "value": m.value,
        "namespace": m.namespace,
        "tags": m.tags,
        "importance": importance(m.importance),
        "created_at": m.created_at,
        "updated_at": m.updated_at,
        "access_count": m.access_count,
    })
}

fn delete(memory: &Memory, args: &Args) -> Result<Value, Failure> {
    let key = args.string("key")?;
    let namespace = args.opt_string("namespace")?;
    memory.delete(&key, namespace.as_deref())?;
    Ok(json!({ "deleted": true }))
}

fn search(memory: &Memory, args: &Args) -> Result<Value, Failure> {
    let request = SearchRequest {
        query: args.string("query")?,
        namespace: args.opt_string("namespace")?,
        tags: args.strings("tags")?,
        limit: args.opt_limit("limit", limits::SEARCH_MAX_LIMIT)?,
        mode: args.opt_string("mode")?,
    };
    let results: Vec<Value> = memory.search(&request)?.iter().map(hit).collect();
    Ok(json!({ "results": results }))
}

fn hit(h: &SearchHit) -> Value {
    json!({
        "key": h.key,
        "value": h.value,
        "namespace": h.namespace,
        "tags": h.tags,
        "importance": importance(h.importance),
        "score": h.score,
        "breakdown": {
            "semantic": h.breakdown.semantic,
            "keyword": h.breakdown.keyword,
            "importance": h.breakdown.importance,
            "timeDecay": h.breakdown.time_decay,
        },
        "created_at": h.created_at,
    })
}

/// Importance as the HTTP API renders it: whole numbers stay integers (`5`, not `5.0`).
fn importance(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

/// Typed reads of the arguments object, naming the member at fault. A member that is
/// `null` counts as absent (models often send `null` for "default").
struct Args<'a>(&'a Map<String, Value>);

impl Args<'_> {
    fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    fn string(&self, name: &str) -> Result<String, Failure> {
        self.opt_string(name)?
            .ok_or_else(|| Failure::Arguments(format!("`{name}` is required")))
    }

    fn opt_string(&self, name: &str) -> Result<Option<String>, Failure> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Failure::Arguments(format!("`{name}` must be a string"))),
        }
    }

    fn strings(&self, name: &str) -> Result<Vec<String>, Failure> {
        let wrong = || Failure::Arguments(format!("`{name}` must be an array of strings"));
        match self.get(name) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string).ok_or_else(wrong))
                .collect(),
            Some(_) => Err(wrong()),
        }
    }

    fn opt_number(&self, name: &str) -> Result<Option<f64>, Failure> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(_) => Err(Failure::Arguments(format!("`{name}` must be a number"))),
        }
    }

    /// A whole number of epoch milliseconds, 0 or more.
    fn opt_epoch_ms(&self, name: &str) -> Result<Option<u64>, Failure> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
            Some(_) => Err(Failure::Arguments(format!(
                "`{name}` must be a whole number of epoch milliseconds"
            ))),
        }
    }

    /// A whole number; 0 passes through so the memory rejects it in its own words, and
    /// anything above `u32::MAX` becomes `u32::MAX` (the memory lowers it to `max`).
    fn opt_limit(&self, name: &str, max: u32) -> Result<Option<u32>, Failure> {
        let wrong =
            || Failure::Arguments(format!("`{name}` must be a whole number from 1 to {max}"));
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(f) if f >= 0.0 && f.fract() == 0.0 => {
                    Ok(Some(f.min(f64::from(u32::MAX)) as u32))
                }
                _ => Err(wrong()),
            },
            Some(_) => Err(wrong()),
        }
    }
}

#[cfg(test)]
mod tests;
