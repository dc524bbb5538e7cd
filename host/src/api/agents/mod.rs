//! `/api/v1/agents…` handlers (§4.3): spawn within the plan's limits, list, get, stop, logs.

mod request;
mod response;

use std::time::Instant;

pub use self::request::{ListQuery, LogsQuery, SpawnBody};
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
    clock::{iso8601, next_month_start, now_ms},
    id::new_id,
    mind::jobs,
    runtime::{AgentRecord, MemoryMode, Refusal, Status, Usage},
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
/// Seconds a client should wait before retrying at the concurrency cap or host capacity.
const RETRY_BUSY_SECS: u64 = 5;

fn agent_not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "agent_not_found",
        "no agent with that id",
    )
}

fn agent_id(path: Result<Path<String>, PathRejection>) -> ApiResult<String> {
    path.map(|Path(id)| id).map_err(|_| agent_not_found())
}

fn blocking_err(e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(&e)
}

async fn blocking<T: Send + 'static, E: std::fmt::Display + Send + 'static>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> ApiResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(blocking_err)?
        .map_err(blocking_err)
}

/// Start an agent on a task, within the plan's budget, concurrency and spawn rate.
#[utoipa::path(post, path = "/api/v1/agents", tag = "agents", request_body = SpawnBody,
    security(("bearerAuth" = [])),
    responses(
        (status = 201, description = "spawning", body = SpawnedAgent),
        (status = 400, description = "Validation failed: a bad field `f` is `invalid_f` with `details.field = \"f\"`; a body that is not a JSON object is `invalid_body`. Codes: `invalid_body`, `invalid_task`, `invalid_name`, `invalid_region`, `invalid_memory_mode`.", body = ErrorEnvelope),
        (status = 401, description = "Missing, malformed (not `Bearer <key>`), unknown or revoked API key. Codes: `invalid_api_key`.", body = ErrorEnvelope),
        (status = 402, description = "The plan's agent-hours for this month are used. Codes: `monthly_quota_exceeded`. Details: MonthlyQuotaDetails.", body = ErrorEnvelope),
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
    let untitled = given.is_none();
    let name = match given {
        Some(n) if n.trim().is_empty() || n.chars().count() > MAX_NAME_CHARS => {
            return Err(ApiError::invalid_field(
                "name",
                format!("name must be 1 to {MAX_NAME_CHARS} characters and not blank"),
            ));
        }
        Some(n) => n,
        None => jobs::shorten(&task, jobs::MAX_TITLE_CHARS),
    };
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
    let plan = who.plan;
    let limits = state.config.plans.limits(plan).clone();
    let now = now_ms();

    let account = who.account.to_string();
    let usage_store = state.usage.clone();
    let finished_ms = blocking(move || usage_store.month(&account, now))
        .await?
        .run_ms;
    let used_ms = finished_ms + state.runtime.running_ms(&who.account);
    let budget_ms = (limits.agent_hours_per_month * 3_600_000.0) as u64;
    if used_ms >= budget_ms {
        let resets = next_month_start(now);
        return Err(ApiError::new(
            StatusCode::PAYMENT_REQUIRED,
            "monthly_quota_exceeded",
            format!(
                "the {plan} plan's {} agent-hours for this month are used; the budget resets at {}",
                limits.agent_hours_per_month,
                iso8601(resets)
            ),
        )
        .with_details(MonthlyQuotaDetails {
            plan: plan.as_str(),
            used_hours: used_ms as f64 / 3_600_000.0,
            limit_hours: limits.agent_hours_per_month,
            resets_at: iso8601(resets),
        }));
    }

    let slot = state.runtime.reserve(&who.account, limits.concurrent_agents).map_err(|refusal| match refusal {
        Refusal::ConcurrentLimit { current, max } => {
            let mut e = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "concurrent_limit_reached",
                format!("{current} agents are spawning or running, the {plan} plan's maximum; wait until one finishes or stop one"),
            )
            .with_details(ConcurrentLimitDetails {
                plan: plan.as_str(),
                current_concurrent: current.into(),
                max_concurrent: max.into(),
            });
            e.retry_after = Some(RETRY_BUSY_SECS);
            e
        }
        Refusal::AtCapacity { cap } => {
            let mut e = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                format!("this host is running its maximum of {cap} agents; retry with backoff"),
            );
            e.retry_after = Some(RETRY_BUSY_SECS);
            e
        }
    })?;

    if let Err(refusal) = state.rate.try_acquire(
        &who.key_id,
        limits.spawns_per_minute,
        limits.spawns_per_hour,
        Instant::now(),
    ) {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!(
                "this API key spawned its {} agents per {}; retry in {} s",
                match refusal.window.as_str() {
                    "minute" => limits.spawns_per_minute,
                    _ => limits.spawns_per_hour,
                },
                refusal.window.as_str(),
                refusal.retry_after_secs
            ),
        )
        .with_details(RateLimitDetails {
            plan: plan.as_str(),
            window: refusal.window.as_str(),
            limit_per_minute: limits.spawns_per_minute,
            limit_per_hour: limits.spawns_per_hour,
        });
        e.retry_after = Some(refusal.retry_after_secs);
        return Err(e);
    }

    let record = AgentRecord {
        agent_id: new_id("ag_"),
        account: who.account.to_string(),
        key_id: who.key_id.to_string(),
        name,
        status: Status::Spawning,
        task,
        created_at: now,
        updated_at: now,
        final_result: None,
        progress: Vec::new(),
        error: None,
        model: state.model.clone(),
        started_at: None,
        ended_at: None,
        usage: Usage::default(),
        memory_mode,
        seq: 0,
    };
    let records = state.records.clone();
    let record = blocking(move || records.create(record)).await?;
    state.runtime.launch(slot, &record, limits.memories);
    if untitled {
        state.runtime.retitle(&record);
    }
    let body = SpawnedAgent {
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
    };
    Ok((StatusCode::CREATED, Json(body)).into_response())
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
    let before = q
        .cursor
        .as_deref()
        .map(|c| cursor::decode(AGENTS_CURSOR, c))
        .transpose()?;
    let records = state.records.clone();
    let account = who.account.to_string();
    let (page, next) = blocking(move || records.list(&account, before, limit)).await?;
    Ok(Json(AgentList {
        data: page.iter().map(AgentView::from).collect(),
        next_cursor: next.map(|n| cursor::encode(AGENTS_CURSOR, n)),
    }))
}

async fn owned(state: &AppState, account: &str, id: String) -> ApiResult<AgentRecord> {
    let records = state.records.clone();
    let account = account.to_string();
    blocking(move || records.get(&account, &id))
        .await?
        .ok_or_else(agent_not_found)
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
    let record = owned(&state, &who.account, agent_id(path)?).await?;
    Ok(Json(AgentView::from(&record)))
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
    let record = owned(&state, &who.account, agent_id(path)?).await?;
    if record.status.is_terminal() {
        return Ok(Json(StopResult {
            agent_id: record.agent_id,
            status: record.status.as_str(),
        }));
    }
    let records = state.records.clone();
    let id = record.agent_id.clone();
    let updated = blocking(move || {
        records.update(&id, |r| {
            let alive = !r.status.is_terminal();
            if alive {
                r.status = Status::Stopped;
                r.ended_at = Some(now_ms());
            }
            alive
        })
    })
    .await?
    .ok_or_else(agent_not_found)?;
    state.runtime.stop(&updated.agent_id);
    Ok(Json(StopResult {
        status: updated.status.as_str(),
        agent_id: updated.agent_id,
    }))
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
    let records = state.records.clone();
    let (events, more) = blocking(move || records.logs(&record.agent_id, after, limit)).await?;
    let next = more
        .then(|| events.last().map(|e| cursor::encode(LOGS_CURSOR, e.seq)))
        .flatten();
    Ok(Json(LogPage {
        data: events.iter().map(LogEventView::from).collect(),
        next_cursor: next,
    }))
}
