//! `/api/v1/tools…` handlers, the application layer's tool operations over HTTP: a tenant
//! registers the tools its agents may call (HTTP endpoints and remote MCP servers), lists,
//! reads and deletes them, and lists an MCP server's tools again. Every route sees only the caller's account: another account's
//! tool is 404. No answer carries a secret.

use axum::{
    Json,
    extract::{Path, State, rejection::PathRejection},
    http::StatusCode,
};

mod call;

pub use self::call::*;
use super::{auth::AccountAuth, descriptions::TOOL_NOT_FOUND, doc::ErrorEnvelope, extract::Body};
use crate::{
    app::{
        AppResult, AppState,
        tools::{self, ToolList, ToolView, tool_not_found},
    },
    tools::Registration,
};

/// A tool name of a path; a path that does not parse names no tool.
fn path_name(path: Result<Path<String>, PathRejection>) -> AppResult<String> {
    path.map(|Path(name)| name).map_err(|_| tool_not_found())
}

/// Register a tool: an HTTP endpoint, or a remote MCP server whose tools are listed on
/// first use. Its secret is kept sealed and never answered.
#[utoipa::path(operation_id = "create_tool", post, path = "/api/v1/tools", tag = "tools",
    request_body = Registration,
    security(("bearerAuth" = []), ("idToken" = [])),
    responses(
        (status = 201, description = "registered", body = ToolView),
        (status = 400, description = "Validation failed: a bad field `f` is `invalid_f` with `details.field = \"f\"` (the message says what to fix: a name not snake_case or with a reserved prefix, `parameters` not a JSON Schema of an object, an endpoint URL that is not http(s) or holds credentials, a timeout above the host's `[egress] total_timeout_secs`, a secret header the host sets itself, …); a body that is not a JSON object is `invalid_body`. Codes: `invalid_body`, `invalid_name`, `invalid_kind`, `invalid_description`, `invalid_parameters`, `invalid_endpoint`, `invalid_timeout_secs`, `invalid_secret_header`, `invalid_url`, `invalid_bearer`.", body = ErrorEnvelope),
        (status = 402, description = "The account has its plan's `tools`; `details.limit` says how many. Codes: `tool_quota_exceeded`.", body = ErrorEnvelope),
        (status = 409, description = "The account has a tool of that name. Codes: `tool_exists`.", body = ErrorEnvelope),
    ))]
pub async fn create(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
    Body(registration): Body<Registration>,
) -> AppResult<(StatusCode, Json<ToolView>)> {
    let view = tools::register(&state, &who.account, who.plan, registration).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// The account's tools, by name.
#[utoipa::path(operation_id = "list_tools", get, path = "/api/v1/tools", tag = "tools",
    security(("bearerAuth" = []), ("idToken" = [])),
    responses(
        (status = 200, description = "every tool of the account", body = ToolList),
    ))]
pub async fn list(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
) -> AppResult<Json<ToolList>> {
    tools::list(&state, &who.account).await.map(Json)
}

/// One tool.
#[utoipa::path(operation_id = "get_tool", get, path = "/api/v1/tools/{name}", tag = "tools",
    params(("name" = String, Path, description = "the tool's name")),
    security(("bearerAuth" = []), ("idToken" = [])),
    responses(
        (status = 200, description = "the tool", body = ToolView),
        (status = 404, description = TOOL_NOT_FOUND, body = ErrorEnvelope),
    ))]
pub async fn get(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
    path: Result<Path<String>, PathRejection>,
) -> AppResult<Json<ToolView>> {
    let name = path_name(path)?;
    let record = state.tools.get(&who.account, &name).await?;
    record
        .map(|r| Json(ToolView::from(r)))
        .ok_or_else(tool_not_found)
}

/// Delete a tool; agents stop seeing it at their next listing (a call in flight ends).
#[utoipa::path(operation_id = "delete_tool", delete, path = "/api/v1/tools/{name}", tag = "tools",
    params(("name" = String, Path, description = "the tool's name")),
    security(("bearerAuth" = []), ("idToken" = [])),
    responses(
        (status = 200, description = "deleted; the tool as it was", body = ToolView),
        (status = 404, description = TOOL_NOT_FOUND, body = ErrorEnvelope),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
    path: Result<Path<String>, PathRejection>,
) -> AppResult<Json<ToolView>> {
    let name = path_name(path)?;
    tools::delete(&state, &who.account, &name).await.map(Json)
}

/// List an MCP server's tools again, through the host's egress policy. A failure keeps
/// the tools listed before.
#[utoipa::path(operation_id = "refresh_tool", post, path = "/api/v1/tools/{name}/refresh",
    tag = "tools",
    params(("name" = String, Path, description = "the MCP server's name")),
    security(("bearerAuth" = []), ("idToken" = [])),
    responses(
        (status = 200, description = "listed; the server with its tools", body = ToolView),
        (status = 409, description = "The tool is an HTTP tool, which has no list to refresh. Codes: `not_an_mcp_server`.", body = ErrorEnvelope),
        (status = 403, description = "The host's egress policy refuses the server's URL (its scheme, host and port on no allowlist, or its addresses refused); `details.rule` says which. Nothing was sent. Codes: `tool_denied`. Details: ToolDeniedDetails.", body = ErrorEnvelope),
        (status = 404, description = TOOL_NOT_FOUND, body = ErrorEnvelope),
        (status = 502, description = "The server could not be reached or listed: its answer, the connection, the timeout; the message says which. Codes: `tool_failed`.", body = ErrorEnvelope),
    ))]
pub async fn refresh(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
    path: Result<Path<String>, PathRejection>,
) -> AppResult<Json<ToolView>> {
    let name = path_name(path)?;
    (tools::refresh(&state, &who.account, who.plan, &name).await).map(Json)
}
