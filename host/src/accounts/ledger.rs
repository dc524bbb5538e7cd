//! Metered usage per account and calendar month (UTC) — agent run time, which the monthly
//! agent-hour budget is checked against, the CPU time guests used, the tokens agents' Minds
//! spent — behind one trait, as accounts and keys are (`store`): the runtime, the console,
//! the memory API and the operator's `usage` command record and read it without knowing
//! the backend — [`UsageStore`] (`ledger/embedded.rs`) in the data dir's redb, [`PgUsage`]
//! (`ledger/postgres.rs`) in PostgreSQL, where every node adds to the same rows.

mod embedded;
mod postgres;

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub use self::embedded::UsageStore;
pub use self::postgres::{PgUsage, add_usage};
use crate::storage::StoreError;

/// One account's usage in one month.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MonthUsage {
    /// Agent run time, milliseconds.
    pub run_ms: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// CPU time agents used, milliseconds (months recorded before it was metered read 0).
    #[serde(default)]
    pub cpu_ms: u64,
    /// Agents' outgoing HTTP requests, and their bytes (bodies sent and received).
    #[serde(default)]
    pub http_requests: u64,
    #[serde(default)]
    pub http_bytes: u64,
}

impl MonthUsage {
    /// Mind tokens spent, input and output: what `tokens_per_month` counts.
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// Usage per account and calendar month (UTC).
#[async_trait]
pub trait UsageLedger: Send + Sync + 'static {
    /// Adds `delta` to the month containing `at_ms`, durably.
    async fn add(&self, account: &str, at_ms: u64, delta: MonthUsage) -> Result<(), StoreError>;

    /// The usage of the month containing `at_ms`.
    async fn month(&self, account: &str, at_ms: u64) -> Result<MonthUsage, StoreError>;

    /// Every (account, `YYYY-MM`, usage) recorded, ordered by account then month.
    async fn all(&self) -> Result<Vec<(String, String, MonthUsage)>, StoreError>;
}

/// The ledger a server or CLI command runs on; cheap to clone.
pub type Ledger = Arc<dyn UsageLedger>;

#[cfg(test)]
mod tests;
