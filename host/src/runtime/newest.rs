//! Newest-first pages of an account's records, for every kind stored the same way, on
//! either backend — the one pager of the agent records and the components: in redb, records
//! as JSON by id and the account's ids by list position `(account, seq)` ([`page`]); in
//! postgres, a table's rows with the record's JSON and its list position ([`pg_page`]).

use redb::{ReadTransaction, StorageError, TableDefinition, TableError};
use serde::de::DeserializeOwned;
use sqlx::{AssertSqlSafe, PgPool};

use crate::storage::{StoreError, bigint};

/// Up to `limit` records of `account` newest first, below list position `before`; also the
/// position to continue from when more remain. `seq` reads a record's list position.
pub fn page<T, E>(
    txn: &ReadTransaction,
    records: TableDefinition<&str, &[u8]>,
    by_account: TableDefinition<(&str, u64), &str>,
    (account, before, limit): (&str, Option<u64>, usize),
    seq: impl Fn(&T) -> u64,
) -> Result<(Vec<T>, Option<u64>), E>
where
    T: DeserializeOwned,
    E: From<TableError> + From<StorageError> + From<serde_json::Error>,
{
    let index = txn.open_table(by_account)?;
    let records = txn.open_table(records)?;
    let mut out = Vec::new();
    for entry in index
        .range((account, 0)..(account, before.unwrap_or(u64::MAX)))?
        .rev()
    {
        let (_, id) = entry?;
        if out.len() == limit {
            let next = out.last().map(&seq);
            return Ok((out, next));
        }
        if let Some(bytes) = records.get(id.value())? {
            out.push(serde_json::from_slice(bytes.value())?);
        }
    }
    Ok((out, None))
}

/// The same page from postgres: the rows of `account` in `table` (a table of this code's,
/// with the record as JSON in `record` and its list position in `seq`), newest first below
/// `before`; one row read past `limit` says whether more remain.
pub async fn pg_page<T: DeserializeOwned>(
    pool: &PgPool,
    table: &'static str,
    (account, before, limit): (&str, Option<u64>, usize),
    seq: impl Fn(&T) -> u64,
) -> Result<(Vec<T>, Option<u64>), StoreError> {
    let sql = format!(
        "SELECT record::text FROM {table} WHERE account_id = $1 AND seq < $2
         ORDER BY seq DESC LIMIT $3"
    );
    let rows: Vec<String> = sqlx::query_scalar(AssertSqlSafe(sql))
        .bind(account)
        .bind(bigint(before.unwrap_or(u64::MAX)))
        .bind(bigint(limit.saturating_add(1)))
        .fetch_all(pool)
        .await?;
    let more = rows.len() > limit;
    let page = (rows.iter().take(limit))
        .map(|json| serde_json::from_str(json))
        .collect::<Result<Vec<T>, _>>()?;
    let next = more.then(|| page.last().map(&seq)).flatten();
    Ok((page, next))
}
