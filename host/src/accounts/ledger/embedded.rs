//! Metered usage in the data dir's redb (the embedded backend): one row per account and
//! calendar month (UTC).

use std::sync::Arc;

use async_trait::async_trait;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use super::{MonthUsage, UsageLedger};
use crate::{blocking::with_store, clock::month_of, storage::StoreError};

/// (account, `YYYY-MM`) → usage (JSON).
const USAGE: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("account_usage");

/// Usage in the data dir's redb (the embedded backend). Its methods block on redb; the
/// [`UsageLedger`] impl runs them off the async workers.
#[derive(Clone)]
pub struct UsageStore {
    db: Arc<Database>,
}

impl UsageStore {
    /// Opens the table, creating it on first use.
    pub fn new(db: Arc<Database>) -> Result<Self, StoreError> {
        let txn = db.begin_write()?;
        txn.open_table(USAGE)?;
        txn.commit()?;
        Ok(Self { db })
    }

    /// Adds to the month containing `at_ms` (durably).
    pub fn add(&self, account: &str, at_ms: u64, delta: MonthUsage) -> Result<(), StoreError> {
        let month = month_of(at_ms);
        let txn = self.db.begin_write()?;
        {
            let mut table = txn.open_table(USAGE)?;
            let mut usage: MonthUsage = match table.get((account, month.as_str()))? {
                Some(v) => serde_json::from_slice(v.value())?,
                None => MonthUsage::default(),
            };
            usage.run_ms += delta.run_ms;
            usage.input_tokens += delta.input_tokens;
            usage.output_tokens += delta.output_tokens;
            usage.cpu_ms += delta.cpu_ms;
            usage.http_requests += delta.http_requests;
            usage.http_bytes += delta.http_bytes;
            table.insert(
                (account, month.as_str()),
                serde_json::to_vec(&usage)?.as_slice(),
            )?;
        }
        txn.commit()?;
        Ok(())
    }

    /// The usage of the month containing `at_ms`.
    pub fn month(&self, account: &str, at_ms: u64) -> Result<MonthUsage, StoreError> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(USAGE)?;
        Ok(match table.get((account, month_of(at_ms).as_str()))? {
            Some(v) => serde_json::from_slice(v.value())?,
            None => MonthUsage::default(),
        })
    }

    /// Every (account, `YYYY-MM`, usage) recorded, ordered by account then month; for the
    /// operator's `usage` command.
    pub fn all(&self) -> Result<Vec<(String, String, MonthUsage)>, StoreError> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(USAGE)?;
        let mut rows = Vec::new();
        for entry in table.iter()? {
            let (key, value) = entry?;
            let (account, month) = key.value();
            rows.push((
                account.to_owned(),
                month.to_owned(),
                serde_json::from_slice(value.value())?,
            ));
        }
        Ok(rows)
    }
}

#[async_trait]
impl UsageLedger for UsageStore {
    async fn add(&self, account: &str, at_ms: u64, delta: MonthUsage) -> Result<(), StoreError> {
        let account = account.to_owned();
        with_store(self, move |s| s.add(&account, at_ms, delta)).await
    }

    async fn month(&self, account: &str, at_ms: u64) -> Result<MonthUsage, StoreError> {
        let account = account.to_owned();
        with_store(self, move |s| s.month(&account, at_ms)).await
    }

    async fn all(&self) -> Result<Vec<(String, String, MonthUsage)>, StoreError> {
        with_store(self, UsageStore::all).await
    }
}
