//! `AppError`: the one refusal of every operation, whichever door it came through — the
//! specification's error (`code`, `message`, `details`) with the kind of refusal it is and,
//! where waiting helps, the seconds to wait. Each door renders it its own way: REST as an
//! HTTP status and the error envelope (`crate::api`), MCP as a tool error (`crate::mcp`), so
//! nothing here knows HTTP.
//!
//! Policy: refusals of the caller's input say what to fix; internal failures say nothing
//! internal — the cause goes to the log under a request id that the message quotes.
//! Validation codes follow one rule: a bad request field or query parameter `f` is
//! `invalid_f` (`invalid_key`, `invalid_tags`, …), with `details.field` naming it.

use serde::Serialize;
use serde_json::{Value, json};

use super::memory::{ConsolidateRateLimitDetails, QuotaDetails};
use crate::{
    accounts::AccountError,
    memory::{MemoryError, Refusal, embed::EmbedError},
    object::FieldError,
    runtime::SpawnStorageError,
    storage::StoreError,
};

/// `Retry-After` when a consolidation of the account is already running: its length
/// depends on the Mind, so this is a guess that keeps clients from spinning.
const CONSOLIDATION_BUSY_RETRY_SECS: u64 = 5;

/// `Retry-After` when an account's memory work queue at this node is full: a batch of
/// embeddings or a write group takes well under a second, so a second frees room.
const QUEUE_FULL_RETRY_SECS: u64 = 1;

/// The kinds of refusal the specification names, one per status it documents (REST maps
/// each to its HTTP status, in `api::error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The request is malformed or a field is invalid (400).
    BadRequest,
    /// No live credential (401).
    Unauthorized,
    /// A plan's quota or budget is spent (402).
    PaymentRequired,
    /// A policy refuses the request (403).
    Forbidden,
    /// No such thing in this account, or no such route (404).
    NotFound,
    /// The route does not take that method (405).
    MethodNotAllowed,
    /// The request conflicts with what is there (409).
    Conflict,
    /// The body is over its bound (413).
    PayloadTooLarge,
    /// The body's declared type is not the route's (415).
    UnsupportedMediaType,
    /// A rate or concurrency bound (429).
    TooManyRequests,
    /// A failure of ours (500).
    Internal,
    /// Not configured on this host (501).
    NotImplemented,
    /// A remote party failed (502).
    BadGateway,
    /// Busy or unavailable for a while (503).
    Unavailable,
}

/// A refusal.
#[derive(Debug, Clone, PartialEq)]
pub struct AppError {
    pub kind: Kind,
    pub code: String,
    pub message: String,
    pub details: Option<Value>,
    /// Seconds to wait before retrying (REST's `Retry-After`).
    pub retry_after: Option<u64>,
}

impl AppError {
    /// Any refusal; prefer the named constructors.
    pub fn new(kind: Kind, code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind,
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

    /// Says how many seconds to wait before retrying.
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// `invalid_<field>` for a bad body field.
    pub fn invalid_field(field: &str, message: impl Into<String>) -> Self {
        Self::new(Kind::BadRequest, format!("invalid_{field}"), message)
            .with_details(json!({ "field": field }))
    }

    /// `invalid_body`: not JSON, or not an object.
    pub fn invalid_body(message: impl Into<String>) -> Self {
        Self::new(Kind::BadRequest, "invalid_body", message)
    }

    /// `invalid_query` for a bad query-string parameter.
    pub fn invalid_query(parameter: &str, message: impl Into<String>) -> Self {
        Self::new(Kind::BadRequest, "invalid_query", message)
            .with_details(json!({ "parameter": parameter }))
    }

    /// `invalid_api_key`.
    pub fn invalid_api_key(message: impl Into<String>) -> Self {
        Self::new(Kind::Unauthorized, "invalid_api_key", message)
    }

    /// `internal_error`; `cause` is logged, never sent. The message quotes the id of the
    /// request being served (a fresh id outside one) so a report leads to the log.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        let request_id = current_request_id()
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| crate::id::new_id(""));
        tracing::error!(%request_id, %cause, "internal error");
        Self::new(
            Kind::Internal,
            "internal_error",
            format!("internal error (request {request_id}); retry once, then report it"),
        )
    }
}

tokio::task_local! {
    /// The id of the request the current task serves (set by the front door), so an
    /// internal error's message can quote the same id as its log line and its response.
    pub static CURRENT_REQUEST: String;
}

/// The id of the request being served, if this task serves one.
fn current_request_id() -> Option<String> {
    CURRENT_REQUEST.try_with(Clone::clone).ok()
}

/// A store's failure is internal: the cause goes to the log, never to the client.
impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        AppError::internal(&e)
    }
}

/// An accounts operation's failure: every one an operation can meet is the store's (a
/// missing key or account is the operator's error, from the CLI), internal.
impl From<AccountError> for AppError {
    fn from(e: AccountError) -> Self {
        AppError::internal(&e)
    }
}

/// A read of the runtime's figures (run time, spawns, running agents) that its store failed:
/// internal, like any store's failure.
impl From<SpawnStorageError> for AppError {
    fn from(e: SpawnStorageError) -> Self {
        AppError::internal(&e)
    }
}

/// A field of a request object that does not read: `invalid_<field>`.
impl From<FieldError> for AppError {
    fn from(e: FieldError) -> Self {
        AppError::invalid_field(e.field, e.message())
    }
}

impl From<MemoryError> for AppError {
    fn from(e: MemoryError) -> Self {
        match e {
            MemoryError::Invalid { field, message } => AppError::invalid_field(field, message),
            MemoryError::NotFound { .. } => {
                AppError::new(Kind::NotFound, "not_found", e.to_string())
            }
            MemoryError::QuotaExceeded { limit, used } => AppError::new(
                Kind::PaymentRequired,
                "memory_quota_exceeded",
                e.to_string(),
            )
            .with_details(QuotaDetails { limit, used }),
            MemoryError::Embed(EmbedError::Remote(ref cause)) => {
                tracing::warn!(%cause, "embedding provider failed");
                AppError::new(
                    Kind::Unavailable,
                    "temporarily_unavailable",
                    "the embedding provider failed; retry with backoff (1 s, 2 s, 4 s)",
                )
                .retry_after(1)
            }
            MemoryError::Busy | MemoryError::Embed(EmbedError::Busy) => {
                AppError::new(Kind::Unavailable, "temporarily_unavailable", e.to_string())
                    .retry_after(QUEUE_FULL_RETRY_SECS)
            }
            MemoryError::Mind(ref cause) => {
                tracing::warn!(%cause, "the Mind failed a consolidation");
                AppError::new(
                    Kind::Unavailable,
                    "mind_unavailable",
                    "the Mind could not summarize a cluster, so nothing was changed; retry \
                     with backoff (1 s, 2 s, 4 s)",
                )
                .retry_after(1)
            }
            MemoryError::TokensSpent(spent) => spent.into(),
            MemoryError::ConsolidateRefused { refusal, cooldown } => {
                let (reason, retry_after) = match refusal {
                    Refusal::InProgress => ("in_progress", CONSOLIDATION_BUSY_RETRY_SECS),
                    Refusal::CoolingDown { remaining } => {
                        ("cooldown", (remaining.as_secs_f64().ceil() as u64).max(1))
                    }
                };
                AppError::new(Kind::TooManyRequests, "rate_limited", e.to_string())
                    .with_details(ConsolidateRateLimitDetails {
                        reason,
                        cooldown_secs: cooldown.as_secs(),
                    })
                    .retry_after(retry_after)
            }
            other => AppError::internal(&other),
        }
    }
}

/// An operation's result.
pub type AppResult<T> = Result<T, AppError>;
