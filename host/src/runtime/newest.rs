//! Newest-first pages of an account's records, for every kind stored the same way: records
//! as JSON by id, and the account's ids by list position `(account, seq)`.

use redb::{ReadTransaction, StorageError, TableDefinition, TableError};
use serde::de::DeserializeOwned;

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
