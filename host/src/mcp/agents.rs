//! The agent tools: spawn, get, stop and list, each the application layer's operation the
//! REST route calls too (a spawn's checks and admission are the runtime's), with the REST response
//! body as the tool's result. A refusal is a tool error whose text is the error's code and
//! message (and, where waiting helps, the seconds to wait) and whose structured content is
//! the specification's error envelope.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::PartialSchema;

use crate::{
    accounts::Principal,
    app::{
        AppError, AppResult, AppState,
        agents::{self, AgentView, LIST_DEFAULT, LIST_MAX, SpawnBody, StopResult},
        params::Limit,
    },
    object::{self, Fields},
};

const SPAWN: &str = "agent_spawn";
const GET: &str = "agent_get";
const STOP: &str = "agent_stop";
const LIST: &str = "agent_list";

/// The agent tools as MCP tools.
pub fn tools() -> Vec<Tool> {
    let spawn = serde_json::to_value(SpawnBody::schema()).expect("schemas serialize");
    let agent_id = json!({
        "type": "object",
        "properties": { "agent_id": { "type": "string", "description": "the agent's id (`ag_…`)" } },
        "required": ["agent_id"],
    });
    let list = json!({
        "type": "object",
        "properties": {
            "limit": {
                "type": "integer", "minimum": 1, "default": LIST_DEFAULT,
                "description": format!("agents per page, newest first (capped at {LIST_MAX})"),
            },
            "cursor": { "type": "string", "description": "`next_cursor` of the previous page, unchanged" },
        },
    });
    [
        (
            SPAWN,
            "Start an agent on a task; it runs in the background (poll agent_get). Returns \
             {agent_id, name, status: spawning, task, created_at, model, container}.",
            spawn,
        ),
        (
            GET,
            "One agent: status (spawning, running, completed, stopped, failed), progress \
             entries, final_result once completed, error, usage.",
            agent_id.clone(),
        ),
        (
            STOP,
            "Stop an agent (idempotent: a finished agent is left as it is). Returns {agent_id, status}.",
            agent_id,
        ),
        (
            LIST,
            "The account's agents, newest first. Returns {data: [agent], next_cursor}.",
            list,
        ),
    ]
    .into_iter()
    .map(|(name, description, schema)| tool(name, description, schema))
    .collect()
}

/// An MCP tool of its name, description and input schema (an object schema).
pub(super) fn tool(name: &'static str, description: &'static str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else {
        unreachable!("every tool's input schema is an object")
    };
    Tool::new(name, description, schema)
}

/// Whether `name` is an agent tool.
pub fn serves(name: &str) -> bool {
    [SPAWN, GET, STOP, LIST].contains(&name)
}

/// `agent_get` and `agent_stop`.
#[derive(Debug, Deserialize)]
struct AgentId {
    agent_id: String,
}

impl Fields for AgentId {
    const FIELDS: &'static [(&'static str, &'static str)] = &[("agent_id", "a string")];
}

/// `agent_list`.
#[derive(Debug, Deserialize)]
struct Page {
    limit: Option<Limit<LIST_DEFAULT, LIST_MAX>>,
    cursor: Option<String>,
}

impl Fields for Page {
    const FIELDS: &'static [(&'static str, &'static str)] =
        &[("limit", "a whole number"), ("cursor", "a string")];
}

/// Runs agent tool `name` for `who`.
pub async fn call(
    state: &AppState,
    who: &Principal,
    name: &str,
    args: JsonObject,
) -> CallToolResult {
    let outcome = match name {
        SPAWN => run(args, |body: SpawnBody| agents::spawn(state, who, body)).await,
        GET => {
            run(args, |a: AgentId| async move {
                let record = state.runtime.agent(&who.account, &a.agent_id).await?;
                Ok(AgentView::from(&record))
            })
            .await
        }
        STOP => {
            run(args, |a: AgentId| async move {
                let status = state.runtime.stop(&who.account, &a.agent_id).await?;
                Ok(StopResult::new(a.agent_id, status))
            })
            .await
        }
        _ => {
            run(args, |p: Page| async move {
                let limit = p.limit.unwrap_or_default().0;
                agents::list(state, &who.account, limit, p.cursor.as_deref()).await
            })
            .await
        }
    };
    answer(outcome)
}

/// An operation's outcome as a tool result: the JSON (as text and as structured content),
/// or the refusal.
pub(super) fn answer(outcome: AppResult<Value>) -> CallToolResult {
    match outcome {
        Ok(result) => {
            let mut ok = CallToolResult::success(vec![ContentBlock::text(result.to_string())]);
            ok.structured_content = Some(result);
            ok
        }
        Err(e) => refused(e),
    }
}

/// Reads the arguments as `A` (a bad one is refused as the REST body's field would be), then
/// runs the operation and renders its result as JSON.
pub(super) async fn run<A: Fields, T: Serialize, F: Future<Output = AppResult<T>>>(
    args: JsonObject,
    operation: impl FnOnce(A) -> F,
) -> AppResult<Value> {
    let args = object::read(args)?;
    let result = operation(args).await?;
    Ok(serde_json::to_value(result).expect("responses serialize"))
}

/// A refusal as a tool error: `code: message`, the wait when one helps, and the envelope.
fn refused(e: AppError) -> CallToolResult {
    let mut text = format!("{}: {}", e.code, e.message);
    if let Some(secs) = e.retry_after {
        text.push_str(&format!(" (retry after {secs} seconds)"));
    }
    let mut error = json!({ "code": e.code, "message": e.message });
    if let Some(details) = e.details {
        error["details"] = details;
    }
    if let Some(secs) = e.retry_after {
        error["retry_after_secs"] = json!(secs);
    }
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({ "error": error }));
    result
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::refused;
    use crate::app::{AppError, Kind};

    /// A refusal a client can wait out says how long in its text and its envelope.
    #[test]
    fn a_refusal_is_a_tool_error_with_its_code_and_the_wait() {
        let mut e = AppError::new(
            Kind::TooManyRequests,
            "rate_limited",
            "this API key spawned its 5 agents per minute; retry in 42 s",
        )
        .with_details(json!({ "window": "minute" }));
        e.retry_after = Some(42);
        let result = refused(e);
        assert_eq!(result.is_error, Some(true));
        assert_eq!(
            result.content[0].as_text().unwrap().text,
            "rate_limited: this API key spawned its 5 agents per minute; retry in 42 s \
             (retry after 42 seconds)"
        );
        assert_eq!(
            result.structured_content,
            Some(json!({ "error": {
                "code": "rate_limited",
                "message": "this API key spawned its 5 agents per minute; retry in 42 s",
                "details": { "window": "minute" },
                "retry_after_secs": 42,
            }}))
        );

        let plain = refused(AppError::new(
            Kind::NotFound,
            "agent_not_found",
            "no agent with that id",
        ));
        assert_eq!(
            plain.content[0].as_text().unwrap().text,
            "agent_not_found: no agent with that id"
        );
    }
}
