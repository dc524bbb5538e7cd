//! A lane: dedicated threads that coalesce queued embedding jobs into batches and run them.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, mpsc};
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::{EmbedError, Embedder};
use crate::metrics::names;

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

/// Texts to embed (never more than the lane's batch size) and where to send their vectors.
pub(super) struct Job {
    pub(super) texts: Vec<String>,
    pub(super) reply: Reply,
}

/// The sending end of a lane; its threads exit once this is dropped and the queue drains.
pub(super) struct Lane {
    tx: mpsc::Sender<Job>,
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
    /// Starts `workers` threads named `embed-{lane}-N`, each batching up to `batch_size`
    /// texts; `lane` labels the lane's metrics.
    pub(super) fn spawn(
        lane: &'static str,
        embedder: &Arc<dyn Embedder>,
        workers: usize,
        batch_size: usize,
    ) -> Self {
        let (tx, rx) = mpsc::channel();
        let rx = Arc::new(Mutex::new(rx));
        let meters = Meters::new(lane);
        for n in 0..workers {
            let (embedder, rx, meters) = (Arc::clone(embedder), Arc::clone(&rx), meters.clone());
            std::thread::Builder::new()
                .name(format!("embed-{lane}-{n}"))
                .spawn(move || run(&*embedder, &rx, batch_size, &meters))
                .expect("the OS refused to start an embedding thread");
        }
        Self { tx, meters }
    }

    /// Queues a job; if the lane's threads are gone the reply is dropped, which the
    /// waiting caller sees as [`EmbedError::ShutDown`].
    pub(super) fn submit(&self, texts: Vec<String>, reply: Reply) {
        // Counted before it is sent, so a worker taking it at once never drives the gauge
        // below zero; uncounted if no worker is left to take it.
        let count = texts.len() as f64;
        self.meters.queued.increment(count);
        if self.tx.send(Job { texts, reply }).is_err() {
            self.meters.queued.decrement(count);
        }
    }
}

/// A worker: waits for a job, adds whatever else is queued while it fits, runs the batch.
fn run(
    embedder: &dyn Embedder,
    rx: &Mutex<mpsc::Receiver<Job>>,
    batch_size: usize,
    meters: &Meters,
) {
    let mut carry: Option<Job> = None;
    loop {
        let mut batch = Vec::new();
        {
            let rx = rx.lock();
            let first = match carry.take() {
                Some(job) => job,
                None => match rx.recv() {
                    Ok(job) => job,
                    Err(mpsc::RecvError) => return,
                },
            };
            let mut count = first.texts.len();
            batch.push(first);
            while count < batch_size {
                let Ok(job) = rx.try_recv() else { break };
                if count + job.texts.len() > batch_size {
                    carry = Some(job);
                    break;
                }
                count += job.texts.len();
                batch.push(job);
            }
            meters.queued.decrement(count as f64);
        }
        run_batch(embedder, batch, &meters.batch);
    }
}

/// Embeds all jobs' texts in one call, times it, and hands each job its share.
fn run_batch(embedder: &dyn Embedder, batch: Vec<Job>, timer: &metrics::Histogram) {
    let started = Instant::now();
    let texts: Vec<&str> = batch
        .iter()
        .flat_map(|j| &j.texts)
        .map(String::as_str)
        .collect();
    let result = catch_unwind(AssertUnwindSafe(|| embedder.embed(&texts)))
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
