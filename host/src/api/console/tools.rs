//! The console's writes of the account's tools: register, delete and list an MCP server
//! again, each the public route's body (`tools::*_in`) reached with an ID token instead of
//! an API key. Same requests, same answers, same errors; secrets go in and never come out.

use axum::{
    Json,
    extract::{Path, State, rejection::PathRejection},
    http::StatusCode,
};

use super::{
    super::{doc::ErrorEnvelope, extract::Body, tools},
    auth::ConsoleAuth,
};
use crate::app::{self, AppResult, AppState, tools::ToolView};
use crate::tools::Registration;

/// Register a tool (as POST /api/v1/tools).
#[utoipa::path(operation_id = "console_create_tool", post, path = "/api/v1/console/tools", tag = "console",
    request_body = Registration,
    security(("idToken" = [])),
    responses(
        (status = 201, description = "registered", body = ToolView),
        (status = 400, description = "Validation failed, as for POST /api/v1/tools: a bad field `f` is `invalid_f` with `details.field = \"f\"`; a body that is not a JSON object is `invalid_body`. Codes: `invalid_body`, `invalid_name`, `invalid_kind`, `invalid_description`, `invalid_parameters`, `invalid_endpoint`, `invalid_timeout_secs`, `invalid_secret_header`, `invalid_url`, `invalid_bearer`.", body = ErrorEnvelope),
        (status = 402, description = "The account has its plan's `tools`; `details.limit` says how many. Codes: `tool_quota_exceeded`.", body = ErrorEnvelope),
        (status = 409, description = "The account has a tool of that name. Codes: `tool_exists`.", body = ErrorEnvelope),
    ))]
pub async fn create_tool(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
    Body(registration): Body<Registration>,
) -> AppResult<(StatusCode, Json<ToolView>)> {
    let view = app::tools::register(&state, &session.account, session.plan, registration).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Delete a tool (as DELETE /api/v1/tools/{name}).
#[utoipa::path(operation_id = "console_delete_tool", delete, path = "/api/v1/console/tools/{name}", tag = "console",
    params(("name" = String, Path, description = "the tool's name")),
    security(("idToken" = [])),
    responses(
        (status = 200, description = "deleted; the tool as it was", body = ToolView),
        (status = 404, description = "No tool of that name in this account. Codes: `tool_not_found`.", body = ErrorEnvelope),
    ))]
pub async fn delete_tool(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
    path: Result<Path<String>, PathRejection>,
) -> AppResult<Json<ToolView>> {
    tools::delete_in(&state, &session.account, path)
        .await
        .map(Json)
}

/// List an MCP server's tools again (as POST /api/v1/tools/{name}/refresh).
#[utoipa::path(operation_id = "console_refresh_tool", post, path = "/api/v1/console/tools/{name}/refresh", tag = "console",
    params(("name" = String, Path, description = "the MCP server's name")),
    security(("idToken" = [])),
    responses(
        (status = 200, description = "listed; the server with its tools", body = ToolView),
        (status = 403, description = "The host's egress policy refuses the server's URL; `details.rule` says which. Nothing was sent. Codes: `tool_denied`. Details: ToolDeniedDetails.", body = ErrorEnvelope),
        (status = 404, description = "No tool of that name in this account. Codes: `tool_not_found`.", body = ErrorEnvelope),
        (status = 409, description = "The tool is an HTTP tool, which has no list to refresh. Codes: `not_an_mcp_server`.", body = ErrorEnvelope),
        (status = 502, description = "The server could not be reached or listed; the message says why. Codes: `tool_failed`.", body = ErrorEnvelope),
    ))]
pub async fn refresh_tool(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
    path: Result<Path<String>, PathRejection>,
) -> AppResult<Json<ToolView>> {
    tools::refresh_in(&state, &session.account, session.plan, path)
        .await
        .map(Json)
}
