//! The signed-in account: who it is, its API keys (create, list, revoke — the same
//! `KeyStore` operations as the operator's CLI), and its usage against its plan.

use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};

use super::{
    super::{
        AppState,
        doc::ErrorEnvelope,
        error::{ApiError, ApiResult},
    },
    auth::ConsoleAuth,
    views::*,
};
use crate::{
    accounts::KeyInfo,
    clock::{iso8601, month_of, now_ms},
};

/// A storage failure as the 500 to answer, its whole chain of causes logged.
fn failed(e: &dyn std::fmt::Display) -> ApiError {
    ApiError::internal(&format!("{e:#}"))
}

/// The account's keys, newest first.
async fn keys_of(state: &AppState, account: &str) -> ApiResult<Vec<KeyInfo>> {
    let mut mine: Vec<KeyInfo> = state
        .keys
        .list()
        .await
        .map_err(|e| failed(&e))?
        .into_iter()
        .filter(|k| k.account == account)
        .collect();
    mine.reverse();
    Ok(mine)
}

/// Who is signed in.
#[utoipa::path(operation_id = "console_me", get, path = "/api/v1/console/me", tag = "console",
    security(("idToken" = [])),
    responses(
        (status = 200, description = "the session", body = Me),
        (status = 401, description = "No ID token (`missing_id_token`), or not a valid one of an existing account: expired, untrusted issuer, another audience, bad signature, malformed, or an API key (`invalid_id_token`, the message says which). Codes: `missing_id_token`, `invalid_id_token`.", body = ErrorEnvelope),
        (status = 500, description = "Unexpected error; the message quotes a request id that the server log carries with the cause. Codes: `internal_error`.", body = ErrorEnvelope),
    ))]
pub async fn me(ConsoleAuth(session): ConsoleAuth) -> Json<Me> {
    Json(Me {
        plan: session.plan.as_str(),
        account: session.account,
        subject: session.subject,
        expires_at: iso8601(session.expires_at.saturating_mul(1_000)),
    })
}

/// The account's API keys, newest first, revoked ones included; never the secrets.
#[utoipa::path(operation_id = "console_list_keys", get, path = "/api/v1/console/keys", tag = "console",
    security(("idToken" = [])),
    responses(
        (status = 200, description = "the keys", body = KeyList),
        (status = 401, description = "No ID token (`missing_id_token`), or not a valid one of an existing account: expired, untrusted issuer, another audience, bad signature, malformed, or an API key (`invalid_id_token`, the message says which). Codes: `missing_id_token`, `invalid_id_token`.", body = ErrorEnvelope),
        (status = 500, description = "Unexpected error; the message quotes a request id that the server log carries with the cause. Codes: `internal_error`.", body = ErrorEnvelope),
    ))]
pub async fn list_keys(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
) -> ApiResult<Json<KeyList>> {
    let data = keys_of(&state, &session.account)
        .await?
        .into_iter()
        .map(|k| KeyEntry {
            key_id: k.id,
            created_at: iso8601(k.created_at),
            revoked_at: k.revoked_at.map(iso8601),
        })
        .collect();
    Ok(Json(KeyList { data }))
}

/// A new API key of the account; its secret is in this answer only. It authenticates on
/// the public API from the next request on.
#[utoipa::path(operation_id = "console_create_key", post, path = "/api/v1/console/keys", tag = "console",
    security(("idToken" = [])),
    responses(
        (status = 201, description = "created; `key` is shown this once", body = CreatedKey),
        (status = 401, description = "No ID token (`missing_id_token`), or not a valid one of an existing account: expired, untrusted issuer, another audience, bad signature, malformed, or an API key (`invalid_id_token`, the message says which). Codes: `missing_id_token`, `invalid_id_token`.", body = ErrorEnvelope),
        (status = 500, description = "Unexpected error; the message quotes a request id that the server log carries with the cause. Codes: `internal_error`.", body = ErrorEnvelope),
    ))]
pub async fn create_key(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
) -> ApiResult<Response> {
    // The account exists (sign-in checked it), so this keeps its plan.
    let (secret, info) = state
        .keys
        .create(&session.account, None)
        .await
        .map_err(|e| failed(&e))?;
    let body = CreatedKey {
        key_id: info.id,
        key: secret,
        created_at: iso8601(info.created_at),
    };
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// Revokes one of the account's keys: it gets 401 from the next request on. Idempotent.
#[utoipa::path(operation_id = "console_revoke_key", delete, path = "/api/v1/console/keys/{key_id}", tag = "console",
    params(("key_id" = String, Path, description = "the key's id (`key_…`)")),
    security(("idToken" = [])),
    responses(
        (status = 200, description = "revoked (or already)", body = RevokedKey),
        (status = 401, description = "No ID token (`missing_id_token`), or not a valid one of an existing account: expired, untrusted issuer, another audience, bad signature, malformed, or an API key (`invalid_id_token`, the message says which). Codes: `missing_id_token`, `invalid_id_token`.", body = ErrorEnvelope),
        (status = 404, description = "The account has no key with that id. Codes: `key_not_found`.", body = ErrorEnvelope),
        (status = 500, description = "Unexpected error; the message quotes a request id that the server log carries with the cause. Codes: `internal_error`.", body = ErrorEnvelope),
    ))]
pub async fn revoke_key(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
    Path(key_id): Path<String>,
) -> ApiResult<Json<RevokedKey>> {
    // Only an id among the account's own keys is revoked: another account's key, or a
    // secret given in place of an id, is not found.
    if !keys_of(&state, &session.account)
        .await?
        .iter()
        .any(|k| k.id == key_id)
    {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "key_not_found",
            "this account has no key with that id",
        ));
    }
    let info = state.keys.revoke(&key_id).await.map_err(|e| failed(&e))?;
    Ok(Json(RevokedKey {
        key_id: info.id,
        revoked_at: iso8601(info.revoked_at.unwrap_or_else(now_ms)),
    }))
}

/// The account's usage this month against its plan.
#[utoipa::path(operation_id = "console_usage", get, path = "/api/v1/console/usage", tag = "console",
    security(("idToken" = [])),
    responses(
        (status = 200, description = "usage against the plan", body = UsageReport),
        (status = 401, description = "No ID token (`missing_id_token`), or not a valid one of an existing account: expired, untrusted issuer, another audience, bad signature, malformed, or an API key (`invalid_id_token`, the message says which). Codes: `missing_id_token`, `invalid_id_token`.", body = ErrorEnvelope),
        (status = 500, description = "Unexpected error; the message quotes a request id that the server log carries with the cause. Codes: `internal_error`.", body = ErrorEnvelope),
    ))]
pub async fn usage(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
) -> ApiResult<Json<UsageReport>> {
    let account = session.account.as_str();
    let limits = state.config.plans.limits(session.plan).clone();
    let now = now_ms();
    let run_ms = state
        .runtime
        .month_run_ms(account, now)
        .await
        .map_err(|e| failed(&e))?;
    let month = state
        .usage
        .month(account, now)
        .await
        .map_err(|e| failed(&e))?;
    let live: u64 = state
        .memory
        .namespaces(account)
        .await?
        .iter()
        .map(|(_, n)| n)
        .sum();
    let mut spawn_windows = Vec::new();
    for key in keys_of(&state, account).await? {
        if key.revoked_at.is_some() {
            continue;
        }
        let (minute, hour) =
            (state.runtime.spawns_in_windows(account, &key.id).await).map_err(|e| failed(&e))?;
        spawn_windows.extend(
            [
                (60, minute, limits.spawns_per_minute),
                (3_600, hour, limits.spawns_per_hour),
            ]
            .map(|(window_secs, used, limit)| SpawnWindow {
                key_id: key.id.clone(),
                window_secs,
                used,
                limit: Some(limit),
            }),
        );
    }
    let running = (state.runtime.concurrent(account).await).map_err(|e| failed(&e))?;
    Ok(Json(UsageReport {
        month: month_of(now),
        plan: session.plan.as_str(),
        agent_hours: HoursUsed {
            used: run_ms as f64 / 3_600_000.0,
            limit: Some(limits.agent_hours_per_month),
        },
        memories: MemoriesUsed {
            live,
            limit: Some(limits.memories),
        },
        concurrent_agents: ConcurrencyUsed {
            running,
            limit: Some(limits.concurrent_agents),
        },
        spawn_windows,
        cpu_seconds: month.cpu_ms as f64 / 1_000.0,
        input_tokens: month.input_tokens,
        output_tokens: month.output_tokens,
    }))
}
