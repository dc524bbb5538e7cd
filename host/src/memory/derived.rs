//! The derived indexes (tantivy keywords, usearch vectors) kept in step with redb.
//!
//! Each index records the highest oplog seq it holds durably (its watermark). At start-up
//! each replays the oplog after its watermark — or rebuilds from every live row when the
//! entries it needs were already truncated (a deleted or brand-new index folder). Neither
//! index syncs per write (redb's commit is the write's durability): periodic checkpoints
//! save vectors and sync the keyword folder; after each, oplog entries both indexes hold
//! are truncated.

use std::path::Path;

use super::{
    Result,
    index::{IndexDoc, IndexOp, KeywordIndex, VectorIndex},
    record::Memory,
    store::Reader,
};
use crate::clock::now_ms;

/// Rows per index update during a rebuild.
const REBUILD_CHUNK: usize = 2_000;

/// Both derived indexes.
pub struct Indexes {
    pub keyword: KeywordIndex,
    pub vector: VectorIndex,
}

impl Indexes {
    /// Opens both indexes under `dir` and brings them up to date with `db`.
    pub fn open(dir: &Path, dims: usize, db: &redb::Database) -> Result<Self> {
        let indexes = Self {
            keyword: KeywordIndex::open(&dir.join("keyword"))?,
            vector: VectorIndex::open(&dir.join("vector"), dims)?,
        };
        let reader = Reader::new(db)?;
        let keyword = catch_up(
            &reader,
            indexes.keyword.watermark(),
            |ops, seq| indexes.keyword.apply(ops, seq),
            || indexes.keyword.clear(),
        )?;
        let vector = catch_up(
            &reader,
            indexes.vector.watermark(),
            |ops, seq| indexes.vector.apply(ops, seq),
            || indexes.vector.clear(),
        )?;
        if keyword > 0 {
            indexes.keyword.checkpoint()?;
        }
        if vector > 0 {
            indexes.vector.checkpoint()?;
        }
        tracing::info!(
            keyword_replayed = keyword,
            vector_replayed = vector,
            "indexes in step"
        );
        Ok(indexes)
    }

    /// Applies one committed group's changes to both indexes.
    pub fn apply(&self, ops: &[IndexOp], seq: u64) -> Result<()> {
        self.keyword.apply(ops, seq)?;
        self.vector.apply(ops, seq)?;
        Ok(())
    }

    /// Makes both indexes durable; returns the oplog seq both now hold durably.
    pub fn checkpoint(&self) -> Result<u64> {
        self.keyword.checkpoint()?;
        self.vector.checkpoint()?;
        Ok(self.keyword.watermark().min(self.vector.watermark()))
    }
}

/// Brings one index up to the oplog's end; returns how many rows it re-synced.
fn catch_up(
    reader: &Reader,
    watermark: u64,
    apply: impl Fn(&[IndexOp], u64) -> std::result::Result<(), super::index::IndexError>,
    clear: impl Fn() -> std::result::Result<(), super::index::IndexError>,
) -> Result<usize> {
    let now = now_ms();
    let (ids, last) = match reader.oplog_after(watermark)? {
        Some((changed, last)) => (
            changed.into_iter().map(|(id, a)| (id, Some(a))).collect(),
            last,
        ),
        None => {
            tracing::warn!(watermark, "index behind the truncated oplog: rebuilding");
            clear()?;
            let all: Vec<(u64, Option<String>)> = reader
                .all_counted_ids()?
                .into_iter()
                .map(|id| (id, None))
                .collect();
            (all, reader.last_seq()?)
        }
    };
    if ids.is_empty() {
        return Ok(0);
    }
    let count = ids.len();
    let chunks = ids.chunks(REBUILD_CHUNK);
    let final_chunk = chunks.len() - 1;
    for (i, chunk) in chunks.enumerate() {
        let mut ops = Vec::with_capacity(chunk.len());
        for (id, account) in chunk {
            ops.push(sync_op(reader, *id, account.as_deref(), now)?);
        }
        // Only the final chunk records `last`: a crash halfway leaves the old watermark
        // (0 after a clear), so the next start replays the rest instead of skipping it.
        let seq = if i == final_chunk { last } else { 0 };
        apply(&ops, seq)?;
    }
    Ok(count)
}

/// The change that makes an index agree with the row's current state.
fn sync_op(reader: &Reader, id: u64, account: Option<&str>, now: u64) -> Result<IndexOp> {
    let row = reader.memory(id)?;
    if let Some(m) = row.as_ref().filter(|m| m.is_live(now))
        && let Some(embedding) = reader.embedding(id)?
    {
        return Ok(IndexOp::Upsert(index_doc(m, embedding)));
    }
    let account = row
        .map(|m| m.account)
        .or_else(|| account.map(str::to_string))
        .unwrap_or_default();
    Ok(IndexOp::Remove { id, account })
}

/// The index document of a live memory.
pub fn index_doc(m: &Memory, embedding: Vec<f32>) -> IndexDoc {
    IndexDoc {
        id: m.id,
        account: m.account.clone(),
        namespace: m.namespace.clone(),
        key: m.key.clone(),
        value: m.value.clone(),
        tags: m.tags.clone(),
        expires_at: m.expires_at,
        embedding,
    }
}
