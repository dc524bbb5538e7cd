//! The five memory tools of §4.4 over MCP: the guest SDK's specs (names, descriptions, JSON
//! Schemas) and its runner ([`wasmind_sdk::run_memory_tool`]) over the account's memory as
//! agents reach it, so a tool call here parses, validates, answers and fails exactly as the
//! same call made by an agent inside the sandbox.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::Value;
use wasmind_sdk::{ToolCall, is_memory_tool, memory_tools, run_memory_tool};

use crate::{
    accounts::Principal,
    app::{AppState, memory::tool_memory},
    blocking::{BlockingError, run_blocking},
    memory::Door,
};

/// The memory tools as MCP tools.
pub fn tools() -> Vec<Tool> {
    memory_tools()
        .into_iter()
        .map(|spec| {
            let Value::Object(schema) = spec.parameters else {
                unreachable!("every memory tool's parameters are a JSON Schema object")
            };
            Tool::new(spec.name, spec.description, schema)
        })
        .collect()
}

/// Whether `name` is a memory tool.
pub fn serves(name: &str) -> bool {
    is_memory_tool(name)
}

/// Runs memory tool `name` for `who`: the result object as JSON text (and as structured
/// content), or the §4.4 failure text as a tool error.
pub async fn call(
    state: &AppState,
    who: &Principal,
    name: &str,
    args: JsonObject,
) -> CallToolResult {
    let memory = tool_memory(state, who, Door::Mcp);
    let call = ToolCall::new("mcp", name, &Value::Object(args));
    // The SDK's memory is synchronous (a guest blocks on its host calls): run it on a
    // blocking thread, which waits on the async host side.
    match run_blocking(move || run_memory_tool(&memory, &call)).await {
        Ok(result) => {
            let mut ok = CallToolResult::success(vec![ContentBlock::text(result.to_string())]);
            ok.structured_content = Some(result);
            ok
        }
        Err(BlockingError::Failed(failure)) => {
            CallToolResult::error(vec![ContentBlock::text(failure)])
        }
        Err(aborted) => {
            tracing::error!(error = %aborted, "memory tool thread failed");
            CallToolResult::error(vec![ContentBlock::text(wasmind_rules::tool_failure(
                "the memory service failed; try again",
            ))])
        }
    }
}
