//! `ApiError`: the one error type of the HTTP API, rendered as the specification's envelope
//! `{ "error": { "code", "message", "details"? } }` with `Content-Type: application/json`.
//!
//! Policy: 4xx messages say what to fix; 5xx messages say nothing internal — the cause goes
//! to the log under a request id that the message quotes. Validation codes follow one
//! rule: a bad request field or query parameter `f` is `invalid_f` (`invalid_key`,
//! `invalid_tags`, …), with `details.field` naming it.

use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::Serialize;
use serde_json::{Value, json};

use super::{
    doc::{ErrorBody, ErrorEnvelope},
    memory::{ConsolidateRateLimitDetails, QuotaDetails},
};
use crate::{
    accounts::AccountError,
    memory::{MemoryError, Refusal, embed::EmbedError},
    storage::StoreError,
};

/// `Retry-After` when a consolidation of the account is already running: its length
/// depends on the Mind, so this is a guess that keeps clients from spinning.
const CONSOLIDATION_BUSY_RETRY_SECS: u64 = 5;

/// `Retry-After` when an account's memory work queue at this node is full: a batch of
/// embeddings or a write group takes well under a second, so a second frees room.
const QUEUE_FULL_RETRY_SECS: u64 = 1;

/// An error response.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: String,
    pub message: String,
    pub details: Option<Value>,
    /// Seconds, sent as `Retry-After`.
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// Any error; prefer the named constructors.
    pub fn new(status: StatusCode, code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status,
            code: code.into(),
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    /// Adds structured context (a typed `details` of the route's documented shape).
    pub fn with_details(mut self, details: impl Serialize) -> Self {
        self.details = Some(serde_json::to_value(details).expect("details serialize"));
        self
    }

    /// 400 `invalid_<field>` for a bad body field.
    pub fn invalid_field(field: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, format!("invalid_{field}"), message)
            .with_details(json!({ "field": field }))
    }

    /// 400 `invalid_body`: not JSON, or not an object.
    pub fn invalid_body(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_body", message)
    }

    /// 400 `invalid_query` for a bad query-string parameter.
    pub fn invalid_query(parameter: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_query", message)
            .with_details(json!({ "parameter": parameter }))
    }

    /// 401 `invalid_api_key`.
    pub fn invalid_api_key(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "invalid_api_key", message)
    }

    /// 500 `internal_error`; `cause` is logged, never sent. The message quotes the
    /// request's `x-request-id` (a fresh id outside a request) so a report leads to the log.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        let request_id = super::front::current_request_id()
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| crate::id::new_id(""));
        tracing::error!(%request_id, %cause, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            format!("internal error (request {request_id}); retry once, then report it"),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let envelope = ErrorEnvelope {
            error: ErrorBody {
                code: self.code,
                message: self.message,
                details: self.details,
            },
        };
        let mut response = (self.status, axum::Json(envelope)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// A store's failure is a 500: the cause goes to the log, never to the client.
impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        ApiError::internal(&e)
    }
}

/// An accounts operation's failure: every one an API route can meet is the store's (a
/// missing key or account is the operator's error, from the CLI), a 500.
impl From<AccountError> for ApiError {
    fn from(e: AccountError) -> Self {
        ApiError::internal(&e)
    }
}

impl From<MemoryError> for ApiError {
    fn from(e: MemoryError) -> Self {
        match e {
            MemoryError::Invalid { field, message } => ApiError::invalid_field(field, message),
            MemoryError::NotFound { .. } => {
                ApiError::new(StatusCode::NOT_FOUND, "not_found", e.to_string())
            }
            MemoryError::QuotaExceeded { limit, used } => ApiError::new(
                StatusCode::PAYMENT_REQUIRED,
                "memory_quota_exceeded",
                e.to_string(),
            )
            .with_details(QuotaDetails { limit, used }),
            MemoryError::Embed(EmbedError::Remote(ref cause)) => {
                tracing::warn!(%cause, "embedding provider failed");
                let mut err = ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "temporarily_unavailable",
                    "the embedding provider failed; retry with backoff (1 s, 2 s, 4 s)",
                );
                err.retry_after = Some(1);
                err
            }
            MemoryError::Busy | MemoryError::Embed(EmbedError::Busy) => {
                let mut err = ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "temporarily_unavailable",
                    e.to_string(),
                );
                err.retry_after = Some(QUEUE_FULL_RETRY_SECS);
                err
            }
            MemoryError::Mind(ref cause) => {
                tracing::warn!(%cause, "the Mind failed a consolidation");
                let mut err = ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "mind_unavailable",
                    "the Mind could not summarize a cluster, so nothing was changed; retry \
                     with backoff (1 s, 2 s, 4 s)",
                );
                err.retry_after = Some(1);
                err
            }
            MemoryError::TokensSpent(spent) => spent.into(),
            MemoryError::ConsolidateRefused { refusal, cooldown } => {
                let (reason, retry_after) = match refusal {
                    Refusal::InProgress => ("in_progress", CONSOLIDATION_BUSY_RETRY_SECS),
                    Refusal::CoolingDown { remaining } => {
                        ("cooldown", (remaining.as_secs_f64().ceil() as u64).max(1))
                    }
                };
                let mut err =
                    ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", e.to_string())
                        .with_details(ConsolidateRateLimitDetails {
                            reason,
                            cooldown_secs: cooldown.as_secs(),
                        });
                err.retry_after = Some(retry_after);
                err
            }
            other => ApiError::internal(&other),
        }
    }
}

/// Handler result.
pub type ApiResult<T> = Result<T, ApiError>;
