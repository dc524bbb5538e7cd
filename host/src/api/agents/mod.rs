//! `/api/v1/agents…` handlers (§4.3): spawn, list, get, stop, logs — the application
//! layer's agent operations over HTTP; the account's own agent components (`components`).

pub mod components;

use axum::{
    Json,
    extract::{Path, State, rejection::PathRejection},
    http::StatusCode,
    response::{IntoResponse, Response},
};

use super::{
    auth::{AccountAuth, Auth},
    descriptions::{AGENT_NOT_FOUND, BAD_QUERY, bad_fields},
    doc::ErrorEnvelope,
    extract::{Body, Query},
};
use crate::app::{
    AppResult, AppState,
    agents::{
        self, AgentList, AgentView, LOGS_CURSOR, ListQuery, LogEventView, LogPage, LogsQuery,
        SpawnBody, SpawnedAgent, StopResult, agent_not_found,
    },
};

/// The agent id of a path; a path that does not parse names no agent.
pub(in crate::api) fn agent_id(path: Result<Path<String>, PathRejection>) -> AppResult<String> {
    path.map(|Path(id)| id).map_err(|_| agent_not_found())
}

/// Start an agent on a task, within the plan's budget, concurrency and spawn rate.
#[utoipa::path(post, path = "/api/v1/agents", tag = "agents", request_body = SpawnBody,
    security(("bearerAuth" = [])),
    responses(
        (status = 201, description = "spawning", body = SpawnedAgent),
        (status = 400, description = bad_fields(&["invalid_task", "invalid_name", "invalid_region", "invalid_memory_mode", "invalid_agent", "invalid_tools"]), body = ErrorEnvelope),
        (status = 402, description = "The plan's agent-hours or Mind tokens for this month are used (`details.budget` says which). Codes: `monthly_quota_exceeded`. Details: MonthlyQuotaDetails.", body = ErrorEnvelope),
        (status = 404, description = "`agent` names no component of this account. Codes: `component_not_found`.", body = ErrorEnvelope),
        (status = 429, description = "The account runs its plan's maximum of agents (`concurrent_limit_reached`, details: ConcurrentLimitDetails), or this key spawned its plan's agents per minute or hour (`rate_limited`, details: RateLimitDetails), or the account has its plan's `requests_in_flight` requests in flight (`request_limit_reached`, details: RequestLimitDetails). Codes: `concurrent_limit_reached`, `rate_limited`, `request_limit_reached`.", body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait"))),
        (status = 503, description = "This host runs its maximum of live agents; retry with backoff. Codes: `temporarily_unavailable`.", body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait"))),
    ))]
pub async fn spawn(
    State(state): State<AppState>,
    Auth(who): Auth,
    Body(body): Body<SpawnBody>,
) -> AppResult<Response> {
    let spawned = agents::spawn(&state, &who, body).await?;
    Ok((StatusCode::CREATED, Json(spawned)).into_response())
}

/// The account's agents, newest first.
#[utoipa::path(operation_id = "list_agents", get, path = "/api/v1/agents", tag = "agents", params(ListQuery),
    security(("bearerAuth" = []), ("idToken" = [])),
    responses(
        (status = 200, description = "a page", body = AgentList),
        (status = 400, description = BAD_QUERY, body = ErrorEnvelope),
    ))]
pub async fn list(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
    Query(q): Query<ListQuery>,
) -> AppResult<Json<AgentList>> {
    let limit = q.limit.unwrap_or_default().0;
    agents::list(&state, &who.account, limit, q.cursor.as_deref())
        .await
        .map(Json)
}

/// One agent: status, progress, result, usage.
#[utoipa::path(operation_id = "get_agent", get, path = "/api/v1/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "the agent's id (`ag_…`)")),
    security(("bearerAuth" = []), ("idToken" = [])),
    responses(
        (status = 200, description = "the agent", body = AgentView),
        (status = 404, description = AGENT_NOT_FOUND, body = ErrorEnvelope),
    ))]
pub async fn get(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
    path: Result<Path<String>, PathRejection>,
) -> AppResult<Json<AgentView>> {
    let record = state.runtime.agent(&who.account, &agent_id(path)?).await?;
    Ok(Json(AgentView::from(&record)))
}

/// Stop an agent; idempotent: a finished agent is returned unchanged, and it stays readable.
#[utoipa::path(operation_id = "stop_agent", delete, path = "/api/v1/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "the agent's id (`ag_…`)")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "stopped (or already finished)", body = StopResult),
        (status = 404, description = AGENT_NOT_FOUND, body = ErrorEnvelope),
    ))]
pub async fn stop(
    State(state): State<AppState>,
    Auth(who): Auth,
    path: Result<Path<String>, PathRejection>,
) -> AppResult<Json<StopResult>> {
    let id = agent_id(path)?;
    let status = state.runtime.stop(&who.account, &id).await?;
    Ok(Json(StopResult::new(id, status)))
}

/// An agent's log events, oldest first.
#[utoipa::path(get, path = "/api/v1/agents/{id}/logs", tag = "agents",
    params(("id" = String, Path, description = "the agent's id (`ag_…`)"), LogsQuery),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "a page", body = LogPage),
        (status = 400, description = BAD_QUERY, body = ErrorEnvelope),
        (status = 404, description = AGENT_NOT_FOUND, body = ErrorEnvelope),
    ))]
pub async fn logs(
    State(state): State<AppState>,
    Auth(who): Auth,
    path: Result<Path<String>, PathRejection>,
    Query(q): Query<LogsQuery>,
) -> AppResult<Json<LogPage>> {
    let record = state.runtime.agent(&who.account, &agent_id(path)?).await?;
    let limit = q.limit.unwrap_or_default().0;
    let after = LOGS_CURSOR.position(q.cursor.as_deref())?.unwrap_or(0);
    let (events, more) = (state.records)
        .logs(&record.account, &record.agent_id, after, limit)
        .await?;
    let next = more.then(|| events.last().map(|e| e.seq)).flatten();
    Ok(Json(LogPage {
        data: events.iter().map(LogEventView::from).collect(),
        next_cursor: LOGS_CURSOR.next(next),
    }))
}
