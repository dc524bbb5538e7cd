//! `/api/v1/memory…` handlers (§4.2): parse and check the request, call the memory
//! service scoped to the caller's account, render the result.

use axum::{
    Json,
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde_json::{Map, Value, json};

use super::{
    AppState,
    auth::Auth,
    cursor,
    error::{ApiError, ApiResult},
    extract::{JsonObject, QueryParams},
    fields::Fields,
    views,
};
use crate::{
    accounts::MonthUsage,
    blocking::run_blocking,
    clock::now_ms,
    memory::{
        ConsolidateQuery, DEFAULT_CLUSTER_THRESHOLD, DEFAULT_LIMIT, DEFAULT_MIN_CLUSTER_SIZE,
        DEFAULT_NAMESPACE, DEFAULT_THRESHOLD, Deleted, ImportItem, ListQuery, MAX_LIMIT,
        MemoryError, Mode, PutInput, Rejected, SearchQuery, Source, validate_key,
        validate_namespace, validate_tags,
    },
    mind::Usage,
};

/// List page size: default and maximum (§8 list limits).
const LIST_DEFAULT: usize = 50;
const LIST_MAX: usize = 200;
/// Cursor kind of memory list pages.
const LIST_CURSOR: &str = "m1";
/// Most items one import may carry.
const IMPORT_MAX_ITEMS: usize = 10_000;

fn quota(state: &AppState, auth: &Auth) -> u64 {
    state.config.plans.limits(auth.0.plan).memories
}

/// Reads one memory's write fields from a JSON object.
fn put_input(account: &str, obj: &Map<String, Value>) -> ApiResult<PutInput> {
    Ok(PutInput::from_json(account, obj, Source::Manual)?)
}

/// The optional `namespace` of a body, validated.
fn namespace_field(f: &Fields) -> ApiResult<Option<String>> {
    let namespace = f.opt_string("namespace")?;
    if let Some(ns) = &namespace {
        validate_namespace(ns)?;
    }
    Ok(namespace)
}

/// The optional similarity `threshold` of a body (a cosine, 0 to 1).
fn threshold_field(f: &Fields, default: f32) -> ApiResult<f32> {
    Ok(f.number_in("threshold", 0.0, 1.0)?
        .map_or(default, |t| t as f32))
}

/// The (namespace, key) a GET or DELETE names in its query string.
fn address(q: &QueryParams) -> ApiResult<(String, String)> {
    let key = q.required("key")?;
    validate_key(key).map_err(|e| ApiError::invalid_query("key", e.to_string()))?;
    let namespace = q.get("namespace").unwrap_or(DEFAULT_NAMESPACE);
    validate_namespace(namespace)
        .map_err(|e| ApiError::invalid_query("namespace", e.to_string()))?;
    Ok((namespace.to_string(), key.to_string()))
}

/// POST /api/v1/memory — 201 when a memory or version was created, 200 when identical.
pub async fn put(
    State(state): State<AppState>,
    auth: Auth,
    JsonObject(body): JsonObject,
) -> ApiResult<Response> {
    let input = put_input(&auth.0.account, &body)?;
    let outcome = state.memory.put(input, quota(&state, &auth)).await?;
    let status = if outcome.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(views::memory(&outcome.memory))).into_response())
}

/// GET /api/v1/memory?key&namespace — counts the access.
pub async fn get(
    State(state): State<AppState>,
    auth: Auth,
    q: QueryParams,
) -> ApiResult<Json<Value>> {
    let (namespace, key) = address(&q)?;
    let memory = state.memory.get(&auth.0.account, &namespace, &key).await?;
    Ok(Json(views::memory(&memory)))
}

/// DELETE /api/v1/memory?key&namespace&hard
pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    q: QueryParams,
) -> ApiResult<Json<Value>> {
    let (namespace, key) = address(&q)?;
    let hard = q.bool("hard", false)?;
    let body = match state
        .memory
        .delete(&auth.0.account, &namespace, &key, hard)
        .await?
    {
        Deleted::Soft(memory) => json!({
            "deleted": true, "hard": false, "key": key, "namespace": namespace,
            "versions_removed": 0, "memory": views::memory(&memory),
        }),
        Deleted::Hard(n) => json!({
            "deleted": true, "hard": true, "key": key, "namespace": namespace,
            "versions_removed": n,
        }),
    };
    Ok(Json(body))
}

/// GET /api/v1/memory/history?key&namespace — every version, newest first.
pub async fn history(
    State(state): State<AppState>,
    auth: Auth,
    q: QueryParams,
) -> ApiResult<Json<Value>> {
    let (namespace, key) = address(&q)?;
    let versions = state.memory.history(&auth.0.account, &namespace, &key)?;
    if versions.is_empty() {
        return Err(MemoryError::NotFound { key, namespace }.into());
    }
    Ok(Json(
        json!({ "data": versions.iter().map(views::memory).collect::<Vec<_>>() }),
    ))
}

/// POST /api/v1/memory/search
pub async fn search(
    State(state): State<AppState>,
    auth: Auth,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<Value>> {
    let f = Fields(&body);
    let query = f.string("query")?;
    if query.trim().is_empty() {
        return Err(ApiError::invalid_field("query", "query must not be empty"));
    }
    let namespace = namespace_field(&f)?;
    let tags = f.strings("tags")?;
    validate_tags(&tags)?;
    let q = SearchQuery {
        query,
        namespace,
        tags,
        limit: f.limit("limit", DEFAULT_LIMIT, MAX_LIMIT)?,
        mode: f
            .opt_string("mode")?
            .map_or(Ok(Mode::default()), |m| m.parse())?,
        min_score: f.number_in("min_score", 0.0, 1.0)?.unwrap_or(0.0),
    };
    let hits = state.memory.search(&auth.0.account, q).await?;
    Ok(Json(
        json!({ "results": hits.iter().map(views::search_hit).collect::<Vec<_>>() }),
    ))
}

/// GET /api/v1/memory/list?namespace&tags&limit&cursor
pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    q: QueryParams,
) -> ApiResult<Json<Value>> {
    let namespace = q.get("namespace").map(str::to_string);
    if let Some(ns) = &namespace {
        validate_namespace(ns).map_err(|e| ApiError::invalid_query("namespace", e.to_string()))?;
    }
    let tags: Vec<String> = q
        .get("tags")
        .map(|t| {
            t.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    validate_tags(&tags).map_err(|e| ApiError::invalid_query("tags", e.to_string()))?;
    let before = q
        .get("cursor")
        .map(|c| cursor::decode(LIST_CURSOR, c))
        .transpose()?;
    let query = ListQuery {
        namespace,
        tags,
        limit: q.limit(LIST_DEFAULT, LIST_MAX)?,
        before,
    };
    let page = state.memory.list(&auth.0.account, query).await?;
    Ok(Json(json!({
        "data": page.memories.iter().map(views::memory).collect::<Vec<_>>(),
        "next_cursor": page.next_before.map(|n| cursor::encode(LIST_CURSOR, n)),
    })))
}

/// POST /api/v1/memory/dedupe
pub async fn dedupe(
    State(state): State<AppState>,
    auth: Auth,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<Value>> {
    let f = Fields(&body);
    let namespace = namespace_field(&f)?;
    let threshold = threshold_field(&f, DEFAULT_THRESHOLD)?;
    let dry_run = f.bool("dry_run", false)?;
    let report = state
        .memory
        .dedupe(&auth.0.account, namespace.as_deref(), threshold, dry_run)
        .await?;
    Ok(Json(json!({
        "removed": report.removed,
        "kept": report.scanned - report.removed,
        "dry_run": dry_run,
        "pairs": report.pairs.iter().map(|(p, kept, removed)| json!({
            "kept": kept, "removed": removed, "similarity": p.similarity,
        })).collect::<Vec<_>>(),
    })))
}

/// POST /api/v1/memory/consolidate — the Mind's tokens are metered whatever happens.
pub async fn consolidate(
    State(state): State<AppState>,
    auth: Auth,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<Value>> {
    let f = Fields(&body);
    let namespace = namespace_field(&f)?;
    let q = ConsolidateQuery {
        namespace,
        threshold: threshold_field(&f, DEFAULT_CLUSTER_THRESHOLD)?,
        min_cluster_size: f
            .whole_at_least("min_cluster_size", 2)?
            .map_or(DEFAULT_MIN_CLUSTER_SIZE, |n| n as usize),
        dry_run: f.bool("dry_run", false)?,
    };
    let account = auth.0.account.clone();
    let (spent, result) = state
        .memory
        .consolidate(&account, &q, state.mind.as_ref())
        .await;
    if spent != Usage::default() {
        let usage = state.usage.clone();
        let delta = MonthUsage {
            run_ms: 0,
            input_tokens: spent.input_tokens.into(),
            output_tokens: spent.output_tokens.into(),
        };
        if let Err(e) = run_blocking(move || usage.add(&account, now_ms(), delta)).await {
            tracing::error!(error = %e, "recording consolidation usage failed");
        }
    }
    let report = result?;
    Ok(Json(json!({
        "dry_run": q.dry_run,
        "clusters": report.clusters.len(),
        "skipped": report.skipped,
        "consolidated": report.clusters.iter().map(|c| json!({
            "memory_id": c.summary.as_ref().map(|(id, _)| id),
            "key": c.summary.as_ref().map(|(_, key)| key),
            "namespace": c.namespace,
            "replaced": c.replaced,
        })).collect::<Vec<_>>(),
        "usage": { "input_tokens": spent.input_tokens, "output_tokens": spent.output_tokens },
    })))
}

/// GET /api/v1/memory/namespaces
pub async fn namespaces(State(state): State<AppState>, auth: Auth) -> ApiResult<Json<Value>> {
    let list = state.memory.namespaces(&auth.0.account).await?;
    Ok(Json(json!({
        "namespaces": list.iter().map(|(ns, count)| json!({ "namespace": ns, "count": count })).collect::<Vec<_>>(),
    })))
}

/// GET /api/v1/memory/export
pub async fn export(State(state): State<AppState>, auth: Auth) -> ApiResult<Json<Value>> {
    let memories = state.memory.export(&auth.0.account).await?;
    let now = now_ms();
    Ok(Json(json!({
        "format": "wasmind.memory.export",
        "version": 1,
        "exported_at": now,
        "count": memories.len(),
        "memories": memories.iter().map(|m| views::export_item(m, now)).collect::<Vec<_>>(),
    })))
}

/// POST /api/v1/memory/import — 200 with counts, or 402 when it halted at the quota.
pub async fn import(
    State(state): State<AppState>,
    auth: Auth,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<Value>> {
    let Some(Value::Array(raw)) = body.get("memories") else {
        return Err(ApiError::invalid_field(
            "memories",
            "memories must be an array of { key, value, namespace?, tags?, importance? }",
        ));
    };
    if raw.len() > IMPORT_MAX_ITEMS {
        return Err(ApiError::invalid_field(
            "memories",
            format!(
                "{} memories given; one import takes at most {IMPORT_MAX_ITEMS}",
                raw.len()
            ),
        ));
    }
    let items = raw
        .iter()
        .enumerate()
        .map(|(index, item)| ImportItem {
            index,
            key: item.get("key").and_then(Value::as_str).map(str::to_string),
            input: match item {
                Value::Object(obj) => put_input(&auth.0.account, obj).map_err(|e| Rejected {
                    code: e.code,
                    message: e.message,
                }),
                _ => Err(Rejected {
                    code: "invalid_memory".into(),
                    message: "each memory must be a JSON object".into(),
                }),
            },
        })
        .collect();
    let report = state
        .memory
        .import(&auth.0.account, items, quota(&state, &auth))
        .await?;
    let errors: Vec<Value> = report
        .errors
        .iter()
        .map(|e| json!({ "index": e.index, "key": e.key, "code": e.rejected.code, "message": e.rejected.message }))
        .collect();
    let counts = json!({ "imported": report.imported, "failed": report.failed, "errors": errors });
    match report.halted {
        None => Ok(Json(counts)),
        Some((limit, used)) => {
            let mut details = counts;
            details["limit"] = json!(limit);
            details["used"] = json!(used);
            Err(ApiError::new(
                StatusCode::PAYMENT_REQUIRED,
                "memory_quota_exceeded",
                format!(
                    "memory quota exceeded after importing {} item(s): {used} of {limit} live memories in use; \
                     run POST /api/v1/memory/dedupe first, otherwise delete memories or upgrade the plan",
                    report.imported
                ),
            )
            .with_details(details))
        }
    }
}
