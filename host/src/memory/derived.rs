//! The derived indexes (tantivy keywords, usearch vectors) kept in step with redb: one pair
//! over the live versions, and one over the past, for `as_of` searches.
//!
//! The past pair holds every version that was superseded or deleted, or has an expiry,
//! with the instant its life ended in the doc's `expires_at` and the instant it began in
//! `written_at`. A search as of `t` asks both pairs for the docs written by `t` and not
//! ended at `t`: the versions live then, found by the same indexed search as now (a live
//! version with an expiry is in both; the candidates merge by id).
//!
//! Each index records the highest oplog seq it holds durably (its watermark). At start-up
//! each replays the oplog after its watermark — or rebuilds from the rows when the entries
//! it needs were already truncated (a deleted or brand-new index folder). Neither index
//! syncs per write (redb's commit is the write's durability): periodic checkpoints save
//! vectors and sync the keyword folder; after each, oplog entries every index holds are
//! truncated.

use std::path::Path;

use super::{
    Result,
    index::{IndexDoc, IndexError, IndexOp, KeywordIndex, SearchFilter, VectorIndex},
    record::Memory,
    store::Reader,
};
use crate::clock::now_ms;

/// Rows per index update during a rebuild.
const REBUILD_CHUNK: usize = 2_000;

/// The index changes of one committed group, for each pair.
#[derive(Debug, Default, PartialEq)]
pub struct Changes {
    pub live: Vec<IndexOp>,
    pub past: Vec<IndexOp>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.live.is_empty() && self.past.is_empty()
    }
}

/// A keyword index and a vector index over the same docs.
pub struct Pair {
    pub keyword: KeywordIndex,
    pub vector: VectorIndex,
}

/// Both pairs of derived indexes.
pub struct Indexes {
    pub live: Pair,
    pub past: Pair,
}

/// What a pair should hold of a changed row, by its id (and account, should it be gone).
type Sync = fn(&Reader, u64, Option<&str>, u64) -> Result<IndexOp>;
/// (id, score) best first, as an index answers.
type Hits = Vec<(u64, f32)>;
/// The rows a full rebuild of a pair syncs.
type All = fn(&Reader) -> Result<Vec<u64>>;

impl Indexes {
    /// Opens both pairs under `dir` (the live one where it always was, the past in `past/`)
    /// and brings them up to date with `db`.
    pub fn open(dir: &Path, dims: usize, db: &redb::Database) -> Result<Self> {
        let reader = Reader::new(db)?;
        let indexes = Self {
            live: Pair::open(
                dir,
                dims,
                &reader,
                "live",
                sync_live,
                Reader::all_counted_ids,
            )?,
            past: Pair::open(
                &dir.join("past"),
                dims,
                &reader,
                "past",
                sync_past,
                Reader::all_ids,
            )?,
        };
        Ok(indexes)
    }

    /// Applies one committed group's changes to every index.
    pub fn apply(&self, changes: &Changes, seq: u64) -> Result<()> {
        self.live.apply(&changes.live, seq)?;
        self.past.apply(&changes.past, seq)
    }

    /// Empties both vector indexes, durably (watermark 0): whatever happens next, the next
    /// start rebuilds them from the rows. The re-embedding's flip does this before it
    /// commits, so no start can pair the vectors of one model with the rows of another.
    pub fn clear_vectors(&self) -> Result<()> {
        self.live.vector.clear()?;
        self.past.vector.clear()?;
        Ok(())
    }

    /// Rebuilds both vector indexes from the rows of `db` and saves them (after the flip).
    pub fn rebuild_vectors(&self, db: &redb::Database) -> Result<()> {
        let reader = Reader::new(db)?;
        let sides: [(&VectorIndex, Sync, All); 2] = [
            (&self.live.vector, sync_live, Reader::all_counted_ids),
            (&self.past.vector, sync_past, Reader::all_ids),
        ];
        for (vector, sync, all) in sides {
            vector.clear()?;
            let apply = |ops: &[IndexOp], seq| vector.apply(ops, seq);
            catch_up(&reader, (sync, all), 0, apply, || vector.clear())?;
            vector.checkpoint()?;
        }
        Ok(())
    }

    /// Makes every index durable; returns the oplog seq all now hold durably.
    pub fn checkpoint(&self) -> Result<u64> {
        Ok(self.live.checkpoint()?.min(self.past.checkpoint()?))
    }
}

impl Pair {
    /// Opens the pair under `dir` and replays what it misses (`sync` says what it should
    /// hold of a changed row; `all` lists the rows of a full rebuild).
    fn open(
        dir: &Path,
        dims: usize,
        reader: &Reader,
        name: &str,
        sync: Sync,
        all: All,
    ) -> Result<Self> {
        let pair = Self {
            keyword: KeywordIndex::open(&dir.join("keyword"))?,
            vector: VectorIndex::open(&dir.join("vector"), dims)?,
        };
        let keyword = catch_up(
            reader,
            (sync, all),
            pair.keyword.watermark(),
            |ops, seq| pair.keyword.apply(ops, seq),
            || pair.keyword.clear(),
        )?;
        let vector = catch_up(
            reader,
            (sync, all),
            pair.vector.watermark(),
            |ops, seq| pair.vector.apply(ops, seq),
            || pair.vector.clear(),
        )?;
        if keyword > 0 {
            pair.keyword.checkpoint()?;
        }
        if vector > 0 {
            pair.vector.checkpoint()?;
        }
        tracing::info!(
            indexes = name,
            keyword_replayed = keyword,
            vector_replayed = vector,
            "indexes in step"
        );
        Ok(pair)
    }

    fn apply(&self, ops: &[IndexOp], seq: u64) -> Result<()> {
        self.keyword.apply(ops, seq)?;
        self.vector.apply(ops, seq)?;
        Ok(())
    }

    fn checkpoint(&self) -> Result<u64> {
        self.keyword.checkpoint()?;
        self.vector.checkpoint()?;
        Ok(self.keyword.watermark().min(self.vector.watermark()))
    }

    /// The top `k` of each index under `filter`: (keyword hits, vector hits), each side
    /// asked only when given its query.
    pub fn search(
        &self,
        filter: &SearchFilter,
        text: Option<&str>,
        vector: Option<&[f32]>,
        k: usize,
    ) -> Result<(Hits, Hits)> {
        let keyword = match text {
            Some(text) => self.keyword.search(filter, text, k)?,
            None => Vec::new(),
        };
        let semantic = match vector {
            Some(v) => self.vector.search(filter, v, k)?,
            None => Vec::new(),
        };
        Ok((keyword, semantic))
    }
}

/// Brings one index up to the oplog's end; returns how many rows it re-synced.
fn catch_up(
    reader: &Reader,
    (sync, all): (Sync, All),
    watermark: u64,
    apply: impl Fn(&[IndexOp], u64) -> std::result::Result<(), IndexError>,
    clear: impl Fn() -> std::result::Result<(), IndexError>,
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
            let all: Vec<(u64, Option<String>)> =
                all(reader)?.into_iter().map(|id| (id, None)).collect();
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
            ops.push(sync(reader, *id, account.as_deref(), now)?);
        }
        // Only the final chunk records `last`: a crash halfway leaves the old watermark
        // (0 after a clear), so the next start replays the rest instead of skipping it.
        let seq = if i == final_chunk { last } else { 0 };
        apply(&ops, seq)?;
    }
    Ok(count)
}

/// The change that makes the live pair agree with the row's current state.
fn sync_live(reader: &Reader, id: u64, account: Option<&str>, now: u64) -> Result<IndexOp> {
    let row = reader.memory(id)?;
    if let Some(m) = row.as_ref().filter(|m| m.is_live(now))
        && let Some(embedding) = reader.embedding(id)?
    {
        return Ok(IndexOp::Upsert(index_doc(m, embedding)));
    }
    Ok(remove(id, row, account))
}

/// The change that makes the past pair agree with the row's current state.
fn sync_past(reader: &Reader, id: u64, account: Option<&str>, _: u64) -> Result<IndexOp> {
    let row = reader.memory(id)?;
    if let Some(m) = row.as_ref().filter(|m| belongs_to_past(m)) {
        let superseded = !m.is_latest && m.deleted_at.is_none();
        let ended = match superseded {
            true => reader.successor(m)?.map(|next| next.updated_at),
            false => None,
        };
        // A superseded version always has a successor; without one it has no known end.
        if (!superseded || ended.is_some())
            && let Some(embedding) = reader.embedding(id)?
        {
            return Ok(IndexOp::Upsert(past_doc(m, embedding, ended)));
        }
    }
    Ok(remove(id, row, account))
}

fn remove(id: u64, row: Option<Memory>, account: Option<&str>) -> IndexOp {
    let account = row
        .map(|m| m.account)
        .or_else(|| account.map(str::to_string))
        .unwrap_or_default();
    IndexOp::Remove { id, account }
}

/// Whether the past pair holds this version: its life has ended or has an end set.
pub fn belongs_to_past(m: &Memory) -> bool {
    !m.is_latest || m.deleted_at.is_some() || m.expires_at.is_some()
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
        written_at: m.updated_at,
        embedding,
    }
}

/// The past pair's document of a version, which a newer one replaced at `superseded`
/// (when it did): its life ends at the first of that, its deletion and its expiry.
pub fn past_doc(m: &Memory, embedding: Vec<f32>, superseded: Option<u64>) -> IndexDoc {
    let end = [m.deleted_at, m.expires_at, superseded]
        .into_iter()
        .flatten()
        .min();
    IndexDoc {
        expires_at: end,
        ..index_doc(m, embedding)
    }
}
