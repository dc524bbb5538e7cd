//! Vector similarity search: one usearch HNSW graph per account, persisted by checkpoints.

mod hotpath;
mod layout;
mod permits;
mod shard;

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use self::layout::{Layout, Manifest};
use self::permits::Permits;
use self::shard::Shard;
use super::{IndexError, IndexOp, SearchFilter};

/// Upper bound on concurrent graph searches (and so on usearch thread contexts reserved per
/// account): more than the cores would only queue inside the CPU instead of here.
const MAX_SEARCH_THREADS: usize = 8;

type Shards = HashMap<String, Arc<RwLock<Shard>>>;

/// Cosine-similarity search over memory embeddings, one HNSW graph per account so that the
/// account filter *is* the graph, with namespace/tag/expiry filters applied inside the graph
/// walk.
///
/// Changes are applied in memory (searchable at once) and made durable by
/// [`checkpoint`](VectorIndex::checkpoint), which rewrites only the accounts that changed;
/// the oplog covers the gap, so a crash only costs a replay. Searches take a per-account read
/// lock; the writer takes that account's write lock once per op, so a search waits at most one
/// insertion. A checkpoint serializes each changed account under its read lock (~0.1 s for
/// 100k docs); a write to that account waits for it, and searches of it queue behind that
/// write, so checkpoint on a timer rather than after every batch.
pub struct VectorIndex {
    layout: Layout,
    dims: usize,
    threads: usize,
    shards: RwLock<Shards>,
    /// Highest seq applied in memory.
    applied: AtomicU64,
    /// Highest seq in the manifest on disk.
    durable: AtomicU64,
    /// Serializes checkpoints and clears (they write the same files).
    persisting: Mutex<()>,
    permits: Permits,
}

impl VectorIndex {
    /// Opens (loads persisted per-account indexes) or creates under `dir`.
    ///
    /// A directory built for other dimensions, or holding unreadable files, is wiped with a
    /// warning and starts empty at watermark 0, so the caller rebuilds it from the store.
    pub fn open(dir: &Path, dims: usize) -> Result<Self, IndexError> {
        let layout = Layout::open(dir)?;
        let threads = std::thread::available_parallelism()
            .map_or(1, NonZeroUsize::get)
            .min(MAX_SEARCH_THREADS);
        let (shards, seq) = match load(&layout, dims, threads) {
            Ok(loaded) => loaded,
            Err(IndexError::Corrupt { path, reason }) => {
                tracing::warn!(path = %path.display(), %reason, "discarding vector index; it will be rebuilt");
                layout.write_manifest(&Manifest { seq: 0, dims })?;
                layout.remove_shards()?;
                (HashMap::new(), 0)
            }
            Err(e) => return Err(e),
        };
        Ok(VectorIndex {
            layout,
            dims,
            threads,
            shards: RwLock::new(shards),
            applied: AtomicU64::new(seq),
            durable: AtomicU64::new(seq),
            persisting: Mutex::new(()),
            permits: Permits::new(threads),
        })
    }

    /// Highest oplog seq durably on disk (as of the last [`checkpoint`](Self::checkpoint)).
    pub fn watermark(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    /// Applies ops in memory (immediately searchable); durable only after `checkpoint`.
    ///
    /// Every embedding is checked before anything is applied, so a wrong-sized vector
    /// rejects the whole batch.
    pub fn apply(&self, ops: &[IndexOp], seq: u64) -> Result<(), IndexError> {
        for op in ops {
            if let IndexOp::Upsert(doc) = op {
                self.check_dims(doc.embedding.len())?;
            }
        }
        for op in ops {
            match op {
                IndexOp::Upsert(doc) => self.shard_or_create(&doc.account)?.write().upsert(doc)?,
                IndexOp::Remove { id, account } => {
                    if let Some(shard) = self.shard(account) {
                        shard.write().remove(*id)?;
                    }
                }
            }
        }
        self.applied.fetch_max(seq, Ordering::AcqRel);
        Ok(())
    }

    /// Saves every changed account index and then the watermark, atomically enough that a
    /// crash mid-checkpoint leaves a watermark no higher than what is on disk (write temp
    /// files + rename; watermark file last).
    ///
    /// May run concurrently with `apply` and searches: the watermark written is the one
    /// applied when the checkpoint started, and each account is encoded under its read lock.
    pub fn checkpoint(&self) -> Result<(), IndexError> {
        let _persisting = self.persisting.lock();
        let seq = self.applied.load(Ordering::Acquire);
        let shards: Vec<_> = self
            .shards
            .read()
            .iter()
            .map(|(account, shard)| (account.clone(), Arc::clone(shard)))
            .collect();
        let mut wrote = false;
        for (account, shard) in shards {
            let bytes = {
                let shard = shard.read();
                if !shard.take_dirty() {
                    continue;
                }
                shard.encode(&account).inspect_err(|_| shard.mark_dirty())?
            };
            if let Err(e) = self.layout.write_shard(&account, &bytes) {
                shard.read().mark_dirty();
                return Err(e.into());
            }
            wrote = true;
        }
        if !wrote && seq == self.watermark() {
            return Ok(());
        }
        self.layout.sync_shards()?;
        self.layout.write_manifest(&Manifest {
            seq,
            dims: self.dims,
        })?;
        self.durable.store(seq, Ordering::Release);
        Ok(())
    }

    /// Top `k` (id, cosine similarity) best first, honoring namespace/tags/expiry inside the
    /// HNSW search, restricted to the account's index.
    ///
    /// Filters admitting few docs are answered by an exact scan of those docs instead (see
    /// `shard.rs`), so selective filters neither miss results nor walk the whole graph.
    pub fn search(
        &self,
        filter: &SearchFilter,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        self.check_dims(query.len())?;
        let Some(shard) = self.shard(filter.account) else {
            return Ok(Vec::new());
        };
        let _permit = self.permits.acquire();
        let shard = shard.read();
        match shard.resolve(filter) {
            Some(want) => shard.search(query, k, &want),
            None => Ok(Vec::new()),
        }
    }

    /// The stored vector of one doc, if present (used to score keyword-only candidates).
    ///
    /// Stored at f16 precision, so it may differ from the applied embedding by ~1e-3.
    pub fn vector(&self, account: &str, id: u64) -> Option<Vec<f32>> {
        self.shard(account)?.read().vector(id)
    }

    /// Nearest neighbours of a stored doc within the same account and namespace, for
    /// dedupe/clustering: (id, cosine) excluding itself, cos >= min_similarity, at most k,
    /// best first. Expiry is ignored. An unknown doc has no neighbours.
    pub fn neighbours(
        &self,
        account: &str,
        id: u64,
        k: usize,
        min_similarity: f32,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        let Some(shard) = self.shard(account) else {
            return Ok(Vec::new());
        };
        let _permit = self.permits.acquire();
        let shard = shard.read();
        let (Some(want), Some(vector)) = (shard.neighbours_of(id), shard.vector(id)) else {
            return Ok(Vec::new());
        };
        let mut hits = shard.search(&vector, k, &want)?;
        hits.retain(|&(_, similarity)| similarity >= min_similarity);
        Ok(hits)
    }

    /// Removes every doc (used before a full rebuild) and durably resets the watermark to 0
    /// *before* deleting files, so a crash part-way forces a full replay.
    pub fn clear(&self) -> Result<(), IndexError> {
        let _persisting = self.persisting.lock();
        self.layout.write_manifest(&Manifest {
            seq: 0,
            dims: self.dims,
        })?;
        self.durable.store(0, Ordering::Release);
        self.shards.write().clear();
        self.applied.store(0, Ordering::Release);
        self.layout.remove_shards()?;
        Ok(())
    }

    fn check_dims(&self, got: usize) -> Result<(), IndexError> {
        if got == self.dims {
            Ok(())
        } else {
            Err(IndexError::Dimensions {
                expected: self.dims,
                got,
            })
        }
    }

    fn shard(&self, account: &str) -> Option<Arc<RwLock<Shard>>> {
        self.shards.read().get(account).cloned()
    }

    fn shard_or_create(&self, account: &str) -> Result<Arc<RwLock<Shard>>, IndexError> {
        if let Some(shard) = self.shard(account) {
            return Ok(shard);
        }
        let shard = Arc::new(RwLock::new(Shard::new(self.dims, self.threads)?));
        let mut shards = self.shards.write();
        Ok(Arc::clone(
            shards.entry(account.to_owned()).or_insert(shard),
        ))
    }
}

/// Reads the manifest and every shard file.
fn load(layout: &Layout, dims: usize, threads: usize) -> Result<(Shards, u64), IndexError> {
    let seq = layout.read_watermark(dims)?;
    let mut shards = HashMap::new();
    for path in layout.shard_files()? {
        let bytes = std::fs::read(&path)?;
        let (account, shard) =
            Shard::decode(&bytes, dims, threads).map_err(|reason| IndexError::Corrupt {
                path: path.clone(),
                reason,
            })?;
        shards.insert(account, Arc::new(RwLock::new(shard)));
    }
    Ok((shards, seq))
}

#[cfg(test)]
mod tests;
