//! What the tool operations answer: one shape whose kind's fields are set and the other's
//! null. No answer carries a secret: only whether there is one, and an HTTP tool's header
//! name.

use serde::Serialize;
use serde_json::Value;
use utoipa::{ToSchema, openapi::Schema};

use super::super::schema;
use crate::{
    clock::iso8601,
    tools::{
        Listing, ToolKind, ToolRecord,
        define::{KINDS, METHODS},
    },
};

/// One tool of an MCP server, as agents see it.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ListedTool)]
pub struct ListedToolView {
    /// `mcp_<server>_<tool>`.
    pub name: String,
    pub description: String,
    /// The tool's input schema, as the server gave it.
    #[schema(value_type = Object)]
    pub parameters: Value,
}

/// Where an HTTP tool's requests go.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Endpoint)]
pub struct EndpointView {
    pub url: String,
    #[schema(schema_with = method)]
    pub method: String,
}

fn method() -> Schema {
    schema::one_of(METHODS).into()
}

fn kinds() -> Schema {
    schema::one_of(KINDS).into()
}

fn tool_name() -> Schema {
    super::request::name().into()
}

/// A registered tool: an HTTP endpoint or an MCP server. Its secret is never answered.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Tool)]
pub struct ToolView {
    #[schema(schema_with = tool_name)]
    pub name: String,
    #[schema(schema_with = kinds)]
    pub kind: &'static str,
    pub description: String,
    /// Seconds a call may take.
    pub timeout_secs: f64,
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Whether a secret was given (its value is never answered).
    pub has_secret: bool,
    /// http: where its requests go.
    pub endpoint: Option<EndpointView>,
    /// http: the JSON Schema of its arguments.
    #[schema(value_type = Option<Object>)]
    pub parameters: Option<Value>,
    /// http: the header its secret is sent in.
    pub secret_header_name: Option<String>,
    /// mcp: the server's URL.
    pub url: Option<String>,
    /// mcp: its tools as last listed; null until first listed.
    pub tools: Option<Vec<ListedToolView>>,
    /// mcp: when it was last listed.
    #[schema(format = DateTime)]
    pub listed_at: Option<String>,
    /// mcp: why the last listing failed.
    pub list_error: Option<String>,
}

impl From<ToolRecord> for ToolView {
    fn from(r: ToolRecord) -> Self {
        let mut view = ToolView {
            name: r.name,
            kind: "http",
            description: r.description,
            timeout_secs: r.timeout_secs,
            created_at: iso8601(r.created_at),
            has_secret: r.secret.is_some(),
            endpoint: None,
            parameters: None,
            secret_header_name: None,
            url: None,
            tools: None,
            listed_at: None,
            list_error: None,
        };
        match r.kind {
            ToolKind::Http(tool) => {
                view.endpoint = Some(EndpointView {
                    url: tool.url,
                    method: tool.method,
                });
                view.parameters = Some(tool.parameters);
                view.secret_header_name = tool.secret_header;
            }
            ToolKind::Mcp(server) => {
                view.kind = "mcp";
                view.url = Some(server.url);
                if let Some(Listing {
                    listed_at,
                    tools,
                    error,
                }) = server.listing
                {
                    view.listed_at = Some(iso8601(listed_at));
                    view.list_error = error;
                    view.tools = Some(
                        (tools.into_iter())
                            .map(|t| ListedToolView {
                                name: t.name,
                                description: t.description,
                                parameters: t.parameters,
                            })
                            .collect(),
                    );
                }
            }
        }
        view
    }
}

/// GET /api/v1/tools
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolList {
    /// By name.
    pub data: Vec<ToolView>,
}

/// `details` of 403 `tool_denied` and 402 `http_budget_exceeded`: the egress rule that
/// refused the request.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolDeniedDetails {
    /// `allowlist` (no `[egress] allow` entry names the scheme, host and port), `address`
    /// (the host's addresses are refused) or `budget` (a plan's HTTP budget is spent).
    #[schema(schema_with = rules)]
    pub rule: String,
}

fn rules() -> Schema {
    schema::one_of(["allowlist", "address", "budget"]).into()
}

/// What the tool answered.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolCallResponse {
    /// The response's text (an MCP tool's text content), cut at the host's
    /// `[tools] max_result_chars`, as an agent gets it.
    pub result: String,
}
