//! The words of the responses several routes declare in their `#[utoipa::path]`, each
//! written once: a refused query string, a refused body's fields, the lookups that find
//! nothing, a memory queue that is full. (The responses every keyed route shares are added
//! to the document afterwards, in `super::shared_responses`.) The document reads each
//! description's `Codes:`, so the codes a route can answer stay in its own declaration.

/// 400 of a route that reads its query string.
pub const BAD_QUERY: &str =
    "A bad query parameter, named in `details.parameter`. Codes: `invalid_query`.";

/// 400 of a route that reads a JSON body field by field: `invalid_body`, then `codes`, the
/// `invalid_<field>` codes of its fields.
pub fn bad_fields(codes: &[&str]) -> String {
    let codes: String = codes.iter().map(|c| format!(", `{c}`")).collect();
    format!(
        "Validation failed: a bad field `f` is `invalid_f` with `details.field = \"f\"`; a body \
         that is not a JSON object is `invalid_body`. Codes: `invalid_body`{codes}."
    )
}

/// 404 of a route that names an agent.
pub const AGENT_NOT_FOUND: &str =
    "No agent with that id in this account. Codes: `agent_not_found`.";

/// 404 of a route that names a tool.
pub const TOOL_NOT_FOUND: &str = "No tool of that name in this account. Codes: `tool_not_found`.";

/// 404 of a route that names a component.
pub const COMPONENT_NOT_FOUND: &str =
    "No component with that id in this account. Codes: `component_not_found`.";

/// 404 of a route that names a live memory.
pub const MEMORY_NOT_FOUND: &str = "No live memory at that key and namespace. Codes: `not_found`.";

/// 503 of a route that embeds or writes memories.
pub const MEMORY_BUSY: &str = "The embedding provider failed, or the account has as much \
    memory work waiting at this node as its queue holds (`[embedder] queue_per_account`, \
    `[memory] write_queue_per_account`); retry with backoff (1 s, 2 s, 4 s). Codes: \
    `temporarily_unavailable`.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bodys_codes_follow_invalid_body() {
        assert_eq!(
            bad_fields(&["invalid_key"]),
            "Validation failed: a bad field `f` is `invalid_f` with `details.field = \"f\"`; a \
             body that is not a JSON object is `invalid_body`. Codes: `invalid_body`, \
             `invalid_key`."
        );
    }
}
