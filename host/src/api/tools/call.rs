//! `POST /api/v1/tools/{name}/call`: a tenant tries one of its tools as an agent would call
//! it — the same checks, the same egress door and the same plan budgets — and reads the
//! result the agent would get.

use axum::{
    Json,
    extract::{Path, State, rejection::PathRejection},
    http::StatusCode,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::{ToolDeniedDetails, path_name, tool_not_found};
use crate::{
    api::{
        AppState,
        auth::Auth,
        doc::ErrorEnvelope,
        error::{ApiError, ApiResult},
        extract::Body,
    },
    object::Fields,
    tools::ToolError,
};

/// A call's arguments.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ToolCallRequest {
    /// The arguments, a JSON object checked against the tool's `parameters`.
    #[schema(value_type = Object)]
    pub arguments: Value,
}

impl Fields for ToolCallRequest {
    const FIELDS: &'static [(&'static str, &'static str)] = &[("arguments", "a JSON object")];
}

/// What the tool answered.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolCallResponse {
    /// The response's text (an MCP tool's text content), cut at the host's
    /// `[tools] max_result_chars`, as an agent gets it.
    pub result: String,
}

impl From<ToolError> for ApiError {
    fn from(e: ToolError) -> Self {
        match e {
            ToolError::Unknown(_) => tool_not_found(),
            e @ ToolError::Server(_) => {
                ApiError::new(StatusCode::CONFLICT, "not_a_tool", e.to_string())
            }
            ToolError::InvalidArguments(m) => {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_arguments", m)
            }
            ToolError::Denied { rule, message } if rule == "budget" => ApiError::new(
                StatusCode::PAYMENT_REQUIRED,
                "http_budget_exceeded",
                message,
            )
            .with_details(ToolDeniedDetails { rule }),
            ToolError::Denied { rule, message } => ApiError::new(
                StatusCode::FORBIDDEN,
                "tool_denied",
                format!("the host's egress policy refuses the tool's request: {message}"),
            )
            .with_details(ToolDeniedDetails { rule }),
            ToolError::Failed(m) => ApiError::new(StatusCode::BAD_GATEWAY, "tool_failed", m),
        }
    }
}

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
) -> ApiResult<Json<ToolCallResponse>> {
    let name = path_name(path)?;
    let arguments = request.arguments.to_string();
    let result = state
        .tools
        .try_call(&who.account, who.plan, &name, &arguments)
        .await?;
    Ok(Json(ToolCallResponse { result }))
}
