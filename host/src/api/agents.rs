//! `/api/v1/agents…` handlers (§4.3): spawn within the plan's limits, list, get, stop, logs.

use axum::{
    Json,
    extract::{Path, State, rejection::PathRejection},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};

use super::{
    AppState,
    auth::Auth,
    cursor,
    error::{ApiError, ApiResult},
    extract::{JsonObject, QueryParams},
    fields::Fields,
};
use crate::{
    blocking::run_blocking,
    clock::iso8601,
    runtime::{AgentRecord, LogEvent, MemoryMode, SpawnRequest, Status, StopError, Usage},
};

/// Longest task (§8).
const MAX_TASK_CHARS: usize = 4_000;
/// Longest display name.
const MAX_NAME_CHARS: usize = 200;
/// The only region (§4.3).
const REGION: &str = "iad";
/// Agent list page: default and maximum (§8).
const LIST_DEFAULT: usize = 20;
const LIST_MAX: usize = 100;
/// Log page: default and maximum.
const LOGS_DEFAULT: usize = 100;
const LOGS_MAX: usize = 1_000;
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

fn agent_id(path: Result<Path<String>, PathRejection>) -> ApiResult<String> {
    path.map(|Path(id)| id).map_err(|_| agent_not_found())
}

/// Runs storage work off the async workers; any failure is a 500.
async fn blocking<T: Send + 'static, E: std::fmt::Display + Send + 'static>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> ApiResult<T> {
    run_blocking(f).await.map_err(|e| ApiError::internal(&e))
}

fn usage(u: Usage) -> Value {
    json!({ "input_tokens": u.input_tokens, "output_tokens": u.output_tokens })
}

/// The agent record as list and get return it.
fn view(r: &AgentRecord) -> Value {
    json!({
        "agent_id": r.agent_id,
        "name": r.name,
        "status": r.status.as_str(),
        "task": r.task,
        "created_at": iso8601(r.created_at),
        "updated_at": iso8601(r.updated_at),
        "final_result": r.final_result,
        "progress": r.progress.iter().map(|p| json!({ "ts": p.ts, "kind": p.kind, "message": p.message })).collect::<Vec<_>>(),
        "error": r.error.as_ref().map(|e| json!({ "code": e.code, "message": e.message })),
        "model": r.model,
        "usage": usage(r.usage),
        "memory_mode": r.memory_mode.as_str(),
    })
}

fn log_view(e: &LogEvent) -> Value {
    let mut v = json!({ "seq": e.seq, "ts": e.ts, "kind": e.kind, "message": e.message });
    if let Some(data) = &e.data {
        v["data"] = data.clone();
    }
    v
}

/// POST /api/v1/agents
pub async fn spawn(
    State(state): State<AppState>,
    Auth(who): Auth,
    JsonObject(body): JsonObject,
) -> ApiResult<Response> {
    let f = Fields(&body);
    let task = f.string("task")?;
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
    let given = f.opt_string("name")?;
    if given
        .as_ref()
        .is_some_and(|n| n.trim().is_empty() || n.chars().count() > MAX_NAME_CHARS)
    {
        return Err(ApiError::invalid_field(
            "name",
            format!("name must be 1 to {MAX_NAME_CHARS} characters and not blank"),
        ));
    }
    let region = f.opt_string("region")?.unwrap_or_else(|| REGION.into());
    if region != REGION {
        return Err(ApiError::invalid_field(
            "region",
            format!("region {region:?} is not available; the only region is \"{REGION}\""),
        ));
    }
    let memory_mode = match f.opt_string("memory_mode")? {
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
        limits: state.config.plans.limits(who.plan).clone(),
        task,
        name: given,
        memory_mode,
    };
    let record = state.runtime.spawn(request).await?;
    let body = json!({
        "agent_id": record.agent_id,
        "name": record.name,
        "status": Status::Spawning.as_str(),
        "task": record.task,
        "created_at": iso8601(record.created_at),
        "model": record.model,
        "container": { "region": REGION, "status": "starting" },
    });
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// GET /api/v1/agents?limit&cursor
pub async fn list(
    State(state): State<AppState>,
    Auth(who): Auth,
    q: QueryParams,
) -> ApiResult<Json<Value>> {
    let limit = q.limit(LIST_DEFAULT, LIST_MAX)?;
    let before = q
        .get("cursor")
        .map(|c| cursor::decode(AGENTS_CURSOR, c))
        .transpose()?;
    let records = state.records.clone();
    let account = who.account.to_string();
    let (page, next) = blocking(move || records.list(&account, before, limit)).await?;
    Ok(Json(json!({
        "data": page.iter().map(view).collect::<Vec<_>>(),
        "next_cursor": next.map(|n| cursor::encode(AGENTS_CURSOR, n)),
    })))
}

async fn owned(state: &AppState, account: &str, id: String) -> ApiResult<AgentRecord> {
    let records = state.records.clone();
    let account = account.to_string();
    blocking(move || records.get(&account, &id))
        .await?
        .ok_or_else(agent_not_found)
}

/// GET /api/v1/agents/{id}
pub async fn get(
    State(state): State<AppState>,
    Auth(who): Auth,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<Value>> {
    let record = owned(&state, &who.account, agent_id(path)?).await?;
    Ok(Json(view(&record)))
}

/// DELETE /api/v1/agents/{id} — idempotent; terminal agents are returned unchanged.
pub async fn stop(
    State(state): State<AppState>,
    Auth(who): Auth,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<Value>> {
    let id = agent_id(path)?;
    let status = state
        .runtime
        .stop(&who.account, &id)
        .await
        .map_err(|e| match e {
            StopError::NotFound => agent_not_found(),
            StopError::Storage(e) => ApiError::internal(&e),
        })?;
    Ok(Json(json!({ "agent_id": id, "status": status.as_str() })))
}

/// GET /api/v1/agents/{id}/logs?limit&cursor
pub async fn logs(
    State(state): State<AppState>,
    Auth(who): Auth,
    path: Result<Path<String>, PathRejection>,
    q: QueryParams,
) -> ApiResult<Json<Value>> {
    let record = owned(&state, &who.account, agent_id(path)?).await?;
    let limit = q.limit(LOGS_DEFAULT, LOGS_MAX)?;
    let after = q
        .get("cursor")
        .map(|c| cursor::decode(LOGS_CURSOR, c))
        .transpose()?
        .unwrap_or(0);
    let records = state.records.clone();
    let (events, more) = blocking(move || records.logs(&record.agent_id, after, limit)).await?;
    let next = more
        .then(|| events.last().map(|e| cursor::encode(LOGS_CURSOR, e.seq)))
        .flatten();
    Ok(Json(
        json!({ "data": events.iter().map(log_view).collect::<Vec<_>>(), "next_cursor": next }),
    ))
}
