//! The memory tables in redb, the source of truth. Every version of every memory, its
//! embedding, the per-key head of its version chain, the live set (the "timeline", which
//! list, export, counts and quotas read) and an oplog of index changes all commit in one
//! transaction, so a crash never leaves them disagreeing. The tantivy and usearch indexes
//! are derived: the oplog says which ids they must re-sync after their watermark.
//!
//! Invariant: a memory is counted (timeline, namespace and account counts, expiry queue)
//! exactly while it is live or expired-but-not-yet-reaped; `write::Batch::list`/`unlist`
//! are the only places that change that.

mod next;
mod read;
mod write;

use redb::{ReadableTable, TableDefinition};

pub use next::reset_next;
pub use read::Reader;
pub use write::Batch;

use super::{Result, record::Memory};

/// id → Memory (JSON).
const MEMORIES: TableDefinition<u64, &[u8]> = TableDefinition::new("memories");
/// id → embedding (little-endian f32s).
const EMBEDDINGS: TableDefinition<u64, &[u8]> = TableDefinition::new("memory_embeddings");
/// (account, namespace, key) → id of the newest version, live or not.
const HEADS: TableDefinition<(&str, &str, &str), u64> = TableDefinition::new("memory_heads");
/// (account, id) for every counted memory; ids grow with write order, so this is newest-last.
const TIMELINE: TableDefinition<(&str, u64), ()> = TableDefinition::new("memory_timeline");
/// (account, namespace) → counted memories.
const NS_COUNTS: TableDefinition<(&str, &str), u64> = TableDefinition::new("memory_ns_counts");
/// account → counted memories (the quota's "used").
const ACCOUNT_COUNTS: TableDefinition<&str, u64> = TableDefinition::new("memory_account_counts");
/// (account, expires_at, id) for counted memories that expire.
const EXPIRIES: TableDefinition<(&str, u64, u64), ()> = TableDefinition::new("memory_expiries");
/// seq → (id, account): an index change to re-sync from the current row state.
const OPLOG: TableDefinition<u64, (u64, &str)> = TableDefinition::new("memory_oplog");
/// Counters: next id, next oplog seq, highest truncated seq, the re-embedder's position.
const META: TableDefinition<&str, u64> = TableDefinition::new("memory_meta");
/// id → the embedding of the model a re-embedding moves to (see [`next`]).
const NEXT_EMBEDDINGS: TableDefinition<u64, &[u8]> = TableDefinition::new("memory_embeddings_next");

const NEXT_ID: &str = "next_id";
const NEXT_SEQ: &str = "next_seq";
const OPLOG_FLOOR: &str = "oplog_floor";
/// The highest id the re-embedder has passed (absent when none is under way).
const REEMBED_POSITION: &str = "reembed_position";

/// Creates every table so readers never meet a missing one.
pub fn init(db: &redb::Database) -> Result<()> {
    let txn = db.begin_write()?;
    txn.open_table(MEMORIES)?;
    txn.open_table(EMBEDDINGS)?;
    txn.open_table(HEADS)?;
    txn.open_table(TIMELINE)?;
    txn.open_table(NS_COUNTS)?;
    txn.open_table(ACCOUNT_COUNTS)?;
    txn.open_table(EXPIRIES)?;
    txn.open_table(OPLOG)?;
    txn.open_table(META)?;
    txn.open_table(NEXT_EMBEDDINGS)?;
    txn.commit()?;
    Ok(())
}

fn load(table: &impl ReadableTable<u64, &'static [u8]>, id: u64) -> Result<Option<Memory>> {
    match table.get(id)? {
        Some(bytes) => Ok(Some(serde_json::from_slice(bytes.value())?)),
        None => Ok(None),
    }
}

fn encode_embedding(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode_embedding(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[cfg(test)]
mod tests;
