//! The console's views of the account's agents, memories and tools: the public routes' own
//! bodies (`*_in`, which take the account a request is scoped to), reached with an ID
//! token instead of an API key. Same requests, same answers, same errors.

use axum::{
    Json,
    extract::{Path, State, rejection::PathRejection},
};

use super::{
    super::{
        agents,
        doc::ErrorEnvelope,
        egress::{EgressList, egress_in},
        extract::{Body, Query},
        memory,
    },
    auth::ConsoleAuth,
};
use crate::app::{
    self, AppResult, AppState,
    agents::{AgentList, AgentView},
    memory::{
        DeleteQuery, DeleteResponse, History, HistoryQuery, MemoryList, Namespaces, SearchBody,
        SearchResponse,
    },
    tools::ToolList,
};

/// The account's agents, newest first (as GET /api/v1/agents).
#[utoipa::path(operation_id = "console_list_agents", get, path = "/api/v1/console/agents", tag = "console",
    params(app::agents::ListQuery),
    security(("idToken" = [])),
    responses(
        (status = 200, description = "a page", body = AgentList),
        (status = 400, description = "A bad query parameter, named in `details.parameter`. Codes: `invalid_query`.", body = ErrorEnvelope),
    ))]
pub async fn list_agents(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
    Query(q): Query<app::agents::ListQuery>,
) -> AppResult<Json<AgentList>> {
    let limit = q.limit.unwrap_or_default().0;
    app::agents::list(&state, &session.account, limit, q.cursor.as_deref())
        .await
        .map(Json)
}

/// One agent (as GET /api/v1/agents/{id}).
#[utoipa::path(operation_id = "console_get_agent", get, path = "/api/v1/console/agents/{id}", tag = "console",
    params(("id" = String, Path, description = "the agent's id (`ag_…`)")),
    security(("idToken" = [])),
    responses(
        (status = 200, description = "the agent", body = AgentView),
        (status = 404, description = "No agent with that id in this account. Codes: `agent_not_found`.", body = ErrorEnvelope),
    ))]
pub async fn get_agent(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
    path: Result<Path<String>, PathRejection>,
) -> AppResult<Json<AgentView>> {
    let id = agents::agent_id(path)?;
    let record = state.runtime.agent(&session.account, &id).await?;
    Ok(Json(AgentView::from(&record)))
}

/// The account's namespaces and their live-memory counts (as GET /api/v1/memory/namespaces).
#[utoipa::path(operation_id = "console_namespaces", get, path = "/api/v1/console/memory/namespaces", tag = "console",
    security(("idToken" = [])),
    responses(
        (status = 200, description = "the namespaces", body = Namespaces),
    ))]
pub async fn namespaces(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
) -> AppResult<Json<Namespaces>> {
    memory::namespaces_in(&state, &session.account)
        .await
        .map(Json)
}

/// A page of live memories, newest first (as GET /api/v1/memory/list).
#[utoipa::path(operation_id = "console_list_memories", get, path = "/api/v1/console/memory/list", tag = "console",
    params(app::memory::ListQuery),
    security(("idToken" = [])),
    responses(
        (status = 200, description = "a page", body = MemoryList),
        (status = 400, description = "A bad query parameter, named in `details.parameter`. Codes: `invalid_query`.", body = ErrorEnvelope),
    ))]
pub async fn list_memories(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
    Query(q): Query<app::memory::ListQuery>,
) -> AppResult<Json<MemoryList>> {
    memory::list_in(&state, &session.account, q).await.map(Json)
}

/// Search with the score breakdown (as POST /api/v1/memory/search).
#[utoipa::path(operation_id = "console_search", post, path = "/api/v1/console/memory/search", tag = "console",
    request_body = SearchBody,
    security(("idToken" = [])),
    responses(
        (status = 200, description = "results, best first", body = SearchResponse),
        (status = 400, description = "Validation failed: a bad field `f` is `invalid_f` with `details.field = \"f\"`; a body that is not a JSON object is `invalid_body`. Codes: `invalid_body`, `invalid_query`, `invalid_namespace`, `invalid_tags`, `invalid_limit`, `invalid_mode`, `invalid_min_score`, `invalid_as_of`, `invalid_observed_after`, `invalid_observed_before`, `invalid_rerank`.", body = ErrorEnvelope),
        (status = 503, description = "The embedding provider failed, or the account has as much memory work waiting at this node as its queue holds (`[embedder] queue_per_account`, `[memory] write_queue_per_account`); retry with backoff (1 s, 2 s, 4 s). Codes: `temporarily_unavailable`.", body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait"))),
    ))]
pub async fn search(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
    Body(body): Body<SearchBody>,
) -> AppResult<Json<SearchResponse>> {
    memory::search_in(&state, &session.account, body)
        .await
        .map(Json)
}

/// A page of a memory's versions, newest first (as GET /api/v1/memory/history).
#[utoipa::path(operation_id = "console_history", get, path = "/api/v1/console/memory/history", tag = "console",
    params(HistoryQuery),
    security(("idToken" = [])),
    responses(
        (status = 200, description = "the versions", body = History),
        (status = 400, description = "A bad query parameter, named in `details.parameter`. Codes: `invalid_query`.", body = ErrorEnvelope),
        (status = 404, description = "No memory at that key and namespace. Codes: `not_found`.", body = ErrorEnvelope),
    ))]
pub async fn history(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
    Query(q): Query<HistoryQuery>,
) -> AppResult<Json<History>> {
    memory::history_in(&state, &session.account, &q)
        .await
        .map(Json)
}

/// Delete a memory, soft or hard (as DELETE /api/v1/memory).
#[utoipa::path(operation_id = "console_delete_memory", delete, path = "/api/v1/console/memory", tag = "console",
    params(DeleteQuery),
    security(("idToken" = [])),
    responses(
        (status = 200, description = "deleted", body = DeleteResponse),
        (status = 400, description = "A bad query parameter, named in `details.parameter`. Codes: `invalid_query`.", body = ErrorEnvelope),
        (status = 404, description = "No live memory at that key and namespace. Codes: `not_found`.", body = ErrorEnvelope),
    ))]
pub async fn delete_memory(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
    Query(q): Query<DeleteQuery>,
) -> AppResult<Json<DeleteResponse>> {
    memory::delete_in(&state, &session.account, q)
        .await
        .map(Json)
}

/// The account's tools, by name (as GET /api/v1/tools).
#[utoipa::path(operation_id = "console_list_tools", get, path = "/api/v1/console/tools", tag = "console",
    security(("idToken" = [])),
    responses(
        (status = 200, description = "every tool of the account", body = ToolList),
    ))]
pub async fn list_tools(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
) -> AppResult<Json<ToolList>> {
    app::tools::list(&state, &session.account).await.map(Json)
}

/// The hosts the account's agents may send HTTP requests to (as GET /api/v1/egress).
#[utoipa::path(operation_id = "console_egress", get, path = "/api/v1/console/egress", tag = "console",
    security(("idToken" = [])),
    responses(
        (status = 200, description = "the account's effective allowlist", body = EgressList),
    ))]
pub async fn egress(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
) -> AppResult<Json<EgressList>> {
    egress_in(&state, &session.account, session.plan)
        .await
        .map(Json)
}
