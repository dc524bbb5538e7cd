//! A lane: dedicated threads that coalesce queued embedding jobs into batches and run them,
//! taking the accounts' jobs in turn, at the priority of the work they do.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, mpsc};
use std::time::Instant;

use tokio::sync::oneshot;

use super::{EmbedError, Embedder, Role, quiet::Serving};
use crate::{
    memory::fair::{self, Class},
    metrics::names,
    priority,
};

/// Whose work a lane does: it sets the threads' priority, the embedder's entry and the
/// [`Role`] of the texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Work {
    /// Searches' queries: the API's priority, [`Embedder::embed`], [`Role::Query`].
    Queries,
    /// Puts' texts: the API's priority, [`Embedder::embed`], [`Role::Passage`].
    Requests,
    /// Bulk work (imports, consolidations): background priority (see [`priority`]),
    /// [`Embedder::embed_background`], [`Role::Passage`].
    Background,
}

impl Work {
    /// The role of the texts this work embeds.
    fn role(self) -> Role {
        match self {
            Self::Queries => Role::Query,
            Self::Requests | Self::Background => Role::Passage,
        }
    }
}

/// What a job gets back: one vector per text, in order.
pub(super) type Vectors = Result<Vec<Vec<f32>>, EmbedError>;

/// Where a job's vectors go: an awaiting task, or a thread blocked outside any runtime.
pub(super) enum Reply {
    Async(oneshot::Sender<Vectors>),
    Blocking(mpsc::SyncSender<Vectors>),
}

impl Reply {
    /// Delivers the result; a caller that stopped waiting is not an error.
    fn send(self, result: Vectors) {
        match self {
            Self::Async(tx) => {
                let _ = tx.send(result);
            }
            Self::Blocking(tx) => {
                let _ = tx.send(result);
            }
        }
    }
}

/// Texts to embed (never more than the lane's batch size of their class) and where to send
/// their vectors.
pub(super) struct Job {
    pub(super) texts: Vec<String>,
    pub(super) reply: Reply,
}

/// The sending end of a lane; its threads exit once this is dropped and the queue drains.
pub(super) struct Lane {
    tx: fair::Sender<Job>,
    meters: Meters,
}

/// The lane's metrics, labelled with its name; made once when the lane starts, so its
/// threads record without looking them up.
#[derive(Clone)]
struct Meters {
    /// Texts submitted and not yet taken into a batch.
    queued: metrics::Gauge,
    /// Time each batch took.
    batch: metrics::Histogram,
}

impl Meters {
    fn new(lane: &'static str) -> Self {
        Self {
            queued: metrics::gauge!(names::EMBED_QUEUE, "lane" => lane),
            batch: metrics::histogram!(names::EMBED_BATCH_DURATION, "lane" => lane),
        }
    }
}

impl Lane {
    /// Starts `workers` threads named `embed-{lane}-N` doing `work`, each batching texts
    /// taken from the accounts' queues in turn (see [`fair`]) up to `batch_size[class]`,
    /// with at most `bounds` of them waiting; `lane` labels the lane's metrics. A background
    /// lane's workers after the first wait for `serving` to be quiet before each batch.
    pub(super) fn spawn(
        lane: &'static str,
        embedder: &Arc<dyn Embedder>,
        workers: usize,
        work: Work,
        batch_size: [usize; 2],
        bounds: fair::Bounds,
        serving: &Arc<Serving>,
    ) -> Self {
        let (tx, rx) = fair::channel(bounds);
        let meters = Meters::new(lane);
        let niceness = match work {
            Work::Queries | Work::Requests => None,
            Work::Background => priority::background()
                .inspect_err(|e| tracing::warn!(error = %e, "reading this thread's priority"))
                .ok(),
        };
        for n in 0..workers {
            let (embedder, rx, meters) = (Arc::clone(embedder), rx.clone(), meters.clone());
            // A background lane's workers but its first stand aside while requests come.
            let spare = (work == Work::Background && n > 0).then(|| Arc::clone(serving));
            let name = format!("embed-{lane}-{n}");
            std::thread::Builder::new()
                .name(name.clone())
                .spawn(move || {
                    if let Some(niceness) = niceness {
                        priority::set_own(niceness, &name);
                    }
                    run(&*embedder, work, &rx, batch_size, &meters, spare.as_deref());
                })
                .expect("the OS refused to start an embedding thread");
        }
        Self { tx, meters }
    }

    /// Queues the jobs of one request of `account`, all or none: [`EmbedError::Busy`]
    /// when the account's (or the node's) queue has no room for their texts.
    pub(super) fn submit(
        &self,
        account: &str,
        class: Class,
        jobs: Vec<Job>,
    ) -> Result<(), EmbedError> {
        let jobs: Vec<(usize, Job)> = jobs.into_iter().map(|j| (j.texts.len(), j)).collect();
        // Counted before they are queued, so a worker taking them at once never drives the
        // gauge below zero; uncounted if they are refused.
        let count: usize = jobs.iter().map(|(n, _)| n).sum();
        self.meters.queued.increment(count as f64);
        self.tx.admit(account, class, jobs).map_err(|refused| {
            self.meters.queued.decrement(count as f64);
            EmbedError::from(refused)
        })
    }
}

/// A worker: waits for a job (a spare one first for quiet, see [`Serving`]), adds the jobs
/// queued behind it in turn while they fit, runs the batch.
fn run(
    embedder: &dyn Embedder,
    work: Work,
    rx: &fair::Receiver<Job>,
    batch_size: [usize; 2],
    meters: &Meters,
    spare: Option<&Serving>,
) {
    loop {
        if let Some(serving) = spare {
            serving.wait_quiet();
        }
        let Some(group) = rx.group(batch_size) else {
            break;
        };
        let count: usize = group.iter().map(|(n, _)| n).sum();
        meters.queued.decrement(count as f64);
        let batch = group.into_iter().map(|(_, job)| job).collect();
        run_batch(embedder, work, batch, &meters.batch);
    }
}

/// Embeds all jobs' texts in one call, times it, and hands each job its share.
fn run_batch(embedder: &dyn Embedder, work: Work, batch: Vec<Job>, timer: &metrics::Histogram) {
    let started = Instant::now();
    let texts: Vec<&str> = batch
        .iter()
        .flat_map(|j| &j.texts)
        .map(String::as_str)
        .collect();
    let embed = || match work {
        Work::Queries | Work::Requests => embedder.embed(work.role(), &texts),
        Work::Background => embedder.embed_background(work.role(), &texts),
    };
    let result = catch_unwind(AssertUnwindSafe(embed))
        .unwrap_or_else(|_| Err(EmbedError::Inference("the embedder panicked".to_owned())))
        .and_then(|vecs| {
            if vecs.len() == texts.len() {
                return Ok(vecs);
            }
            let (name, got, want) = (embedder.name(), vecs.len(), texts.len());
            let msg = format!("{name} returned {got} vectors for {want} texts");
            Err(EmbedError::Inference(msg))
        });
    let took = started.elapsed();
    // Before any reply, so a caller that got its vectors finds the batch counted.
    timer.record(took);
    tracing::debug!(
        jobs = batch.len(),
        texts = texts.len(),
        ms = took.as_millis(),
        "embedded batch"
    );
    match result {
        Ok(vecs) => {
            let mut vecs = vecs.into_iter();
            for job in batch {
                let mine = vecs.by_ref().take(job.texts.len()).collect();
                job.reply.send(Ok(mine));
            }
        }
        Err(e) => batch
            .into_iter()
            .for_each(|job| job.reply.send(Err(e.clone()))),
    }
}
