//! The tool operations both doors call: a tenant registers the tools its agents may call
//! (HTTP endpoints and remote MCP servers), lists, deletes and calls them, and lists an
//! MCP server's tools again — each within the account's plan, each seeing only the
//! account's own tools (another account's is `tool_not_found`). No answer carries a secret.

mod request;
mod response;

use serde_json::json;

pub use self::{request::*, response::*};
use super::{AppError, AppResult, AppState, Kind};
use crate::{
    accounts::Plan,
    tools::{RefreshError, RegisterError, Registration, ToolError},
};

/// 404 `tool_not_found`: no tool of the caller's account has that name.
pub fn tool_not_found() -> AppError {
    AppError::new(
        Kind::NotFound,
        "tool_not_found",
        "no tool with that name in this account; GET /api/v1/tools lists them",
    )
}

/// Registers `registration` in `account`, within its `plan`'s `tools`.
pub async fn register(
    state: &AppState,
    account: &str,
    plan: Plan,
    registration: Registration,
) -> AppResult<ToolView> {
    let max = state.limits(plan).tools;
    let record = state.tools.register(account, registration, max).await?;
    Ok(ToolView::from(record))
}

/// The tools of `account`, by name.
pub async fn list(state: &AppState, account: &str) -> AppResult<ToolList> {
    let records = state.tools.list(account).await?;
    Ok(ToolList {
        data: records.into_iter().map(ToolView::from).collect(),
    })
}

/// Deletes the tool `name` of `account`; the tool as it was.
pub async fn delete(state: &AppState, account: &str, name: &str) -> AppResult<ToolView> {
    let record = state.tools.delete(account, name).await?;
    record.map(ToolView::from).ok_or_else(tool_not_found)
}

/// Lists the MCP server `name` of `account` again, through the host's egress policy
/// within `plan`'s budgets.
pub async fn refresh(
    state: &AppState,
    account: &str,
    plan: Plan,
    name: &str,
) -> AppResult<ToolView> {
    let record = state.tools.refresh(account, plan, name).await?;
    Ok(ToolView::from(record))
}

/// Calls tool `name` of `account` with `arguments` as an agent would, within `plan`'s
/// HTTP budgets.
pub async fn call(
    state: &AppState,
    account: &str,
    plan: Plan,
    name: &str,
    arguments: &serde_json::Value,
) -> AppResult<ToolCallResponse> {
    let arguments = arguments.to_string();
    let result = (state.tools)
        .try_call(account, plan, name, &arguments)
        .await?;
    Ok(ToolCallResponse { result })
}

impl From<RegisterError> for AppError {
    fn from(e: RegisterError) -> Self {
        match e {
            RegisterError::Invalid(invalid) => {
                AppError::invalid_field(invalid.field, invalid.message)
            }
            RegisterError::Exists => AppError::new(
                Kind::Conflict,
                "tool_exists",
                "this account has a tool of that name; delete it first, or choose another name",
            ),
            RegisterError::Quota { max } => AppError::new(
                Kind::PaymentRequired,
                "tool_quota_exceeded",
                format!("this account has its plan's {max} tools; delete one or upgrade the plan"),
            )
            .with_details(json!({ "limit": max })),
            RegisterError::Storage(e) => AppError::internal(&e),
        }
    }
}

impl From<RefreshError> for AppError {
    fn from(e: RefreshError) -> Self {
        match e {
            RefreshError::NotFound => tool_not_found(),
            RefreshError::NotMcp(_) => {
                AppError::new(Kind::Conflict, "not_an_mcp_server", e.to_string())
            }
            RefreshError::Tool(ToolError::Denied { rule, message }) => AppError::new(
                Kind::Forbidden,
                "tool_denied",
                format!("the host's egress policy refuses the MCP server: {message}"),
            )
            .with_details(ToolDeniedDetails { rule }),
            RefreshError::Tool(e) => AppError::new(
                Kind::BadGateway,
                "tool_failed",
                format!("the MCP server could not be listed: {e}"),
            ),
            RefreshError::Storage(e) => AppError::internal(&e),
        }
    }
}

impl From<ToolError> for AppError {
    fn from(e: ToolError) -> Self {
        match e {
            ToolError::Unknown(_) => tool_not_found(),
            e @ ToolError::Server(_) => AppError::new(Kind::Conflict, "not_a_tool", e.to_string()),
            ToolError::InvalidArguments(m) => {
                AppError::new(Kind::BadRequest, "invalid_arguments", m)
            }
            ToolError::Denied { rule, message } if rule == "budget" => {
                AppError::new(Kind::PaymentRequired, "http_budget_exceeded", message)
                    .with_details(ToolDeniedDetails { rule })
            }
            ToolError::Denied { rule, message } => AppError::new(
                Kind::Forbidden,
                "tool_denied",
                format!("the host's egress policy refuses the tool's request: {message}"),
            )
            .with_details(ToolDeniedDetails { rule }),
            ToolError::Failed(m) => AppError::new(Kind::BadGateway, "tool_failed", m),
        }
    }
}
