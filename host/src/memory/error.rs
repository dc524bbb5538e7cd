//! Errors of the memory domain. Validation failures name the field at fault (the API turns
//! them into `invalid_<field>`); storage and index failures are internal and never shown
//! to callers in detail.

use std::time::Duration;

use super::{consolidate::Refusal, embed::EmbedError, index::IndexError};
use crate::{
    accounts::{TokenError, TokensSpent},
    mind::MindError,
    storage::StoreError,
};

/// Everything a memory operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// Bad input; `field` is the request field to fix.
    #[error("{message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
    /// No live memory at (namespace, key).
    #[error("{}", wasmind_rules::not_found(key, namespace))]
    NotFound { key: String, namespace: String },
    /// The account's live-memory pool is full.
    #[error("{}", wasmind_rules::quota_exceeded(*used, *limit))]
    QuotaExceeded { limit: u64, used: u64 },
    #[error("embedding: {0}")]
    Embed(#[from] EmbedError),
    #[error("index: {0}")]
    Index(#[from] IndexError),
    #[error("storage: {0}")]
    Storage(#[from] redb::Error),
    /// The postgres backend's database failed (or refused a write: nothing was written).
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("stored record unreadable: {0}")]
    Corrupt(#[from] serde_json::Error),
    /// An agent's write under a claim on the agent that is no longer its node's (another
    /// node took the agent over): refused, nothing written.
    #[error("this node's claim on agent {0} is stale: the memory write was refused")]
    Stale(String),
    /// A write group could not be committed; nothing of it was written.
    #[error("write failed: {0}")]
    WriteFailed(String),
    /// The account (or this node) has as many rows of bulk work waiting to be written as
    /// the writer's queue holds (`[memory] write_queue_per_account`, `write_queue_total`);
    /// nothing was written; retry shortly.
    #[error(
        "this account has too much waiting to be written at this node; retry after the \
         Retry-After seconds, or send smaller imports"
    )]
    Busy,
    /// A re-embedding step found the data dir not ready for it.
    #[error("re-embedding: {0}")]
    Reembed(String),
    /// The writer thread is gone (the service is shutting down).
    #[error("memory writer stopped")]
    Stopped,
    /// The Mind could not write a consolidation summary; nothing was changed.
    #[error("mind: {0}")]
    Mind(#[from] MindError),
    /// The account's Mind tokens of this month are spent: consolidation asks the Mind for
    /// nothing more, and writes nothing.
    #[error(transparent)]
    TokensSpent(TokensSpent),
    /// The usage ledger, which the month's Mind tokens are read from, failed.
    #[error("usage ledger: {0}")]
    Usage(StoreError),
    /// A consolidation may not start now (one is running, or one just wrote).
    #[error("{}", refused_message(.refusal, .cooldown))]
    ConsolidateRefused {
        refusal: Refusal,
        /// The configured cooldown after a consolidation that wrote.
        cooldown: Duration,
    },
}

fn refused_message(refusal: &Refusal, cooldown: &Duration) -> String {
    match refusal {
        Refusal::InProgress => "a consolidation of this account is already running; \
            retry once it has finished"
            .into(),
        Refusal::CoolingDown { remaining } => format!(
            "consolidation may run once every {} s after it wrote something; retry in {} s \
             (it spends the Mind's tokens: do not call it in a loop)",
            cooldown.as_secs(),
            remaining.as_secs_f64().ceil()
        ),
    }
}

impl MemoryError {
    /// No live memory at (namespace, key).
    pub fn not_found(namespace: &str, key: &str) -> Self {
        MemoryError::NotFound {
            key: key.to_string(),
            namespace: namespace.to_string(),
        }
    }

    /// A validation failure of `field`.
    pub fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        MemoryError::Invalid {
            field,
            message: message.into(),
        }
    }
}

impl From<TokenError> for MemoryError {
    fn from(e: TokenError) -> Self {
        match e {
            TokenError::Spent(spent) => MemoryError::TokensSpent(spent),
            TokenError::Storage(e) => MemoryError::Usage(e),
        }
    }
}

macro_rules! storage_from {
    ($($t:ty),*) => {$(
        impl From<$t> for MemoryError {
            fn from(e: $t) -> Self {
                MemoryError::Storage(e.into())
            }
        }
    )*};
}
storage_from!(
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

/// Shorthand for memory-domain results.
pub type Result<T, E = MemoryError> = std::result::Result<T, E>;
