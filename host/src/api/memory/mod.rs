//! `/api/v1/memory…` handlers (§4.2): read the typed request, call the memory service
//! scoped to the caller's account, render the result.

use axum::{
    Json,
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
};

use super::{
    auth::{AccountAuth, Auth},
    descriptions::{BAD_QUERY, MEMORY_BUSY, MEMORY_NOT_FOUND, bad_fields},
    doc::ErrorEnvelope,
    extract::{Body, Query},
};
use crate::{
    app::{
        AppError, AppResult, AppState,
        memory::{
            self, AddressQuery, ConsolidateBody, ConsolidateResponse, DedupeBody, DedupePair,
            DedupeResponse, DeleteQuery, DeleteResponse, EXPORT_FORMAT, ExportDocument,
            HISTORY_CURSOR, History, HistoryQuery, INSTANT_RULE, ImportBody, ImportResult,
            LIST_CURSOR, LIST_DEFAULT, ListQuery, MemoryList, NamespaceEntry, Namespaces,
            SearchBody, SearchResponse,
        },
        params::whole_text,
        views::{ExportItem, MemoryView, SearchHitView},
    },
    clock::now_ms,
    memory::{
        DEFAULT_NAMESPACE, DEFAULT_THRESHOLD, Deleted, Door, ListQuery as Listing, MemoryDraft,
        MemoryError, Mode, SearchQuery, TimeFilter, optional_namespace, optional_unit,
        validate_key, validate_namespace, validate_tags,
    },
};

/// The (namespace, key) a GET or DELETE names in its query string.
fn address(key: &str, namespace: Option<&str>) -> AppResult<(String, String)> {
    validate_key(key).map_err(|e| AppError::invalid_query("key", e.to_string()))?;
    let namespace = namespace.unwrap_or(DEFAULT_NAMESPACE);
    validate_namespace(namespace)
        .map_err(|e| AppError::invalid_query("namespace", e.to_string()))?;
    Ok((namespace.to_string(), key.to_string()))
}

/// An instant (epoch ms) given as query parameter `name`, if given.
fn instant_param(name: &'static str, given: Option<&str>) -> AppResult<Option<u64>> {
    given
        .map(|text| {
            whole_text(text).ok_or_else(|| {
                AppError::invalid_query(
                    name,
                    format!("{name} must be {INSTANT_RULE}, got {text:?}"),
                )
            })
        })
        .transpose()
}

/// A domain refusal of a query parameter (a time filter) as `invalid_query`.
fn query_error(e: MemoryError) -> AppError {
    match e {
        MemoryError::Invalid { field, message } => AppError::invalid_query(field, message),
        other => other.into(),
    }
}

/// Write a memory; a new version when the key exists with other content.
#[utoipa::path(post, path = "/api/v1/memory", tag = "memory", request_body = MemoryDraft,
    security(("bearerAuth" = [])),
    responses(
        (status = 201, description = "a memory or a new version was created", body = MemoryView),
        (status = 200, description = "identical to the live memory: nothing written", body = MemoryView),
        (status = 400, description = bad_fields(&["invalid_key", "invalid_value", "invalid_namespace", "invalid_tags", "invalid_importance", "invalid_expires_in_days", "invalid_observed_at"]), body = ErrorEnvelope),
        (status = 402, description = "The plan's live-memory quota is full; run POST /api/v1/memory/dedupe first, otherwise delete memories or upgrade the plan. Codes: `memory_quota_exceeded`. Details: QuotaDetails.", body = ErrorEnvelope),
        (status = 503, description = MEMORY_BUSY, body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait"))),
    ))]
pub async fn put(
    State(state): State<AppState>,
    auth: Auth,
    Body(draft): Body<MemoryDraft>,
) -> AppResult<Response> {
    let outcome = memory::put(&state, &auth.0, Door::Rest, draft).await?;
    let status = if outcome.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(MemoryView::from(&outcome.memory))).into_response())
}

/// Read a live memory; counts the access.
#[utoipa::path(operation_id = "get_memory", get, path = "/api/v1/memory", tag = "memory", params(AddressQuery),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "the memory", body = MemoryView),
        (status = 400, description = BAD_QUERY, body = ErrorEnvelope),
        (status = 404, description = "No live memory at that key and namespace (none live at `as_of`, when given). Codes: `not_found`.", body = ErrorEnvelope),
    ))]
pub async fn get(
    State(state): State<AppState>,
    auth: Auth,
    Query(q): Query<AddressQuery>,
) -> AppResult<Json<MemoryView>> {
    let (namespace, key) = address(&q.key, q.namespace.as_deref())?;
    let account = &auth.0.account;
    let memory = match instant_param("as_of", q.as_of.as_deref())? {
        None => state.memory.get(account, &namespace, &key).await?,
        Some(at) => {
            (state.memory.get_at(account, &namespace, &key, at).await).map_err(query_error)?
        }
    };
    Ok(Json(MemoryView::from(&memory)))
}

/// Delete a memory: soft (history kept) or hard (every version removed).
#[utoipa::path(operation_id = "delete_memory", delete, path = "/api/v1/memory", tag = "memory", params(DeleteQuery),
    security(("bearerAuth" = []), ("idToken" = [])),
    responses(
        (status = 200, description = "deleted", body = DeleteResponse),
        (status = 400, description = BAD_QUERY, body = ErrorEnvelope),
        (status = 404, description = MEMORY_NOT_FOUND, body = ErrorEnvelope),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
    Query(q): Query<DeleteQuery>,
) -> AppResult<Json<DeleteResponse>> {
    let (namespace, key) = address(&q.key, q.namespace.as_deref())?;
    let hard = q.hard.unwrap_or_default().0;
    let deleted = (state.memory)
        .delete(&who.account, &namespace, &key, hard)
        .await?;
    let (versions_removed, memory) = match deleted {
        Deleted::Soft(memory) => (0, Some(MemoryView::from(&*memory))),
        Deleted::Hard(n) => (n, None),
    };
    Ok(Json(DeleteResponse {
        deleted: true,
        hard,
        key,
        namespace,
        versions_removed,
        memory,
    }))
}

/// A page of a memory's versions, newest first (paged as the list is).
#[utoipa::path(get, path = "/api/v1/memory/history", tag = "memory", params(HistoryQuery),
    security(("bearerAuth" = []), ("idToken" = [])),
    responses(
        (status = 200, description = "the versions", body = History),
        (status = 400, description = BAD_QUERY, body = ErrorEnvelope),
        (status = 404, description = MEMORY_NOT_FOUND, body = ErrorEnvelope),
    ))]
pub async fn history(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
    Query(q): Query<HistoryQuery>,
) -> AppResult<Json<History>> {
    let (namespace, key) = address(&q.key, q.namespace.as_deref())?;
    let before = HISTORY_CURSOR.position(q.cursor.as_deref())?;
    let limit = q.limit.map_or(LIST_DEFAULT, |l| l.0);
    let page = (state.memory)
        .history(&who.account, &namespace, &key, before, limit)
        .await?;
    // A memory with no version at all is not found; a later page may be empty.
    if page.memories.is_empty() && before.is_none() {
        return Err(MemoryError::NotFound { key, namespace }.into());
    }
    Ok(Json(History {
        data: page.memories.iter().map(MemoryView::from).collect(),
        next_cursor: HISTORY_CURSOR.next(page.next_before),
    }))
}

/// Hybrid, semantic or keyword search over live memories.
#[utoipa::path(post, path = "/api/v1/memory/search", tag = "memory", request_body = SearchBody,
    security(("bearerAuth" = []), ("idToken" = [])),
    responses(
        (status = 200, description = "results, best first", body = SearchResponse),
        (status = 400, description = bad_fields(&["invalid_query", "invalid_namespace", "invalid_tags", "invalid_limit", "invalid_mode", "invalid_min_score", "invalid_as_of", "invalid_observed_after", "invalid_observed_before", "invalid_rerank"]), body = ErrorEnvelope),
        (status = 503, description = MEMORY_BUSY, body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait"))),
    ))]
pub async fn search(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
    Body(body): Body<SearchBody>,
) -> AppResult<Json<SearchResponse>> {
    wasmind_rules::validate_query(&body.query).map_err(MemoryError::from)?;
    let tags = body.tags.unwrap_or_default();
    validate_tags(&tags)?;
    let q = SearchQuery {
        query: body.query,
        namespace: optional_namespace(body.namespace)?,
        tags,
        limit: body.limit.unwrap_or_default().0,
        mode: body.mode.map_or(Ok(Mode::default()), |m| m.parse())?,
        min_score: optional_unit("min_score", body.min_score)?.unwrap_or(0.0),
        rerank: body.rerank.unwrap_or(false),
        time: TimeFilter {
            as_of: body.as_of,
            observed_after: body.observed_after,
            observed_before: body.observed_before,
        },
    };
    let hits = state.memory.search(&who.account, q).await?;
    Ok(Json(SearchResponse {
        results: hits.iter().map(SearchHitView::from).collect(),
    }))
}

/// A page of live memories, newest first.
#[utoipa::path(operation_id = "list_memories", get, path = "/api/v1/memory/list", tag = "memory", params(ListQuery),
    security(("bearerAuth" = []), ("idToken" = [])),
    responses(
        (status = 200, description = "a page", body = MemoryList),
        (status = 400, description = BAD_QUERY, body = ErrorEnvelope),
    ))]
pub async fn list(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
    Query(q): Query<ListQuery>,
) -> AppResult<Json<MemoryList>> {
    if let Some(ns) = &q.namespace {
        validate_namespace(ns).map_err(|e| AppError::invalid_query("namespace", e.to_string()))?;
    }
    let tags: Vec<String> = q
        .tags
        .as_deref()
        .map(|t| {
            t.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    validate_tags(&tags).map_err(|e| AppError::invalid_query("tags", e.to_string()))?;
    let before = LIST_CURSOR.position(q.cursor.as_deref())?;
    let time = TimeFilter {
        as_of: instant_param("as_of", q.as_of.as_deref())?,
        observed_after: instant_param("observed_after", q.observed_after.as_deref())?,
        observed_before: instant_param("observed_before", q.observed_before.as_deref())?,
    };
    let query = Listing {
        namespace: q.namespace,
        tags,
        limit: q.limit.map_or(LIST_DEFAULT, |l| l.0),
        before,
        time,
    };
    let page = state
        .memory
        .list(&who.account, query)
        .await
        .map_err(query_error)?;
    Ok(Json(MemoryList {
        data: page.memories.iter().map(MemoryView::from).collect(),
        next_cursor: LIST_CURSOR.next(page.next_before),
    }))
}

/// Remove near-duplicate memories, keeping the more useful of each pair.
#[utoipa::path(post, path = "/api/v1/memory/dedupe", tag = "memory", request_body = DedupeBody,
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "what was (or, dry, would be) removed", body = DedupeResponse),
        (status = 400, description = bad_fields(&["invalid_namespace", "invalid_threshold", "invalid_dry_run"]), body = ErrorEnvelope),
    ))]
pub async fn dedupe(
    State(state): State<AppState>,
    auth: Auth,
    Body(body): Body<DedupeBody>,
) -> AppResult<Json<DedupeResponse>> {
    let namespace = optional_namespace(body.namespace)?;
    let threshold =
        optional_unit("threshold", body.threshold)?.map_or(DEFAULT_THRESHOLD, |t| t as f32);
    let dry_run = body.dry_run.unwrap_or(false);
    let report = state
        .memory
        .dedupe(&auth.0.account, namespace.as_deref(), threshold, dry_run)
        .await?;
    Ok(Json(DedupeResponse {
        removed: report.removed,
        kept: report.scanned - report.removed,
        dry_run,
        pairs: report
            .pairs
            .into_iter()
            .map(|(p, kept, removed)| DedupePair {
                kept,
                removed,
                similarity: p.similarity,
            })
            .collect(),
    }))
}

/// Summarize clusters of similar memories with the Mind, within the month's Mind tokens;
/// what it spends is metered whatever happens.
#[utoipa::path(post, path = "/api/v1/memory/consolidate", tag = "memory", request_body = ConsolidateBody,
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "what was (or, dry, would be) consolidated", body = ConsolidateResponse),
        (status = 400, description = bad_fields(&["invalid_namespace", "invalid_threshold", "invalid_min_cluster_size", "invalid_dry_run"]), body = ErrorEnvelope),
        (status = 402, description = "The plan's Mind tokens for this month are used (`details.budget` is `tokens`): consolidation asks the Mind for nothing and writes nothing until the month resets (a dry run is still answered). Codes: `monthly_quota_exceeded`. Details: TokenQuotaDetails.", body = ErrorEnvelope),
        (status = 429, description = "A consolidation of this namespace, or of the whole account, is running (`details.reason` = `in_progress`) or one wrote less than the cooldown ago (`cooldown`); other namespaces are consolidated apart; or the account has its plan's `requests_in_flight` requests in flight (`request_limit_reached`). Codes: `rate_limited`, `request_limit_reached`. Details: ConsolidateRateLimitDetails or RequestLimitDetails.", body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait"))),
        (status = 503, description = "The Mind could not summarize a cluster, the embedding provider failed, or the account has as much memory work waiting at this node as its queue holds; nothing was changed. Codes: `mind_unavailable`, `temporarily_unavailable`.", body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait"))),
    ))]
pub async fn consolidate(
    State(state): State<AppState>,
    auth: Auth,
    Body(body): Body<ConsolidateBody>,
) -> AppResult<Json<ConsolidateResponse>> {
    memory::consolidate(&state, &auth.0, body).await.map(Json)
}

/// The account's namespaces and their live-memory counts.
#[utoipa::path(get, path = "/api/v1/memory/namespaces", tag = "memory",
    security(("bearerAuth" = []), ("idToken" = [])),
    responses(
        (status = 200, description = "the namespaces", body = Namespaces),
    ))]
pub async fn namespaces(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
) -> AppResult<Json<Namespaces>> {
    let list = state.memory.namespaces(&who.account).await?;
    Ok(Json(Namespaces {
        namespaces: list
            .into_iter()
            .map(|(namespace, count)| NamespaceEntry { namespace, count })
            .collect(),
    }))
}

/// Every live memory of the account, in a document import takes back.
#[utoipa::path(get, path = "/api/v1/memory/export", tag = "memory",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "the export document", body = ExportDocument),
    ))]
pub async fn export(State(state): State<AppState>, auth: Auth) -> AppResult<Json<ExportDocument>> {
    let memories = state.memory.export(&auth.0.account).await?;
    let now = now_ms();
    Ok(Json(ExportDocument {
        format: EXPORT_FORMAT,
        version: 1,
        exported_at: now,
        count: memories.len(),
        memories: memories.iter().map(|m| ExportItem::new(m, now)).collect(),
    }))
}

/// Write many memories in order; halts at the quota with 402 and what it did.
#[utoipa::path(post, path = "/api/v1/memory/import", tag = "memory", request_body = ImportBody,
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "counts; refused items are in `errors`", body = ImportResult),
        (status = 400, description = bad_fields(&["invalid_memories"]), body = ErrorEnvelope),
        (status = 402, description = "The import halted at the live-memory quota; what it did so far is in `details`. Codes: `memory_quota_exceeded`. Details: ImportQuotaDetails.", body = ErrorEnvelope),
        (status = 413, description = "The body is over 64 MiB. Codes: `payload_too_large`.", body = ErrorEnvelope),
        (status = 503, description = MEMORY_BUSY, body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait"))),
    ))]
pub async fn import(
    State(state): State<AppState>,
    auth: Auth,
    Body(body): Body<ImportBody>,
) -> AppResult<Json<ImportResult>> {
    memory::import(&state, &auth.0, body).await.map(Json)
}
