//! The single writer: one thread owns every memory write. It takes whatever jobs have queued,
//! runs them in one redb transaction, commits once (one fsync for the whole group), applies
//! the resulting index changes, and only then answers the callers — so an answered write is
//! durable and visible to the next search. Group commit is what lets 16 concurrent clients
//! share the cost of a commit instead of queueing behind 16 of them.

use std::sync::{Arc, mpsc};

use tokio::sync::oneshot;

use super::{MemoryError, Result, derived::Indexes, index::IndexOp, store::Batch};
use crate::clock::now_ms;

/// Most jobs folded into one transaction.
const MAX_GROUP: usize = 256;

type Completion = Box<dyn FnOnce(Option<&str>) + Send>;
type Job = Box<dyn FnOnce(&mut Batch<'_>) -> (Completion, bool) + Send>;

/// Handle to the writer thread; cheap to clone.
#[derive(Clone)]
pub struct Writer {
    jobs: mpsc::Sender<Job>,
}

impl Writer {
    /// Starts the writer thread. It ends when the last handle is dropped.
    pub fn start(db: Arc<redb::Database>, indexes: Arc<Indexes>) -> Self {
        let (jobs, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("memory-writer".into())
            .spawn(move || run(&db, &indexes, &rx))
            .expect("spawning the memory writer thread");
        Self { jobs }
    }

    /// Runs `f` inside the next group transaction and returns its result once committed.
    /// `f` must either succeed or fail without mutating (the `Batch` operations guarantee
    /// it); a storage failure inside `f` aborts the whole group.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Batch<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.submit(f)?.await.unwrap_or_else(|_| Err(aborted()))
    }

    /// `run` for threads outside the async runtime.
    pub fn run_blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Batch<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.submit(f)?
            .blocking_recv()
            .unwrap_or_else(|_| Err(aborted()))
    }

    fn submit<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Batch<'_>) -> Result<T> + Send + 'static,
    ) -> Result<oneshot::Receiver<Result<T>>> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |batch| {
            let result = f(batch);
            let fatal = matches!(
                result,
                Err(MemoryError::Storage(_) | MemoryError::Corrupt(_))
            );
            let complete: Completion = Box::new(move |failure| {
                let outcome = match failure {
                    None => result,
                    Some(why) => Err(MemoryError::WriteFailed(why.to_string())),
                };
                let _ = tx.send(outcome);
            });
            (complete, fatal)
        });
        self.jobs.send(job).map_err(|_| MemoryError::Stopped)?;
        Ok(rx)
    }
}

fn aborted() -> MemoryError {
    MemoryError::WriteFailed("write aborted".into())
}

fn run(db: &redb::Database, indexes: &Indexes, rx: &mpsc::Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        while jobs.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        match commit_group(db, jobs) {
            Ok((completions, ops, seq)) => {
                if !ops.is_empty()
                    && let Err(e) = indexes.apply(&ops, seq)
                {
                    // The rows are durable; the oplog replays them into the indexes at the
                    // next start. Searches miss them until then, so say so loudly.
                    tracing::error!(error = %e, "index update failed after commit");
                }
                for complete in completions {
                    complete(None);
                }
            }
            Err((completions, e)) => {
                tracing::error!(error = %e, "memory write group failed");
                for complete in completions {
                    complete(Some("the write could not be committed"));
                }
            }
        }
    }
}

type Committed = (Vec<Completion>, Vec<IndexOp>, u64);

fn commit_group(
    db: &redb::Database,
    jobs: Vec<Job>,
) -> std::result::Result<Committed, (Vec<Completion>, MemoryError)> {
    let txn = match db.begin_write() {
        Ok(txn) => txn,
        Err(e) => return Err((Vec::new(), e.into())),
    };
    let mut batch = match Batch::open(&txn, now_ms()) {
        Ok(b) => b,
        Err(e) => return Err((Vec::new(), e)),
    };
    let mut completions = Vec::with_capacity(jobs.len());
    let mut fatal = false;
    for job in jobs {
        let (complete, failed) = job(&mut batch);
        fatal |= failed;
        completions.push(complete);
    }
    if fatal {
        return Err((
            completions,
            MemoryError::WriteFailed("storage error in group".into()),
        ));
    }
    let (ops, seq) = match batch.finish() {
        Ok(v) => v,
        Err(e) => return Err((completions, e)),
    };
    match txn.commit() {
        Ok(()) => Ok((completions, ops, seq)),
        Err(e) => Err((completions, e.into())),
    }
}
