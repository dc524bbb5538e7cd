//! The account's registered tools over MCP: list, register, delete, refresh and call, each the
//! operation the REST route calls, with the REST response body as the tool's result and a
//! refusal as the REST error (`agents::answer`). Secrets go in and never come out.

use rmcp::model::{CallToolResult, JsonObject, Tool};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::PartialSchema;

use super::agents::{answer, run, tool};
use crate::{
    accounts::Principal,
    app::{AppState, tools as ops},
    object::Fields,
    tools::Registration,
};

const LIST: &str = "tool_list";
const REGISTER: &str = "tool_register";
const DELETE: &str = "tool_delete";
const REFRESH: &str = "tool_refresh";
const CALL: &str = "tool_call";

/// The tool tools as MCP tools.
pub fn tools() -> Vec<Tool> {
    // An MCP input schema is an object schema: the registration's two kinds under it.
    let registration = serde_json::to_value(Registration::schema()).expect("schemas serialize");
    let register = json!({ "type": "object", "oneOf": registration["oneOf"] });
    let name = json!({
        "type": "object",
        "properties": { "name": { "type": "string", "description": "the tool's name" } },
        "required": ["name"],
    });
    vec![
        tool(
            LIST,
            "The tools this account's agents may call (HTTP endpoints and MCP servers, each \
             MCP server with its tools as last listed). Returns {data: [tool]}; secrets are \
             never shown.",
            json!({ "type": "object", "properties": {} }),
        ),
        tool(
            REGISTER,
            "Register a tool for this account's agents: kind http (name, description, \
             parameters: a JSON Schema, endpoint {url, method}, timeout_secs?, secret_header \
             {name, value}?) or kind mcp (name, url, description?, timeout_secs?, bearer?). \
             Calls go through the host's egress policy. Returns the tool.",
            register,
        ),
        tool(
            DELETE,
            "Delete one of this account's tools. Returns the tool as it was.",
            name.clone(),
        ),
        tool(
            REFRESH,
            "List an MCP server's tools again (through the host's egress policy). Returns \
             the server with its tools.",
            name,
        ),
        tool(
            CALL,
            "Call one of this account's tools as an agent would (an MCP server's tool as \
             mcp_<server>_<tool>), through the host's egress policy and within the plan's \
             HTTP budgets. Returns {result}.",
            json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "the tool's name as agents see it" },
                    "arguments": { "type": "object", "description": "its arguments" },
                },
                "required": ["name", "arguments"],
            }),
        ),
    ]
}

/// Whether `name` is a tool tool.
pub fn serves(name: &str) -> bool {
    [LIST, REGISTER, DELETE, REFRESH, CALL].contains(&name)
}

/// `tool_delete` and `tool_refresh`.
#[derive(Debug, Deserialize)]
struct Named {
    name: String,
}

impl Fields for Named {
    const FIELDS: &'static [(&'static str, &'static str)] = &[("name", "a string")];
}

/// `tool_call`.
#[derive(Debug, Deserialize)]
struct Called {
    name: String,
    arguments: Value,
}

impl Fields for Called {
    const FIELDS: &'static [(&'static str, &'static str)] =
        &[("name", "a string"), ("arguments", "a JSON object")];
}

/// Runs tool tool `name` for `who`.
pub async fn call(
    state: &AppState,
    who: &Principal,
    name: &str,
    args: JsonObject,
) -> CallToolResult {
    let outcome = match name {
        LIST => (ops::list(state, &who.account).await)
            .map(|list| serde_json::to_value(list).expect("responses serialize")),
        REGISTER => {
            run(args, |registration: Registration| {
                ops::register(state, &who.account, who.plan, registration)
            })
            .await
        }
        DELETE => {
            run(args, |n: Named| async move {
                ops::delete(state, &who.account, &n.name).await
            })
            .await
        }
        REFRESH => {
            run(args, |n: Named| async move {
                ops::refresh(state, &who.account, who.plan, &n.name).await
            })
            .await
        }
        _ => {
            run(args, |c: Called| async move {
                ops::call(state, &who.account, who.plan, &c.name, &c.arguments).await
            })
            .await
        }
    };
    answer(outcome)
}
