//! The single writer: one thread owns every memory write. It takes whatever jobs have queued,
//! runs them in one redb transaction, commits once (one fsync for the whole group), applies
//! the resulting index changes, and only then answers the callers — so an answered write is
//! durable and visible to the next search. Group commit is what lets 16 concurrent clients
//! share the cost of a commit instead of queueing behind 16 of them.
//!
//! The jobs are taken from the accounts' queues in turn, interactive ones (a put, a
//! delete) before bulk ones (an import, a consolidation: see [`fair`]). A group holds at
//! most [`MAX_GROUP`] rows of interactive work and one bulk job of up to [`BULK_PIECE`]
//! rows, and an import is written in pieces of that size ([`Writer::run_pieces`]), each
//! its own transaction: a put queued behind another account's import of 500 memories is
//! committed after one piece of it, never after the whole import.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use tokio::sync::oneshot;

use super::{
    MemoryError, Result,
    derived::{Changes, Indexes},
    fair::{self, Bounds, Class},
    store::Batch,
};
use crate::clock::now_ms;

/// Most rows (a job's cost: one for a put, the items of an import) one transaction takes,
/// but for a single job bigger than that, which goes alone.
const MAX_GROUP: usize = 256;

/// Most rows of bulk work in one group, and the size of an import's pieces: with the
/// index updates, ~15 ms of the writer's time that another account's put may wait for
/// (500 rows took ~200 ms in one piece: `fair` phase of the memory bench).
pub const BULK_PIECE: usize = 32;

/// The queue of the writer's own upkeep (the checkpoint's oplog truncation).
pub const SYSTEM: &str = "";

type Completion = Box<dyn FnOnce(Option<&str>) + Send>;
type Job = Box<dyn FnOnce(&mut Batch<'_>) -> (Completion, bool) + Send>;

/// Handle to the writer thread; cheap to clone.
#[derive(Clone)]
pub struct Writer {
    jobs: fair::Sender<Job>,
}

/// Whose a write is, its class and its rows.
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    pub account: &'a str,
    pub class: Class,
    pub rows: usize,
}

impl<'a> Turn<'a> {
    /// A request's own write of one row or so (a put, a delete, a touch, a reap).
    pub fn interactive(account: &'a str) -> Self {
        Self {
            account,
            class: Class::Interactive,
            rows: 1,
        }
    }

    /// Bulk work of `rows` rows (an import, a consolidation).
    pub fn bulk(account: &'a str, rows: usize) -> Self {
        Self {
            account,
            class: Class::Bulk,
            rows: rows.max(1),
        }
    }
}

impl Writer {
    /// Starts the writer thread, bulk writes bounded by `bounds` (rows). It ends when the
    /// last handle is dropped.
    pub fn start(db: Arc<redb::Database>, indexes: Arc<Indexes>, bounds: Bounds) -> Self {
        let (jobs, rx) = fair::channel::<Job>(bounds);
        std::thread::Builder::new()
            .name("memory-writer".into())
            .spawn(move || run(&db, &indexes, &rx))
            .expect("spawning the memory writer thread");
        Self { jobs }
    }

    /// Runs `f` inside a group transaction when `turn`'s account's turn comes, and returns
    /// its result once committed. `f` must either succeed or fail without mutating (the
    /// `Batch` operations guarantee it); a storage failure inside `f` aborts the whole
    /// group. Bulk work is refused with [`MemoryError::Busy`] (nothing queued) when the
    /// account's queue has no room for its rows; interactive work is not bounded here:
    /// each request holds at most one such job.
    pub async fn run<T: Send + 'static>(
        &self,
        turn: Turn<'_>,
        f: impl FnOnce(&mut Batch<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.submit(turn, f)?
            .await
            .unwrap_or_else(|_| Err(aborted()))
    }

    /// [`run`](Self::run), then `then` with its outcome on the writer thread once the
    /// group is committed (or failed) and its index changes applied, before the writer
    /// takes its next group: for work on the indexes no write may interleave with (the
    /// re-embedding's flip rebuilds the vector indexes from the rows it committed).
    pub async fn run_then<T: Send + 'static>(
        &self,
        turn: Turn<'_>,
        f: impl FnOnce(&mut Batch<'_>) -> Result<T> + Send + 'static,
        then: impl FnOnce(Result<T>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        let finish = move |outcome| {
            let _ = tx.send(then(outcome));
        };
        self.queue(turn, vec![(turn.rows, job(f, finish, None))])?;
        rx.await.unwrap_or_else(|_| Err(aborted()))
    }

    /// `run` of the writer's own upkeep, for threads outside the async runtime.
    pub fn run_blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Batch<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.submit(Turn::interactive(SYSTEM), f)?
            .blocking_recv()
            .unwrap_or_else(|_| Err(aborted()))
    }

    /// Runs `pieces` of `turn`'s work (bulk, `turn.rows` in all) in order, each in its own
    /// group when its turn comes, queued (or refused) together. A piece returns its result
    /// and whether to go on; the pieces after one that stops or fails are not run. Returns
    /// the results of the pieces that ran, in order, and the error of the one that failed.
    pub async fn run_pieces<T: Send + 'static>(
        &self,
        turn: Turn<'_>,
        pieces: Vec<(usize, Piece<T>)>,
    ) -> Result<(Vec<T>, Option<MemoryError>)> {
        let stop = Arc::new(AtomicBool::new(false));
        let (jobs, pending): (Vec<_>, Vec<_>) = pieces
            .into_iter()
            .map(|(rows, piece)| {
                let (tx, rx) = oneshot::channel();
                let stopped = stop.clone();
                let f = move |batch: &mut Batch<'_>| match stopped.load(Ordering::Acquire) {
                    true => Ok(None),
                    false => piece(batch).map(|(value, go_on)| {
                        stopped.fetch_or(!go_on, Ordering::AcqRel);
                        Some(value)
                    }),
                };
                ((rows, job(f, sender(tx), Some(stop.clone()))), rx)
            })
            .unzip();
        self.queue(turn, jobs)?;
        let mut done = Vec::with_capacity(pending.len());
        for rx in pending {
            match rx.await.unwrap_or_else(|_| Err(aborted())) {
                Ok(Some(value)) => done.push(value),
                Ok(None) => {}
                Err(e) => return Ok((done, Some(e))),
            }
        }
        Ok((done, None))
    }

    fn submit<T: Send + 'static>(
        &self,
        turn: Turn<'_>,
        f: impl FnOnce(&mut Batch<'_>) -> Result<T> + Send + 'static,
    ) -> Result<oneshot::Receiver<Result<T>>> {
        let (tx, rx) = oneshot::channel();
        self.queue(turn, vec![(turn.rows, job(f, sender(tx), None))])?;
        Ok(rx)
    }

    /// Queues one request's jobs: interactive work unbounded, bulk work all or none.
    fn queue(&self, turn: Turn<'_>, jobs: Vec<(usize, Job)>) -> Result<()> {
        let queued = match turn.class {
            Class::Interactive => jobs
                .into_iter()
                .try_for_each(|(rows, job)| self.jobs.push(turn.account, turn.class, rows, job)),
            Class::Bulk => self.jobs.admit(turn.account, turn.class, jobs),
        };
        queued.map_err(|refused| match refused {
            fair::Refused::Full => MemoryError::Busy,
            fair::Refused::Gone => MemoryError::Stopped,
        })
    }
}

/// A piece of [`Writer::run_pieces`]' work: its result, and whether to go on.
pub type Piece<T> = Box<dyn FnOnce(&mut Batch<'_>) -> Result<(T, bool)> + Send>;

/// Sends a job's outcome to its caller.
fn sender<T: Send + 'static>(tx: oneshot::Sender<Result<T>>) -> impl FnOnce(Result<T>) + Send {
    move |outcome| {
        let _ = tx.send(outcome);
    }
}

/// The writer's job for `f`: runs it in the group's transaction and, once the group is
/// committed (or not), gives its outcome to `finish`. A failed outcome sets `stop` at once,
/// or, when the group fails to commit, before the writer takes its next group: the pieces
/// queued after it are not run.
fn job<T: Send + 'static>(
    f: impl FnOnce(&mut Batch<'_>) -> Result<T> + Send + 'static,
    finish: impl FnOnce(Result<T>) + Send + 'static,
    stop: Option<Arc<AtomicBool>>,
) -> Job {
    Box::new(move |batch| {
        let result = f(batch);
        if let (Err(_), Some(stop)) = (&result, &stop) {
            stop.store(true, Ordering::Release);
        }
        let fatal = matches!(
            result,
            Err(MemoryError::Storage(_) | MemoryError::Corrupt(_))
        );
        let complete: Completion = Box::new(move |failure| {
            let outcome = match failure {
                None => result,
                Some(why) => Err(MemoryError::WriteFailed(why.to_string())),
            };
            if let (Err(_), Some(stop)) = (&outcome, stop) {
                stop.store(true, Ordering::Release);
            }
            finish(outcome);
        });
        (complete, fatal)
    })
}

fn aborted() -> MemoryError {
    MemoryError::WriteFailed("write aborted".into())
}

fn run(db: &redb::Database, indexes: &Indexes, rx: &fair::Receiver<Job>) {
    while let Some(group) = rx.group([MAX_GROUP, BULK_PIECE]) {
        let jobs = group.into_iter().map(|(_, job)| job).collect();
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

type Committed = (Vec<Completion>, Changes, u64);

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

#[cfg(test)]
mod tests {
    use parking_lot::Mutex;

    use super::*;
    use crate::memory::store;

    /// A writer over a fresh data dir, whose bulk work one account may queue 10 rows of.
    fn writer(dir: &tempfile::TempDir) -> Writer {
        let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
        store::init(&db).unwrap();
        let indexes = Arc::new(Indexes::open(&dir.path().join("index"), 8, &db).unwrap());
        let bounds = Bounds {
            per_account: 10,
            total: 100,
        };
        Writer::start(db, indexes, bounds)
    }

    /// A put queued behind another account's bulk work is written first; bulk work past
    /// the account's bound is refused; what is queued is written in turn.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_put_is_written_before_bulk_work_queued_earlier_and_a_full_queue_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let writer = writer(&dir);
        let log = Arc::new(Mutex::new(Vec::new()));
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let (started, holding) = oneshot::channel();
        let held = writer.submit(Turn::interactive("z"), move |_| {
            let _ = started.send(());
            hold.recv().ok();
            Ok(())
        });
        holding.await.unwrap();
        let job = |name: &'static str| {
            let log = log.clone();
            move |_: &mut Batch<'_>| -> Result<()> {
                log.lock().push(name);
                Ok(())
            }
        };
        let import_1 = writer
            .submit(Turn::bulk("a", 8), job("a import 1"))
            .unwrap();
        let import_2 = writer
            .submit(Turn::bulk("a", 2), job("a import 2"))
            .unwrap();
        let refused = writer.submit(Turn::bulk("a", 1), job("a refused"));
        assert!(matches!(refused, Err(MemoryError::Busy)));
        let put = writer.submit(Turn::interactive("b"), job("b put")).unwrap();
        release.send(()).unwrap();
        held.unwrap().await.unwrap().unwrap();
        for done in [put, import_1, import_2] {
            done.await.unwrap().unwrap();
        }
        assert_eq!(*log.lock(), ["b put", "a import 1", "a import 2"]);
    }

    /// An import's pieces are written one group each, so a put queued while the first is
    /// written goes before the second; a piece that says stop leaves the rest unrun.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_put_goes_between_the_pieces_of_bulk_work_and_a_stop_ends_them() {
        let dir = tempfile::tempdir().unwrap();
        let writer = writer(&dir);
        let log = Arc::new(Mutex::new(Vec::new()));
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let (started, holding) = oneshot::channel();
        let piece = |n: usize, go_on: bool| -> (usize, Piece<usize>) {
            let log = log.clone();
            (
                2,
                Box::new(move |_| {
                    log.lock().push(format!("a piece {n}"));
                    Ok((n, go_on))
                }),
            )
        };
        let mut pieces = vec![piece(2, false), piece(3, true)];
        let first_log = log.clone();
        let first: Piece<usize> = Box::new(move |_| {
            let _ = started.send(());
            hold.recv().ok();
            first_log.lock().push("a piece 1".to_string());
            Ok((1, true))
        });
        pieces.insert(0, (BULK_PIECE, first));
        let import = {
            let writer = writer.clone();
            tokio::spawn(async move {
                writer
                    .run_pieces(Turn::bulk("a", 3 * BULK_PIECE), pieces)
                    .await
            })
        };
        holding.await.unwrap();
        let put_log = log.clone();
        let put = writer
            .submit(Turn::interactive("b"), move |_| {
                put_log.lock().push("b put".to_string());
                Ok(())
            })
            .unwrap();
        release.send(()).unwrap();
        put.await.unwrap().unwrap();
        let (done, failed) = import.await.unwrap().unwrap();
        assert_eq!((done, failed.is_none()), (vec![1, 2], true));
        assert_eq!(*log.lock(), ["a piece 1", "b put", "a piece 2"]);
    }

    /// A piece that fails ends the work: the error is returned with what ran before it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_piece_leaves_the_rest_unrun() {
        let dir = tempfile::tempdir().unwrap();
        let writer = writer(&dir);
        let ran = Arc::new(Mutex::new(0));
        let pieces: Vec<(usize, Piece<u32>)> = (1..=3)
            .map(|n| {
                let ran = ran.clone();
                let piece: Piece<u32> = Box::new(move |_| {
                    *ran.lock() += 1;
                    match n {
                        2 => Err(MemoryError::Busy),
                        _ => Ok((n, true)),
                    }
                });
                (1, piece)
            })
            .collect();
        let (done, failed) = writer.run_pieces(Turn::bulk("a", 3), pieces).await.unwrap();
        assert_eq!(done, [1]);
        assert!(matches!(failed, Some(MemoryError::Busy)), "{failed:?}");
        assert_eq!(*ran.lock(), 2);
    }
}
