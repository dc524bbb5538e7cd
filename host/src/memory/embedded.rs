//! The embedded backend: redb in the data dir is the source of truth, written by one
//! writer thread (group commit), with the tantivy and usearch indexes derived from it.

mod reembed;

use std::{path::Path, sync::Arc, time::Duration};

use async_trait::async_trait;

use super::{
    ImportReport, ListQuery, MemoryError, Quota, Result,
    backend::{CandidateQuery, ListPage, MemoryBackend, Merge, Merged, PutOutcome, RunFence},
    derived::Indexes,
    fair::Bounds,
    index::{LATEST, SearchFilter},
    input::PutInput,
    record::{Memory, Provenance},
    scan,
    search::{self, Candidate},
    store::{self, Reader},
    transfer::{self, Prepared},
    writer::{BULK_PIECE, Piece, Turn, Writer},
};
use crate::clock::now_ms;

/// redb + tantivy + usearch in one data dir; cheap to clone (handles).
#[derive(Clone)]
pub struct Embedded {
    db: Arc<redb::Database>,
    indexes: Arc<Indexes>,
    writer: Writer,
}

impl Embedded {
    /// Opens the memory tables and indexes under `index_dir`, replaying what the indexes
    /// miss, and starts the writer (its bulk work bounded by `write_queue`) and a
    /// checkpoint every `checkpoint_every`.
    pub fn open(
        db: Arc<redb::Database>,
        index_dir: &Path,
        dims: usize,
        checkpoint_every: Duration,
        write_queue: Bounds,
    ) -> Result<Arc<Self>> {
        store::init(&db)?;
        let indexes = Arc::new(Indexes::open(index_dir, dims, &db)?);
        let writer = Writer::start(db.clone(), indexes.clone(), write_queue);
        let this = Arc::new(Self {
            db,
            indexes,
            writer,
        });
        this.start_checkpoints(checkpoint_every.max(Duration::from_secs(1)));
        Ok(this)
    }

    fn read<T>(&self, f: impl FnOnce(&Reader, u64) -> Result<T>) -> Result<T> {
        f(&Reader::new(&self.db)?, now_ms())
    }

    /// Reaps expired memories of `account` first, so counts and quotas are exact.
    async fn reap_if_due(&self, account: &str) -> Result<()> {
        if self.read(|r, now| r.has_due_expiries(account, now))? {
            let turn = Turn::interactive(account);
            let account = account.to_string();
            self.writer.run(turn, move |b| b.reap(&account)).await?;
        }
        Ok(())
    }

    /// The candidates of `q` from both indexes, each with its row (blocking): of the live
    /// versions, or of those live at `as_of` (the live and the past indexes together).
    fn rank(&self, q: &CandidateQuery) -> Result<Vec<(Memory, Candidate)>> {
        let filter = SearchFilter {
            account: &q.account,
            namespace: q.namespace.as_deref(),
            tags: &q.tags,
            now_ms: q.now,
            written_by: q.as_of.unwrap_or(LATEST),
        };
        let text = q.keywords.then_some(q.query.as_str());
        let vector = q.vector.as_deref().map(Vec::as_slice);
        let pairs = match q.as_of {
            Some(_) => vec![&self.indexes.live, &self.indexes.past],
            None => vec![&self.indexes.live],
        };
        let (mut keyword, mut semantic) = (Vec::new(), Vec::new());
        for pair in &pairs {
            let (k, s) = pair.search(&filter, text, vector, q.k)?;
            keyword.extend(k);
            semantic.extend(s);
        }
        let reader = Reader::new(&self.db)?;
        let mut found = Vec::new();
        for (id, mut candidate) in search::merge(&keyword, &semantic) {
            let Some(memory) = reader.memory(id)?.filter(|m| {
                m.account == q.account
                    && match q.as_of {
                        Some(at) => m.was_live_at(at),
                        None => m.is_live(q.now),
                    }
            }) else {
                continue;
            };
            if let (None, Some(v)) = (candidate.cosine, vector) {
                candidate.cosine = pairs
                    .iter()
                    .find_map(|pair| pair.vector.vector(&q.account, id))
                    .map(|stored| dot(&stored, v));
            }
            found.push((memory, candidate));
        }
        Ok(found)
    }

    fn start_checkpoints(self: &Arc<Self>, every: Duration) {
        let weak = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("memory-checkpoint".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(every);
                    let Some(this) = weak.upgrade() else { return };
                    if let Err(e) = this.checkpoint() {
                        tracing::error!(error = %e, "memory checkpoint failed");
                    }
                }
            })
            .expect("spawning the checkpoint thread");
    }
}

#[async_trait]
impl MemoryBackend for Embedded {
    async fn live(&self, account: &str, namespace: &str, key: &str) -> Result<Option<Memory>> {
        self.read(|r, now| r.live(account, namespace, key, now))
    }

    /// One process, no claims: a write has no fence to check.
    async fn put(
        &self,
        input: PutInput,
        embedding: Vec<f32>,
        quota: Quota,
        _: Option<RunFence>,
    ) -> Result<PutOutcome> {
        let account = input.account.clone();
        self.writer
            .run(Turn::interactive(&account), move |b| {
                b.put_pruned(&input, &embedding, quota)
            })
            .await
    }

    async fn touch(&self, account: &str, namespace: &str, key: &str) -> Result<Memory> {
        let (a, n, k) = owned(account, namespace, key);
        self.writer
            .run(Turn::interactive(account), move |b| b.touch(&a, &n, &k))
            .await
    }

    async fn soft_delete(
        &self,
        account: &str,
        namespace: &str,
        key: &str,
        by: Option<Provenance>,
        _: Option<RunFence>,
    ) -> Result<Memory> {
        let (a, n, k) = owned(account, namespace, key);
        self.writer
            .run(Turn::interactive(account), move |b| {
                b.soft_delete(&a, &n, &k, by.as_ref())
            })
            .await
    }

    async fn hard_delete(&self, account: &str, namespace: &str, key: &str) -> Result<usize> {
        let (a, n, k) = owned(account, namespace, key);
        self.writer
            .run(Turn::interactive(account), move |b| {
                b.hard_delete(&a, &n, &k)
            })
            .await
    }

    async fn history(
        &self,
        account: &str,
        namespace: &str,
        key: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<ListPage> {
        self.read(|r, _| r.history(account, namespace, key, before, limit))
    }

    async fn list(&self, account: &str, q: &ListQuery) -> Result<ListPage> {
        self.reap_if_due(account).await?;
        self.read(|r, now| {
            r.list(account, q.before, q.limit, now, |m| {
                q.namespace.as_ref().is_none_or(|ns| &m.namespace == ns)
                    && m.has_all_tags(&q.tags)
                    && q.time.keeps(m)
            })
        })
    }

    async fn namespaces(&self, account: &str) -> Result<Vec<(String, u64)>> {
        self.reap_if_due(account).await?;
        self.read(|r, _| r.namespaces(account))
    }

    async fn live_counts(&self) -> Result<Vec<(String, u64)>> {
        self.blocking(|this| this.read(|r, _| r.account_counts()))
            .await
    }

    async fn live_in(&self, account: &str, namespace: Option<&str>) -> Result<Vec<Memory>> {
        self.reap_if_due(account).await?;
        self.read(|r, now| {
            r.all_live(account, now, |m| {
                namespace.is_none_or(|ns| m.namespace == ns)
            })
        })
    }

    async fn versions_at(
        &self,
        account: &str,
        namespace: Option<&str>,
        at: u64,
        toward: Option<Arc<Vec<f32>>>,
    ) -> Result<Vec<(Memory, Option<f32>)>> {
        let (account, namespace) = (account.to_string(), namespace.map(str::to_string));
        self.blocking(move |this| {
            let versions = this
                .read(|r, _| r.versions_at(&account, namespace.as_deref(), at, toward.is_some()))?;
            Ok(versions
                .into_iter()
                .map(|(m, e)| {
                    let cosine = toward.as_deref().zip(e).map(|(v, e)| scan::cosine(v, &e));
                    (m, cosine)
                })
                .collect())
        })
        .await
    }

    async fn import(
        &self,
        account: &str,
        items: Vec<Prepared>,
        quota: Quota,
    ) -> Result<ImportReport> {
        let report = Arc::new(parking_lot::Mutex::new(transfer::Importing::default()));
        let turn = Turn::bulk(account, items.len());
        let mut items = items.into_iter().peekable();
        let mut pieces = Vec::new();
        while items.peek().is_some() {
            let piece: Vec<Prepared> = items.by_ref().take(BULK_PIECE).collect();
            let rows = piece.len();
            let report = report.clone();
            let write: Piece<()> = Box::new(move |b| {
                let mut report = report.lock();
                for (index, key, item) in piece {
                    let put = item.map(|(input, embedding)| {
                        let put = b.put_pruned(&input, &embedding, quota);
                        (input.key, put)
                    });
                    if !report.record(index, key, put)? {
                        return Ok(((), false));
                    }
                }
                Ok(((), true))
            });
            pieces.push((rows, write));
        }
        if let (_, Some(failed)) = self.writer.run_pieces(turn, pieces).await? {
            return Err(failed);
        }
        Ok(std::mem::take(&mut *report.lock()).done())
    }

    async fn soft_delete_ids(&self, account: &str, ids: Vec<u64>) -> Result<usize> {
        let turn = Turn::interactive(account);
        let account = account.to_string();
        let removed = self
            .writer
            .run(turn, move |b| b.soft_delete_ids(&account, &ids))
            .await?;
        Ok(removed.len())
    }

    async fn consolidate(&self, account: &str, merges: Vec<Merge>) -> Result<Vec<Merged>> {
        let turn = Turn::bulk(account, merges.iter().map(|m| 1 + m.originals.len()).sum());
        let account = account.to_string();
        self.writer
            .run(turn, move |b| b.consolidate(&account, &merges))
            .await
    }

    async fn candidates(&self, q: &CandidateQuery) -> Result<Vec<(Memory, Candidate)>> {
        // Index searches are CPU work of a few ms: off the async workers.
        let q = q.clone();
        self.blocking(move |this| this.rank(&q)).await
    }

    async fn neighbours(
        &self,
        account: &str,
        ids: Vec<u64>,
        k: usize,
        threshold: f32,
    ) -> Result<Vec<(u64, u64, f32)>> {
        let mut pairs = Vec::new();
        for id in ids {
            let live = &self.indexes.live.vector;
            for (other, similarity) in live.neighbours(account, id, k, threshold)? {
                pairs.push((id, other, similarity));
            }
        }
        Ok(pairs)
    }

    fn checkpoint(&self) -> Result<()> {
        let upto = self.indexes.checkpoint()?;
        self.writer.run_blocking(move |b| b.truncate_oplog(upto))
    }
}

impl Embedded {
    /// Runs `f` on the blocking pool with a handle on this backend: for scans and index
    /// searches, kept off the async workers.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Self) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || f(&this))
            .await
            .map_err(|_| MemoryError::Stopped)?
    }
}

fn owned(account: &str, namespace: &str, key: &str) -> (String, String, String) {
    (account.into(), namespace.into(), key.into())
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use std::{sync::mpsc, time::Duration};

    use futures_util::FutureExt;

    use super::*;
    use crate::memory::{Quota, service::tests::put};

    /// An import whose caller goes away once its pieces are queued (a client that
    /// disconnects) is still written whole, each key pruned to the versions the quota
    /// keeps: the pruning is the writer's, in the pieces' own transactions.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_import_whose_caller_went_away_is_pruned_all_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
        let bounds = Bounds {
            per_account: 1_000,
            total: 1_000,
        };
        let every = Duration::from_secs(3600);
        let backend = Embedded::open(db, &dir.path().join("index"), 4, every, bounds).unwrap();
        let quota = Quota {
            memories: 100,
            versions_per_key: 2,
        };
        // The writer held by another account's job, until released.
        let (release, hold) = mpsc::channel::<()>();
        let held = backend.writer.run(Turn::interactive("z"), move |_| {
            hold.recv().ok();
            Ok(())
        });
        assert!(held.now_or_never().is_none(), "queued");
        let items: Vec<Prepared> = (0..2 * BULK_PIECE + 3)
            .map(|n| {
                let input = put("acme", "doc", &format!("draft {n}"));
                (n, None, Ok((input, vec![1.0; 4])))
            })
            .collect();
        let import = backend.import("acme", items, quota);
        assert!(
            import.now_or_never().is_none(),
            "queued behind the held job"
        );
        release.send(()).unwrap();
        // The account's bulk work is written in order: this comes after the import's.
        let after = backend.writer.run(Turn::bulk("acme", 1), |_| Ok(()));
        after.await.unwrap();
        let history = backend.history("acme", "default", "doc", None, 100).await;
        let versions: Vec<(u32, String)> = (history.unwrap().memories.iter())
            .map(|m| (m.version, m.value.clone()))
            .collect();
        let last = 2 * BULK_PIECE as u32 + 3;
        let expected = [
            (last, format!("draft {}", last - 1)),
            (last - 1, format!("draft {}", last - 2)),
        ];
        assert_eq!(versions, expected);
    }
}
