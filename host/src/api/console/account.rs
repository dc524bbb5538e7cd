//! The signed-in account: who it is, its API keys (create within the plan's `keys`, list,
//! revoke — per-account queries of the `AccountStore` the operator's CLI uses too), and its
//! usage against its plan.

use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};

use super::{super::doc::ErrorEnvelope, auth::ConsoleAuth, views::*};
use crate::{
    accounts::{CreateKeyError, Places},
    app::{
        AppError, AppResult, AppState, Kind,
        usage::{self, UsageReport},
    },
    clock::{iso8601, now_ms},
};

/// The account's keys, newest first.
/// A key not created, as the answer: the plan's bound is 402 `key_quota_exceeded`, with
/// `Retry-After` when a revoked key's place frees by waiting.
impl From<CreateKeyError> for AppError {
    fn from(e: CreateKeyError) -> Self {
        match e {
            CreateKeyError::KeyLimit {
                plan, places, max, ..
            } => {
                let Places {
                    active,
                    held,
                    frees_at,
                } = places;
                let mut e = AppError::new(
                    Kind::PaymentRequired,
                    "key_quota_exceeded",
                    format!(
                        "this account's keys take the {plan} plan's {max} places: {active} active \
                         and {held} revoked within the last hour (a revoked key keeps its place for \
                         an hour, while its spawn-rate windows last); wait until a place frees, \
                         revoke a key you no longer need, or upgrade the plan"
                    ),
                )
                .with_details(KeyQuotaDetails {
                    plan: plan.as_str(),
                    active_keys: active,
                    revoked_keys: held,
                    max_keys: max,
                });
                e.retry_after =
                    frees_at.map(|at| at.saturating_sub(now_ms()).div_ceil(1_000).max(1));
                e
            }
            other => AppError::internal(&other),
        }
    }
}

/// Who is signed in.
#[utoipa::path(operation_id = "console_me", get, path = "/api/v1/console/me", tag = "console",
    security(("idToken" = [])),
    responses(
        (status = 200, description = "the session", body = Me),
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
    ))]
pub async fn list_keys(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
) -> AppResult<Json<KeyList>> {
    let data = (state.keys.keys(&session.account))
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
        (status = 402, description = "The account's keys take its plan's `keys` places: the active ones, and those revoked within the last hour (a revoked key keeps its place for an hour, while its spawn-rate windows last, so making keys cannot raise the account's spawn rate). `Retry-After` says when a revoked key's place frees, when one is held. Codes: `key_quota_exceeded`. Details: KeyQuotaDetails.", body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds until a revoked key's place frees (absent when every place is an active key)"))),
    ))]
pub async fn create_key(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
) -> AppResult<Response> {
    // The account exists (sign-in checked it), so this keeps its plan.
    let (secret, info) = state
        .keys
        .create(&session.account, None, &state.config.plans)
        .await?;
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
        (status = 404, description = "The account has no key with that id. Codes: `key_not_found`.", body = ErrorEnvelope),
    ))]
pub async fn revoke_key(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
    Path(key_id): Path<String>,
) -> AppResult<Json<RevokedKey>> {
    // Only an id among the account's own keys is revoked: another account's key, or a
    // secret given in place of an id, is not found.
    let info = (state.keys.revoke_own(&session.account, &key_id).await)?.ok_or_else(|| {
        AppError::new(
            Kind::NotFound,
            "key_not_found",
            "this account has no key with that id",
        )
    })?;
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
    ))]
pub async fn usage(
    State(state): State<AppState>,
    ConsoleAuth(session): ConsoleAuth,
) -> AppResult<Json<UsageReport>> {
    Ok(Json(usage::report(&state, &session.into()).await?))
}
