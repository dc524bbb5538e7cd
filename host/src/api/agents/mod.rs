//! `/api/v1/agents…` handlers (§4.3): spawn within the plan's limits, list, get, stop, logs;
//! the account's own agent components (`components`).

pub mod components;
mod request;
mod response;

pub use self::components::{AgentComponentView, component_not_found};
pub use self::request::{LIST_DEFAULT, LIST_MAX, ListQuery, LogsQuery, SpawnBody};
use self::request::{MAX_NAME_CHARS, MAX_TASK_CHARS, REGION};
pub use self::response::*;
use super::{
    AppState,
    auth::Auth,
    cursor,
    doc::ErrorEnvelope,
    error::{ApiError, ApiResult},
    extract::{Body, Query},
};
use crate::{
    accounts::Principal,
    clock::iso8601,
    runtime::{AgentRecord, MemoryMode, RecordError, SpawnRequest, Status, StopError},
};
use axum::{
    Json,
    extract::{Path, State, rejection::PathRejection},
    http::StatusCode,
    response::{IntoResponse, Response},
};

/// Cursor kinds of the agent list and of log pages.
const AGENTS_CURSOR: &str = "a1";
const LOGS_CURSOR: &str = "l1";

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

/// Start an agent on a task, within the plan's budget, concurrency and spawn rate.
#[utoipa::path(post, path = "/api/v1/agents", tag = "agents", request_body = SpawnBody,
    security(("bearerAuth" = [])),
    responses(
        (status = 201, description = "spawning", body = SpawnedAgent),
        (status = 400, description = "Validation failed: a bad field `f` is `invalid_f` with `details.field = \"f\"`; a body that is not a JSON object is `invalid_body`. Codes: `invalid_body`, `invalid_task`, `invalid_name`, `invalid_region`, `invalid_memory_mode`, `invalid_agent`.", body = ErrorEnvelope),
        (status = 401, description = "Missing, malformed (not `Bearer <key>`), unknown or revoked API key. Codes: `invalid_api_key`.", body = ErrorEnvelope),
        (status = 402, description = "The plan's agent-hours or Mind tokens for this month are used (`details.budget` says which). Codes: `monthly_quota_exceeded`. Details: MonthlyQuotaDetails.", body = ErrorEnvelope),
        (status = 404, description = "`agent` names no component of this account. Codes: `component_not_found`.", body = ErrorEnvelope),
        (status = 413, description = "The body is over 1 MiB. Codes: `payload_too_large`.", body = ErrorEnvelope),
        (status = 429, description = "The account runs its plan's maximum of agents (`concurrent_limit_reached`, details: ConcurrentLimitDetails), or this key spawned its plan's agents per minute or hour (`rate_limited`, details: RateLimitDetails). Codes: `concurrent_limit_reached`, `rate_limited`.", body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait"))),
        (status = 500, description = "Unexpected error; the message quotes a request id that the server log carries with the cause. Codes: `internal_error`.", body = ErrorEnvelope),
        (status = 503, description = "This host runs its maximum of live agents; retry with backoff. Codes: `temporarily_unavailable`.", body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait"))),
    ))]
pub async fn spawn(
    State(state): State<AppState>,
    Auth(who): Auth,
    Body(body): Body<SpawnBody>,
) -> ApiResult<Response> {
    let body = spawn_agent(&state, &who, body).await?;
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// What a spawn does, whichever door it came in by (the REST route, the MCP tool): the
/// body's checks, then the runtime's admission, in the words of the specification's errors.
pub async fn spawn_agent(
    state: &AppState,
    who: &Principal,
    body: SpawnBody,
) -> ApiResult<SpawnedAgent> {
    let task = body.task;
    let chars = task.chars().count();
    if task.trim().is_empty() {
        return Err(ApiError::invalid_field("task", "task must not be empty"));
    }
    if chars > MAX_TASK_CHARS {
        return Err(ApiError::invalid_field(
            "task",
            format!("task is {chars} characters; the limit is {MAX_TASK_CHARS}"),
        ));
    }
    let given = body.name;
    if given
        .as_ref()
        .is_some_and(|n| n.trim().is_empty() || n.chars().count() > MAX_NAME_CHARS)
    {
        return Err(ApiError::invalid_field(
            "name",
            format!("name must be 1 to {MAX_NAME_CHARS} characters and not blank"),
        ));
    }
    let region = body.region.unwrap_or_else(|| REGION.into());
    if region != REGION {
        return Err(ApiError::invalid_field(
            "region",
            format!("region {region:?} is not available; the only region is \"{REGION}\""),
        ));
    }
    let memory_mode = match body.memory_mode {
        None => MemoryMode::default(),
        Some(m) => MemoryMode::parse(&m).ok_or_else(|| {
            ApiError::invalid_field(
                "memory_mode",
                format!(
                    "memory_mode {m:?} is unknown; use \"auto\", \"explicit\", \"both\" or \"off\""
                ),
            )
        })?,
    };
    let request = SpawnRequest {
        account: who.account.to_string(),
        key_id: who.key_id.to_string(),
        plan: who.plan,
        limits: state.limits(who.plan).clone(),
        task,
        name: given,
        memory_mode,
        agent: body.agent,
    };
    let record = state.runtime.spawn(request).await?;
    Ok(SpawnedAgent {
        created_at: iso8601(record.created_at),
        agent_id: record.agent_id,
        name: record.name,
        status: Status::Spawning.as_str(),
        task: record.task,
        model: record.model,
        container: Container {
            region: REGION,
            status: "starting",
        },
        agent: record.agent.as_ref().map(AgentComponentView::from),
    })
}

/// The account's agents, newest first.
#[utoipa::path(operation_id = "list_agents", get, path = "/api/v1/agents", tag = "agents", params(ListQuery),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "a page", body = AgentList),
        (status = 400, description = "A bad query parameter, named in `details.parameter`. Codes: `invalid_query`.", body = ErrorEnvelope),
        (status = 401, description = "Missing, malformed (not `Bearer <key>`), unknown or revoked API key. Codes: `invalid_api_key`.", body = ErrorEnvelope),
        (status = 500, description = "Unexpected error; the message quotes a request id that the server log carries with the cause. Codes: `internal_error`.", body = ErrorEnvelope),
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
/// `next_cursor`), whichever door the request came in by (REST, console, MCP); `limit` is
/// already within its bounds.
pub async fn list_agents(
    state: &AppState,
    account: &str,
    limit: usize,
    cursor: Option<&str>,
) -> ApiResult<AgentList> {
    let before = cursor
        .map(|c| cursor::decode(AGENTS_CURSOR, c))
        .transpose()?;
    let (page, next) = state.records.list(account, before, limit).await?;
    Ok(AgentList {
        data: page.iter().map(AgentView::from).collect(),
        next_cursor: next.map(|n| cursor::encode(AGENTS_CURSOR, n)),
    })
}

/// The record of agent `id` if `account` owns it, else 404 `agent_not_found`.
pub(in crate::api) async fn owned(
    state: &AppState,
    account: &str,
    id: String,
) -> ApiResult<AgentRecord> {
    (state.records.get(account, &id).await?).ok_or_else(agent_not_found)
}

/// One agent: status, progress, result, usage.
#[utoipa::path(operation_id = "get_agent", get, path = "/api/v1/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "the agent's id (`ag_…`)")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "the agent", body = AgentView),
        (status = 401, description = "Missing, malformed (not `Bearer <key>`), unknown or revoked API key. Codes: `invalid_api_key`.", body = ErrorEnvelope),
        (status = 404, description = "No agent with that id in this account. Codes: `agent_not_found`.", body = ErrorEnvelope),
        (status = 500, description = "Unexpected error; the message quotes a request id that the server log carries with the cause. Codes: `internal_error`.", body = ErrorEnvelope),
    ))]
pub async fn get(
    State(state): State<AppState>,
    Auth(who): Auth,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<AgentView>> {
    get_agent(&state, &who, agent_id(path)?).await.map(Json)
}

/// The caller's agent `id`: status, progress, result, usage; `agent_not_found` for an id
/// of no agent of theirs.
pub async fn get_agent(state: &AppState, who: &Principal, id: String) -> ApiResult<AgentView> {
    let record = owned(state, &who.account, id).await?;
    Ok(AgentView::from(&record))
}

/// Stop an agent; idempotent: a finished agent is returned unchanged, and it stays readable.
#[utoipa::path(operation_id = "stop_agent", delete, path = "/api/v1/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "the agent's id (`ag_…`)")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "stopped (or already finished)", body = StopResult),
        (status = 401, description = "Missing, malformed (not `Bearer <key>`), unknown or revoked API key. Codes: `invalid_api_key`.", body = ErrorEnvelope),
        (status = 404, description = "No agent with that id in this account. Codes: `agent_not_found`.", body = ErrorEnvelope),
        (status = 500, description = "Unexpected error; the message quotes a request id that the server log carries with the cause. Codes: `internal_error`.", body = ErrorEnvelope),
    ))]
pub async fn stop(
    State(state): State<AppState>,
    Auth(who): Auth,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<StopResult>> {
    stop_agent(&state, &who, agent_id(path)?).await.map(Json)
}

/// Stops the caller's agent `id` (idempotent: a finished agent is left as it is).
pub async fn stop_agent(state: &AppState, who: &Principal, id: String) -> ApiResult<StopResult> {
    let status = state
        .runtime
        .stop(&who.account, &id)
        .await
        .map_err(|e| match e {
            StopError::NotFound => agent_not_found(),
            StopError::Storage(e) => ApiError::internal(&e),
        })?;
    Ok(StopResult {
        agent_id: id,
        status: status.as_str(),
    })
}

/// An agent's log events, oldest first.
#[utoipa::path(get, path = "/api/v1/agents/{id}/logs", tag = "agents",
    params(("id" = String, Path, description = "the agent's id (`ag_…`)"), LogsQuery),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "a page", body = LogPage),
        (status = 400, description = "A bad query parameter, named in `details.parameter`. Codes: `invalid_query`.", body = ErrorEnvelope),
        (status = 401, description = "Missing, malformed (not `Bearer <key>`), unknown or revoked API key. Codes: `invalid_api_key`.", body = ErrorEnvelope),
        (status = 404, description = "No agent with that id in this account. Codes: `agent_not_found`.", body = ErrorEnvelope),
        (status = 500, description = "Unexpected error; the message quotes a request id that the server log carries with the cause. Codes: `internal_error`.", body = ErrorEnvelope),
    ))]
pub async fn logs(
    State(state): State<AppState>,
    Auth(who): Auth,
    path: Result<Path<String>, PathRejection>,
    Query(q): Query<LogsQuery>,
) -> ApiResult<Json<LogPage>> {
    let record = owned(&state, &who.account, agent_id(path)?).await?;
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
