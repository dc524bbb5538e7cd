//! `/api/v1/agents/components…` handlers: a tenant uploads its own agent components (raw
//! bytes, `application/wasm`), lists, reads and deletes them; a spawn names one in `agent`.
//! Every route sees only the caller's account: another account's component is 404.

use axum::{
    Json,
    body::Body as RawBody,
    extract::{Path, State, rejection::PathRejection},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
};
use futures_util::StreamExt;

use super::super::{
    auth::Auth,
    descriptions::{BAD_QUERY, COMPONENT_NOT_FOUND},
    doc::ErrorEnvelope,
    extract::Query,
};
use crate::app::{
    AppError, AppResult, AppState, Kind,
    agents::{
        components::{
            COMPONENTS_CURSOR, ComponentList, ComponentListQuery, ComponentView, UploadQuery,
            WasmBody, component_not_found,
        },
        upload as components,
    },
};

/// The one content type an upload may declare (none is accepted too).
const WASM: &str = "application/wasm";

/// A component id of a path; a path that does not parse names no component.
fn path_id(path: Result<Path<String>, PathRejection>) -> AppResult<String> {
    path.map(|Path(id)| id).map_err(|_| component_not_found())
}

fn too_large(max: u64) -> AppError {
    AppError::new(
        Kind::PayloadTooLarge,
        "payload_too_large",
        format!("the component is over this plan's {max} bytes (component_max_bytes)"),
    )
}

/// The body, read up to `max` bytes: past that, 413 without reading on.
async fn read_body(headers: &HeaderMap, body: RawBody, max: u64) -> AppResult<Vec<u8>> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max) {
        return Err(too_large(max));
    }
    let mut bytes = Vec::with_capacity(declared.unwrap_or(0) as usize);
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|e| AppError::invalid_body(format!("could not read the request body: {e}")))?;
        if (bytes.len() + chunk.len()) as u64 > max {
            return Err(too_large(max));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Upload an agent component: validated (a component whose imports the sandbox offers and
/// which exports `run`) and precompiled before it is stored, so a spawn never compiles.
#[utoipa::path(operation_id = "upload_component", post, path = "/api/v1/agents/components",
    tag = "agents", params(UploadQuery),
    request_body(content = inline(WasmBody), content_type = "application/wasm"),
    security(("bearerAuth" = [])),
    responses(
        (status = 201, description = "stored", body = ComponentView),
        (status = 400, description = "A bad name or version (`invalid_name`, `invalid_version`, with `details.parameter`), a malformed query string or a parameter given twice (`invalid_query`), or bytes that cannot run as an agent: not a component (a core module, garbage), not compilable, an import the sandbox does not offer, no `run` export of the agent world's type — the message names the import or export (`invalid_component`). Codes: `invalid_name`, `invalid_version`, `invalid_query`, `invalid_component`.", body = ErrorEnvelope),
        (status = 402, description = "The account has its plan's `components`; `details.limit` says how many. Codes: `component_quota_exceeded`.", body = ErrorEnvelope),
        (status = 409, description = "The account has a component of that name and version. Codes: `component_exists`.", body = ErrorEnvelope),
        (status = 413, description = "The body is over the plan's `component_max_bytes`. Codes: `payload_too_large`.", body = ErrorEnvelope),
        (status = 415, description = "A Content-Type other than `application/wasm` (none is accepted). Codes: `unsupported_media_type`.", body = ErrorEnvelope),
        (status = 429, description = "The account uploaded its plan's `component_uploads_per_hour` in the last hour (on this node; `rate_limited`), or has its plan's `requests_in_flight` requests in flight (`request_limit_reached`); wait Retry-After seconds. Codes: `rate_limited`, `request_limit_reached`. Details: UploadRateDetails or RequestLimitDetails.", body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait"))),
    ))]
pub async fn upload(
    State(state): State<AppState>,
    Auth(who): Auth,
    query: Result<Query<UploadQuery>, AppError>,
    headers: HeaderMap,
    body: RawBody,
) -> AppResult<Response> {
    // The body is read first, so that each refusal below is sent after it and reaches a
    // client still sending (a response before the body is read closes the connection).
    let bytes = read_body(&headers, body, components::max_bytes(&state, &who)).await?;
    if let Some(given) = headers.get(header::CONTENT_TYPE) {
        let essence = given.to_str().unwrap_or("").split(';').next().unwrap_or("");
        if !essence.trim().eq_ignore_ascii_case(WASM) {
            return Err(AppError::new(
                Kind::UnsupportedMediaType,
                "unsupported_media_type",
                format!("send the component's bytes as Content-Type: {WASM}"),
            ));
        }
    }
    let Query(q) = query?;
    let view = components::upload(&state, &who, q, bytes).await?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

/// The account's components, newest first.
#[utoipa::path(operation_id = "list_components", get, path = "/api/v1/agents/components",
    tag = "agents", params(ComponentListQuery),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "a page", body = ComponentList),
        (status = 400, description = BAD_QUERY, body = ErrorEnvelope),
    ))]
pub async fn list(
    State(state): State<AppState>,
    Auth(who): Auth,
    Query(q): Query<ComponentListQuery>,
) -> AppResult<Json<ComponentList>> {
    let limit = q.limit.unwrap_or_default().0;
    let before = COMPONENTS_CURSOR.position(q.cursor.as_deref())?;
    let (page, next) = state
        .runtime
        .components(&who.account, before, limit)
        .await?;
    Ok(Json(ComponentList {
        data: page.into_iter().map(ComponentView::from).collect(),
        next_cursor: COMPONENTS_CURSOR.next(next),
    }))
}

/// One component.
#[utoipa::path(operation_id = "get_component", get, path = "/api/v1/agents/components/{id}",
    tag = "agents",
    params(("id" = String, Path, description = "the component's id (`cmp_…`)")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "the component", body = ComponentView),
        (status = 404, description = COMPONENT_NOT_FOUND, body = ErrorEnvelope),
    ))]
pub async fn get(
    State(state): State<AppState>,
    Auth(who): Auth,
    path: Result<Path<String>, PathRejection>,
) -> AppResult<Json<ComponentView>> {
    let id = path_id(path)?;
    state
        .runtime
        .component(&who.account, &id)
        .await?
        .map(|r| Json(ComponentView::from(r)))
        .ok_or_else(component_not_found)
}

/// Delete a component; agents already running it run on to their end.
#[utoipa::path(operation_id = "delete_component", delete,
    path = "/api/v1/agents/components/{id}", tag = "agents",
    params(("id" = String, Path, description = "the component's id (`cmp_…`)")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "deleted; the component as it was", body = ComponentView),
        (status = 404, description = COMPONENT_NOT_FOUND, body = ErrorEnvelope),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    Auth(who): Auth,
    path: Result<Path<String>, PathRejection>,
) -> AppResult<Json<ComponentView>> {
    let id = path_id(path)?;
    state
        .runtime
        .delete_component(&who.account, &id)
        .await?
        .map(|r| Json(ComponentView::from(r)))
        .ok_or_else(component_not_found)
}
