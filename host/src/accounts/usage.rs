//! Metered usage per account and calendar month (UTC): agent run time, which the monthly
//! agent-hour budget is checked against, the CPU time guests used, and the tokens agents'
//! Minds spent.

use std::sync::Arc;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};

use crate::clock::month_of;

/// (account, `YYYY-MM`) → usage (JSON).
const USAGE: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("account_usage");

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
}

/// Usage over the shared database. Blocking.
#[derive(Clone)]
pub struct UsageStore {
    db: Arc<Database>,
}

impl UsageStore {
    /// Opens the table, creating it on first use.
    pub fn new(db: Arc<Database>) -> anyhow::Result<Self> {
        let txn = db.begin_write()?;
        txn.open_table(USAGE)?;
        txn.commit()?;
        Ok(Self { db })
    }

    /// Adds to the month containing `at_ms` (durably).
    pub fn add(&self, account: &str, at_ms: u64, delta: MonthUsage) -> anyhow::Result<()> {
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
            table.insert(
                (account, month.as_str()),
                serde_json::to_vec(&usage)?.as_slice(),
            )?;
        }
        txn.commit()?;
        Ok(())
    }

    /// The usage of the month containing `at_ms`.
    pub fn month(&self, account: &str, at_ms: u64) -> anyhow::Result<MonthUsage> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(USAGE)?;
        Ok(match table.get((account, month_of(at_ms).as_str()))? {
            Some(v) => serde_json::from_slice(v.value())?,
            None => MonthUsage::default(),
        })
    }

    /// Every (account, `YYYY-MM`, usage) recorded, ordered by account then month; for the
    /// operator's `usage` command.
    pub fn all(&self) -> anyhow::Result<Vec<(String, String, MonthUsage)>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_are_separate() {
        let dir = tempfile::tempdir().unwrap();
        let s =
            UsageStore::new(Arc::new(Database::create(dir.path().join("db")).unwrap())).unwrap();
        let nov = 1_795_233_312_005;
        let dec = crate::clock::next_month_start(nov);
        s.add(
            "a",
            nov,
            MonthUsage {
                run_ms: 5,
                input_tokens: 1,
                output_tokens: 2,
                cpu_ms: 3,
            },
        )
        .unwrap();
        s.add(
            "a",
            nov,
            MonthUsage {
                run_ms: 7,
                cpu_ms: 4,
                ..Default::default()
            },
        )
        .unwrap();
        s.add(
            "a",
            dec,
            MonthUsage {
                run_ms: 1,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            s.month("a", nov).unwrap(),
            MonthUsage {
                run_ms: 12,
                input_tokens: 1,
                output_tokens: 2,
                cpu_ms: 7,
            }
        );
        assert_eq!(s.month("a", dec).unwrap().run_ms, 1);
        assert_eq!(s.month("b", nov).unwrap(), MonthUsage::default());
        let rows: Vec<(String, String, u64)> = s
            .all()
            .unwrap()
            .into_iter()
            .map(|(account, month, u)| (account, month, u.run_ms))
            .collect();
        assert_eq!(
            rows,
            [
                ("a".into(), month_of(nov), 12),
                ("a".into(), month_of(dec), 1)
            ]
        );
    }
}
