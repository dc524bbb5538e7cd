//! `POST /api/v1/tools/{name}/call`: a tenant tries one of its tools as an agent would call
//! it — the same checks, the same egress door and the same plan budgets — and reads the
//! result the agent would get.

use axum::{
    Json,
    extract::{Path, State, rejection::PathRejection},
};

use super::{
    super::{auth::Auth, doc::ErrorEnvelope, extract::Body},
    path_name,
};
use crate::app::{
    AppResult, AppState,
    tools::{self, ToolCallRequest, ToolCallResponse},
};

/// Call a tool as an agent would: an HTTP tool by its name, an MCP server's tool by the
/// name agents see (`mcp_<server>_<tool>`). Each call is a request through the host's
/// egress policy, counted in the plan's HTTP budgets for the month, with an
/// `Idempotency-Key` of its own.
#[utoipa::path(operation_id = "call_tool", post, path = "/api/v1/tools/{name}/call",
    tag = "tools",
    params(("name" = String, Path, description = "the tool's name as agents see it")),
    request_body = ToolCallRequest,
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "the tool's result", body = ToolCallResponse),
        (status = 400, description = "The arguments are not a JSON object or do not fit the tool's `parameters` (the message quotes where); a body that is not a JSON object is `invalid_body`. Codes: `invalid_body`, `invalid_arguments`.", body = ErrorEnvelope),
        (status = 402, description = "A plan's HTTP budget for the month is spent (`http_requests_per_month`, `http_bytes_per_month`); nothing was sent. Codes: `http_budget_exceeded`. Details: ToolDeniedDetails.", body = ErrorEnvelope),
        (status = 403, description = "The host's egress policy refuses the tool's URL (its scheme, host and port on no allowlist, or its addresses refused); `details.rule` says which. Nothing was sent. Codes: `tool_denied`. Details: ToolDeniedDetails.", body = ErrorEnvelope),
        (status = 404, description = "No tool of that name in this account (an MCP server's tools are called as `mcp_<server>_<tool>`). Codes: `tool_not_found`.", body = ErrorEnvelope),
        (status = 409, description = "The name is one of the account's MCP servers, which is no tool: its tools are called as `mcp_<server>_<tool>`. Codes: `not_a_tool`.", body = ErrorEnvelope),
        (status = 502, description = "The request was made and failed: a status other than 2xx, the connection, the timeout, an MCP tool's error, a secret this node cannot open; the message says which. Codes: `tool_failed`.", body = ErrorEnvelope),
    ))]
pub async fn call(
    State(state): State<AppState>,
    Auth(who): Auth,
    path: Result<Path<String>, PathRejection>,
    Body(request): Body<ToolCallRequest>,
) -> AppResult<Json<ToolCallResponse>> {
    let name = path_name(path)?;
    tools::call(&state, &who.account, who.plan, &name, &request.arguments)
        .await
        .map(Json)
}
