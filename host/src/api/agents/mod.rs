//! `/api/v1/agents…` handlers (§4.3): spawn within the plan's limits, list, get, stop, logs;
//! the account's own agent components (`components`).

pub mod components;
mod request;
mod response;

pub use self::components::component_not_found;
pub use self::request::{LIST_DEFAULT, LIST_MAX, ListQuery, LogsQuery, SpawnBody};
pub use self::response::*;
use super::{
    AppState,
    auth::Auth,
    cursor,
    doc::ErrorEnvelope,
    error::{ApiError, ApiResult},
    extract::{Body, Query},
};
use crate::runtime::{AgentError, AgentRecord, RecordError};
use axum::{
    Json,
    extract::{Path, State, rejection::PathRejection},
    http::StatusCode,
    response::{IntoResponse, Response},
};

/// Cursor kinds of the agent list and of log pages.
const AGENTS_CURSOR: &str = "a1";
const LOGS_CURSOR: &str = "l1";

/// 404 `agent_not_found`.
fn agent_not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "agent_not_found",
        "no agent with that id",
    )
}

/// The agent id of a path; a path that does not parse names no agent.
pub(in crate::api) fn agent_id(path: Result<Path<String>, PathRejection>) -> ApiResult<String> {
    path.map(|Path(id)| id).map_err(|_| agent_not_found())
}

/// A failure to read agent records is a 500.
impl From<RecordError> for ApiError {
    fn from(e: RecordError) -> Self {
        ApiError::internal(&e)
    }
}

/// An agent of no agent of the caller's is 404 `agent_not_found`.
impl From<AgentError> for ApiError {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::NotFound => agent_not_found(),
            AgentError::Storage(e) => e.into(),
        }
    }
}

/// Start an agent on a task, within the plan's budget, concurrency and spawn rate.
#[utoipa::path(post, path = "/api/v1/agents", tag = "agents", request_body = SpawnBody,
    security(("bearerAuth" = [])),
    responses(
        (status = 201, description = "spawning", body = SpawnedAgent),
        (status = 400, description = "Validation failed: a bad field `f` is `invalid_f` with `details.field = \"f\"`; a body that is not a JSON object is `invalid_body`. Codes: `invalid_body`, `invalid_task`, `invalid_name`, `invalid_region`, `invalid_memory_mode`, `invalid_agent`, `invalid_tools`.", body = ErrorEnvelope),
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
) -> ApiResult<Response> {
    let request = body.request(&who, state.limits(who.plan));
    let record = state.runtime.spawn(request).await?;
    Ok((StatusCode::CREATED, Json(SpawnedAgent::from(&record))).into_response())
}

/// The account's agents, newest first.
#[utoipa::path(operation_id = "list_agents", get, path = "/api/v1/agents", tag = "agents", params(ListQuery),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "a page", body = AgentList),
        (status = 400, description = "A bad query parameter, named in `details.parameter`. Codes: `invalid_query`.", body = ErrorEnvelope),
    ))]
pub async fn list(
    State(state): State<AppState>,
    Auth(who): Auth,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<AgentList>> {
    let limit = q.limit.unwrap_or_default().0;
    list_agents(&state, &who.account, limit, q.cursor.as_deref())
        .await
        .map(Json)
}

/// A page of `account`'s agents, newest first, after `cursor` (a previous page's
/// `next_cursor`), for the REST route and the console's; `limit` is already within its
/// bounds.
pub(in crate::api) async fn list_agents(
    state: &AppState,
    account: &str,
    limit: usize,
    cursor: Option<&str>,
) -> ApiResult<AgentList> {
    let before = list_position(cursor)?;
    let (page, next) = state.records.list(account, before, limit).await?;
    Ok(AgentList::page(&page, next))
}

/// The position in the agent list a cursor (a previous page's `next_cursor`) names;
/// `invalid_query` for one this server did not issue for that list.
pub fn list_position(cursor: Option<&str>) -> ApiResult<Option<u64>> {
    cursor.map(|c| cursor::decode(AGENTS_CURSOR, c)).transpose()
}

impl AgentList {
    /// A page of agents, and the cursor to the next if there is one.
    pub fn page(agents: &[AgentRecord], next: Option<u64>) -> Self {
        AgentList {
            data: agents.iter().map(AgentView::from).collect(),
            next_cursor: next.map(|n| cursor::encode(AGENTS_CURSOR, n)),
        }
    }
}

/// One agent: status, progress, result, usage.
#[utoipa::path(operation_id = "get_agent", get, path = "/api/v1/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "the agent's id (`ag_…`)")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "the agent", body = AgentView),
        (status = 404, description = "No agent with that id in this account. Codes: `agent_not_found`.", body = ErrorEnvelope),
    ))]
pub async fn get(
    State(state): State<AppState>,
    Auth(who): Auth,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<AgentView>> {
    let record = state.runtime.agent(&who.account, &agent_id(path)?).await?;
    Ok(Json(AgentView::from(&record)))
}

/// Stop an agent; idempotent: a finished agent is returned unchanged, and it stays readable.
#[utoipa::path(operation_id = "stop_agent", delete, path = "/api/v1/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "the agent's id (`ag_…`)")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "stopped (or already finished)", body = StopResult),
        (status = 404, description = "No agent with that id in this account. Codes: `agent_not_found`.", body = ErrorEnvelope),
    ))]
pub async fn stop(
    State(state): State<AppState>,
    Auth(who): Auth,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<StopResult>> {
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
        (status = 400, description = "A bad query parameter, named in `details.parameter`. Codes: `invalid_query`.", body = ErrorEnvelope),
        (status = 404, description = "No agent with that id in this account. Codes: `agent_not_found`.", body = ErrorEnvelope),
    ))]
pub async fn logs(
    State(state): State<AppState>,
    Auth(who): Auth,
    path: Result<Path<String>, PathRejection>,
    Query(q): Query<LogsQuery>,
) -> ApiResult<Json<LogPage>> {
    let record = state.runtime.agent(&who.account, &agent_id(path)?).await?;
    let limit = q.limit.unwrap_or_default().0;
    let after = q
        .cursor
        .as_deref()
        .map(|c| cursor::decode(LOGS_CURSOR, c))
        .transpose()?
        .unwrap_or(0);
    let (events, more) = (state.records)
        .logs(&record.account, &record.agent_id, after, limit)
        .await?;
    let next = more
        .then(|| events.last().map(|e| cursor::encode(LOGS_CURSOR, e.seq)))
        .flatten();
    Ok(Json(LogPage {
        data: events.iter().map(LogEventView::from).collect(),
        next_cursor: next,
    }))
}
