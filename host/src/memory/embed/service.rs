//! Runs an embedder on dedicated threads: a bulk lane for storage, a query lane for search.

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::{Arc, mpsc};

use lru::LruCache;
use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::lane::{Job, Lane, Reply, Vectors, Work};
use super::quiet::{QUIET, Request, Serving};
use super::rerank::{Reranker, RerankerFiles};
use super::{EmbedError, Embedder, EmbedderConfig};
use crate::memory::fair::{Bounds, Class};
use crate::memory::search::Fusion;

/// Runs an Embedder on dedicated threads, off the async runtime. Clone-able handle (Arc inside).
///
/// Three lanes, each with its own threads, so no kind of work waits behind another's batch:
/// the bulk lane (`threads` workers, at background priority: see [`priority`]) embeds
/// imports' and consolidations' texts in batches of `bulk_batch_size` (all but its first
/// worker standing aside while puts and searches are served: see [`Serving`]); the interactive
/// lane (`threads` workers) coalesces concurrent puts' texts into batches of up to
/// `batch_size`; the query lane (one worker) embeds searches' queries, with an LRU cache
/// of `query_cache` entries. In each lane the accounts' jobs are taken in turn, and at most
/// `queue_per_account` texts of an account wait (see [`fair`](crate::memory::fair)).
/// The threads exit when the last handle is dropped.
///
/// [`priority`]: crate::priority
#[derive(Clone)]
pub struct EmbedService {
    inner: Arc<Inner>,
}

struct Inner {
    embedder: Arc<dyn Embedder>,
    /// Most texts in one batch, by class (interactive, bulk).
    batch_size: [usize; 2],
    bulk: Lane,
    interactive: Lane,
    query: Lane,
    cache: Option<Mutex<LruCache<String, Arc<Vec<f32>>>>>,
    /// The cross-encoder's lane, for searches that ask to rerank.
    reranker: Option<Reranker>,
    /// Puts and searches being served, which the bulk lane's spare workers wait out.
    serving: Arc<Serving>,
}

impl EmbedService {
    /// Starts the lanes' threads for `embedder`, sized by `cfg` (threads, batch_size,
    /// query_cache), without a reranker: [`rerank`](Self::rerank) fails.
    pub fn new(embedder: Arc<dyn Embedder>, cfg: &EmbedderConfig) -> Self {
        Self::with_reranker(embedder, cfg, None)
    }

    /// [`new`](Self::new), with the cross-encoder at `reranker` for searches that ask to
    /// rerank (its lane starts at the first).
    pub fn with_reranker(
        embedder: Arc<dyn Embedder>,
        cfg: &EmbedderConfig,
        reranker: Option<RerankerFiles>,
    ) -> Self {
        Self::build(embedder, cfg, reranker, Arc::new(Serving::new(QUIET)))
    }

    /// [`with_reranker`](Self::with_reranker) for another embedder whose bulk lane stands
    /// aside for the requests this service serves (see [`Serving`]): a re-embedding's
    /// target, which embeds in bulk while this one serves, and serves after it.
    pub fn alongside(
        &self,
        embedder: Arc<dyn Embedder>,
        cfg: &EmbedderConfig,
        reranker: Option<RerankerFiles>,
    ) -> Self {
        Self::build(embedder, cfg, reranker, self.inner.serving.clone())
    }

    fn build(
        embedder: Arc<dyn Embedder>,
        cfg: &EmbedderConfig,
        reranker: Option<RerankerFiles>,
        serving: Arc<Serving>,
    ) -> Self {
        let batch_size = [
            cfg.batch_size.max(1),
            cfg.bulk_batch_size.clamp(1, cfg.batch_size.max(1)),
        ];
        let bounds = Bounds {
            per_account: cfg.queue_per_account.max(1),
            total: cfg.queue_total.max(1),
        };
        let lane = |name, workers, work| {
            Lane::spawn(name, &embedder, workers, work, batch_size, bounds, &serving)
        };
        let inner = Inner {
            bulk: lane("bulk", cfg.threads.max(1), Work::Background),
            interactive: lane("interactive", cfg.threads.max(1), Work::Requests),
            query: lane("query", 1, Work::Queries),
            cache: NonZeroUsize::new(cfg.query_cache).map(|n| Mutex::new(LruCache::new(n))),
            embedder,
            batch_size,
            reranker: reranker.map(Reranker::new),
            serving,
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Length of every vector this service returns.
    pub fn dims(&self) -> usize {
        self.inner.embedder.dims()
    }

    /// The embedder's name, for logs.
    pub fn name(&self) -> &str {
        self.inner.embedder.name()
    }

    /// The hybrid search's weights for this embedder's cosines.
    pub fn fusion(&self) -> Fusion {
        self.inner.embedder.fusion()
    }

    /// Counts a put or a search as being served until the guard is dropped: the bulk lane
    /// then runs on its first worker only (see [`Serving`]).
    pub fn request(&self) -> Request<'_> {
        self.inner.serving.request()
    }

    /// Texts for storage, of `account`'s work of `class`: a put's on the interactive lane,
    /// an import's on the bulk lane. Concurrent callers' texts are coalesced into one batch
    /// (up to the class's batch size) — whatever has queued while the previous batch ran,
    /// the accounts' jobs in turn — so 16 concurrent writers cost ~one batched inference,
    /// not 16 sequential ones.
    ///
    /// Returns one unit vector per text, in order; [`EmbedError::Busy`] (nothing queued)
    /// when the account's queue in the lane has no room for them.
    pub async fn embed_documents(
        &self,
        account: &str,
        class: Class,
        texts: Vec<String>,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let (chunks, order) = self.chunks(texts, class);
        let (jobs, pending): (Vec<_>, Vec<_>) = chunks
            .into_iter()
            .map(|texts| {
                let (tx, rx) = oneshot::channel();
                let reply = Reply::Async(tx);
                (Job { texts, reply }, rx)
            })
            .unzip();
        let lane = match class {
            Class::Interactive => &self.inner.interactive,
            Class::Bulk => &self.inner.bulk,
        };
        lane.submit(account, class, jobs)?;
        let mut out = Vec::with_capacity(order.len());
        for rx in pending {
            out.extend(rx.await.map_err(|_| EmbedError::ShutDown)??);
        }
        Ok(in_order(out, &order))
    }

    /// Query lane: one text of `account`'s, its own thread (so a search never waits behind
    /// storage texts), LRU-cached by exact text.
    pub async fn embed_query(
        &self,
        account: &str,
        text: &str,
    ) -> Result<Arc<Vec<f32>>, EmbedError> {
        if let Some(hit) = self.cached(text) {
            return Ok(hit);
        }
        let (tx, rx) = oneshot::channel();
        let job = Job {
            texts: vec![text.to_owned()],
            reply: Reply::Async(tx),
        };
        let class = Class::Interactive;
        self.inner.query.submit(account, class, vec![job])?;
        let vector = Arc::new(single(rx.await.map_err(|_| EmbedError::ShutDown)?)?);
        if let Some(cache) = &self.inner.cache {
            cache.lock().put(text.to_owned(), Arc::clone(&vector));
        }
        Ok(vector)
    }

    /// How relevant each of `passages` is to `query` by the cross-encoder, in order (its
    /// logits), as `account`'s work on the reranking lane; [`EmbedError::Busy`] when
    /// `account` already has searches waiting there.
    pub async fn rerank(
        &self,
        account: &str,
        query: &str,
        passages: Vec<String>,
    ) -> Result<Vec<f32>, EmbedError> {
        let Some(reranker) = &self.inner.reranker else {
            return Err(EmbedError::Load(
                "this server was started without a cross-encoder, so it cannot rerank".into(),
            ));
        };
        reranker.scores(account, query.to_owned(), passages).await
    }

    /// Synchronous bulk embedding for start-up/offline use (no async runtime needed), as
    /// `account`'s bulk work.
    ///
    /// Blocks the calling thread until done, so do not call it on an async worker thread.
    pub fn embed_documents_blocking(
        &self,
        account: &str,
        texts: Vec<String>,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let (chunks, order) = self.chunks(texts, Class::Bulk);
        let (jobs, pending): (Vec<_>, Vec<_>) = chunks
            .into_iter()
            .map(|texts| {
                let (tx, rx) = mpsc::sync_channel(1);
                let reply = Reply::Blocking(tx);
                (Job { texts, reply }, rx)
            })
            .unzip();
        self.inner.bulk.submit(account, Class::Bulk, jobs)?;
        let mut out = Vec::with_capacity(order.len());
        for rx in pending {
            out.extend(rx.recv().map_err(|_| EmbedError::ShutDown)??);
        }
        Ok(in_order(out, &order))
    }

    /// Splits `texts` into jobs no bigger than one batch of `class`, shortest texts first,
    /// and says where each text came from (`order[k]` is the input index of the `k`-th
    /// text sent).
    ///
    /// A batch runs padded to its longest text, so batching texts of like length saves the
    /// padding: LoCoMo's conversation turns in input order embed at 166/s, sorted at 2×.
    fn chunks(&self, texts: Vec<String>, class: Class) -> (Vec<Vec<String>>, Vec<usize>) {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut texts: Vec<Option<String>> = texts.into_iter().map(Some).collect();
        let chunks = order
            .chunks(self.inner.batch_size[class as usize])
            .map(|chunk| chunk.iter().filter_map(|&i| texts[i].take()).collect())
            .collect();
        (chunks, order)
    }

    fn cached(&self, text: &str) -> Option<Arc<Vec<f32>>> {
        self.inner.cache.as_ref()?.lock().get(text).cloned()
    }
}

/// `vectors` (in the order [`EmbedService::chunks`] sent the texts) back in input order.
fn in_order(vectors: Vec<Vec<f32>>, order: &[usize]) -> Vec<Vec<f32>> {
    let mut out = vec![Vec::new(); order.len()];
    for (&i, vector) in order.iter().zip(vectors) {
        out[i] = vector;
    }
    out
}

/// The one vector of a one-text job.
fn single(result: Vectors) -> Result<Vec<f32>, EmbedError> {
    result?
        .pop()
        .ok_or_else(|| EmbedError::Inference("no vector for the query".to_owned()))
}

impl fmt::Debug for EmbedService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbedService")
            .field("embedder", &self.name())
            .field("dims", &self.dims())
            .field("batch_size", &self.inner.batch_size)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Waker};
    use std::time::Duration;

    use tokio::sync::Notify;

    use super::*;
    use crate::memory::embed::{HashEmbedder, Role, from_config};

    fn cfg(threads: usize, batch_size: usize) -> EmbedderConfig {
        EmbedderConfig {
            threads,
            batch_size,
            ..EmbedderConfig::default()
        }
    }

    /// A hash embedder that records each call, can be held (and says when it is), and fails
    /// or panics on cue.
    struct Probe {
        inner: HashEmbedder,
        calls: AtomicUsize,
        /// The texts of each call, in order.
        batches: Mutex<Vec<Vec<String>>>,
        hold: Mutex<mpsc::Receiver<()>>,
        /// Notified when a worker is inside a held call.
        held: Notify,
    }

    impl Probe {
        fn new() -> (Arc<Self>, mpsc::Sender<()>) {
            let (tx, rx) = mpsc::channel();
            let probe = Self {
                inner: HashEmbedder::new(64),
                calls: AtomicUsize::new(0),
                batches: Mutex::new(Vec::new()),
                hold: Mutex::new(rx),
                held: Notify::new(),
            };
            (Arc::new(probe), tx)
        }
    }

    impl Embedder for Probe {
        fn name(&self) -> &str {
            "probe"
        }
        fn dims(&self) -> usize {
            self.inner.dims()
        }
        fn embed(&self, role: Role, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let texts_owned = texts.iter().map(|t| t.to_string()).collect();
            self.batches.lock().push(texts_owned);
            if texts.contains(&"hold") {
                self.held.notify_one();
                let _ = self.hold.lock().recv();
            }
            if texts.contains(&"fail") {
                return Err(EmbedError::Inference("asked to fail".to_owned()));
            }
            assert!(!texts.contains(&"panic"), "asked to panic");
            std::thread::sleep(Duration::from_millis(5));
            self.inner.embed(role, texts)
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_documents_are_correct_and_coalesced() {
        let (probe, release) = Probe::new();
        let service = EmbedService::new(probe.clone(), &cfg(1, 64));
        // Hold the worker so the 16 writers below queue up behind it.
        let held = tokio::spawn({
            let service = service.clone();
            async move {
                let hold = vec!["hold".to_owned()];
                service.embed_documents("a", Class::Interactive, hold).await
            }
        });
        probe.held.notified().await;
        let texts: Vec<_> = (0..16)
            .map(|i| vec![format!("note {i} about cats"), format!("deploy {i}")])
            .collect();
        let mut writers: Vec<_> = texts
            .iter()
            .map(|t| Box::pin(service.embed_documents("a", Class::Interactive, t.clone())))
            .collect();
        // A writer queues its texts on its first poll: poll each once, and all 16 are queued
        // behind the held call before it is released (no guessing how long that takes).
        let mut cx = Context::from_waker(Waker::noop());
        for writer in &mut writers {
            assert!(writer.as_mut().poll(&mut cx).is_pending());
        }
        release.send(()).unwrap();
        held.await.unwrap().unwrap();
        for (writer, texts) in writers.into_iter().zip(&texts) {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            assert_eq!(
                writer.await.unwrap(),
                probe.inner.embed(Role::Passage, &refs).unwrap()
            );
        }
        // One held call, then all 32 queued texts in one batch.
        assert_eq!(probe.calls.load(Ordering::SeqCst), 2);
    }

    /// A put is embedded while another account's import waits for the bulk lane; an
    /// account with its bound of texts waiting in a lane is refused there.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_put_never_waits_behind_another_accounts_import_and_a_full_queue_refuses() {
        let (probe, release) = Probe::new();
        let cfg = EmbedderConfig {
            queue_per_account: 6,
            ..cfg(1, 2)
        };
        let service = EmbedService::new(probe.clone(), &cfg);
        let held = tokio::spawn({
            let service = service.clone();
            async move {
                let hold = vec!["hold".to_owned()];
                service.embed_documents("z", Class::Bulk, hold).await
            }
        });
        probe.held.notified().await;
        let texts: Vec<String> = (0..6).map(|i| format!("import {i}")).collect();
        let mut import = Box::pin(service.embed_documents("a", Class::Bulk, texts));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(import.as_mut().poll(&mut cx).is_pending());
        let put = vec!["b put".to_owned()];
        let put = service.embed_documents("b", Class::Interactive, put);
        let put = tokio::time::timeout(Duration::from_secs(10), put).await;
        assert_eq!(
            put.expect("the put waited for the bulk lane")
                .unwrap()
                .len(),
            1
        );
        let more = vec!["one more".to_owned()];
        let refused = service.embed_documents("a", Class::Bulk, more).await;
        assert!(matches!(refused, Err(EmbedError::Busy)), "{refused:?}");
        release.send(()).unwrap();
        held.await.unwrap().unwrap();
        assert_eq!(import.await.unwrap().len(), 6);
        let batches = probe.batches.lock().clone();
        let sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
        assert_eq!(batches[1], ["b put"], "{batches:?}");
        assert_eq!(sizes, [1, 1, 2, 2, 2], "the import in chunks of a batch");
    }

    /// Records the niceness of the thread each call runs on, by which entry, for which role.
    #[derive(Default)]
    struct Niceness(Mutex<Vec<(&'static str, Role, i32)>>);

    impl Embedder for Niceness {
        fn name(&self) -> &str {
            "niceness"
        }
        fn dims(&self) -> usize {
            1
        }
        fn embed(&self, role: Role, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.0.lock().push(("embed", role, crate::priority::own()));
            Ok(vec![vec![1.0]; texts.len()])
        }
        fn embed_background(
            &self,
            role: Role,
            texts: &[&str],
        ) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.0
                .lock()
                .push(("background", role, crate::priority::own()));
            Ok(vec![vec![1.0]; texts.len()])
        }
    }

    /// Bulk texts are embedded on threads of background priority through the embedder's
    /// background entry; puts' and queries' texts at the caller's priority. Queries are
    /// embedded as queries, everything stored as passages.
    #[tokio::test]
    async fn bulk_work_runs_at_background_priority_and_requests_do_not() {
        let calls = Arc::new(Niceness::default());
        let service = EmbedService::new(calls.clone(), &cfg(2, 8));
        let text = || vec!["text".to_owned()];
        service
            .embed_documents("a", Class::Bulk, text())
            .await
            .unwrap();
        service
            .embed_documents("a", Class::Interactive, text())
            .await
            .unwrap();
        service.embed_query("a", "query").await.unwrap();
        let (own, background) = (
            crate::priority::own(),
            crate::priority::background().unwrap(),
        );
        assert_ne!(
            own, background,
            "the test runs at the lowest priority already"
        );
        let expected = [
            ("background", Role::Passage, background),
            ("embed", Role::Passage, own),
            ("embed", Role::Query, own),
        ];
        assert_eq!(*calls.0.lock(), expected);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn query_is_cached_and_never_waits_behind_bulk() {
        let (probe, release) = Probe::new();
        let service = EmbedService::new(probe.clone(), &cfg(1, 32));
        let held = tokio::spawn({
            let service = service.clone();
            async move {
                service
                    .embed_documents("a", Class::Bulk, vec!["hold".to_owned()])
                    .await
            }
        });
        probe.held.notified().await;
        let wait = Duration::from_secs(10);
        let first = tokio::time::timeout(wait, service.embed_query("a", "where is the key"));
        let first = first.await.expect("query waited behind bulk").unwrap();
        let second = service.embed_query("a", "where is the key").await.unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(*first, probe.inner.embed_one("where is the key"));
        release.send(()).unwrap();
        held.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn failures_reach_every_caller_and_the_lane_survives() {
        let (probe, _release) = Probe::new();
        let service = EmbedService::new(probe.clone(), &cfg(1, 32));
        let err = service
            .embed_documents("a", Class::Bulk, vec!["fail".to_owned()])
            .await;
        assert!(matches!(err, Err(EmbedError::Inference(_))));
        let err = service
            .embed_documents("a", Class::Bulk, vec!["panic".to_owned()])
            .await;
        assert!(matches!(err, Err(EmbedError::Inference(_))));
        let ok = service
            .embed_documents("a", Class::Bulk, vec!["fine".to_owned(), "also".to_owned()])
            .await;
        assert_eq!(ok.unwrap().len(), 2);
        assert!(
            service
                .embed_documents("a", Class::Bulk, Vec::new())
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lanes_meter_their_queue_and_batches() {
        use crate::metrics::{names, testing::capture};
        let (probe, release) = Probe::new();
        let (service, meters) = capture(|| EmbedService::new(probe.clone(), &cfg(1, 64)));
        let held = tokio::spawn({
            let service = service.clone();
            async move {
                service
                    .embed_documents("a", Class::Bulk, vec!["hold".to_owned()])
                    .await
            }
        });
        probe.held.notified().await;
        let texts = vec!["one".to_owned(), "two".to_owned(), "three".to_owned()];
        let mut waiting = Box::pin(service.embed_documents("a", Class::Bulk, texts));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(waiting.as_mut().poll(&mut cx).is_pending());
        let bulk = [("lane", "bulk")];
        let queued = meters.snapshot().gauge(names::EMBED_QUEUE, &bulk);
        assert_eq!(queued, Some(3.0), "three texts wait behind the held batch");
        release.send(()).unwrap();
        held.await.unwrap().unwrap();
        waiting.await.unwrap();
        service.embed_query("a", "where is the key").await.unwrap();
        let got = meters.snapshot();
        // A snapshot consumes what it reports: this one sees the three leave the queue.
        assert_eq!(got.gauge(names::EMBED_QUEUE, &bulk), Some(-3.0));
        let batches = got.histogram(names::EMBED_BATCH_DURATION, &bulk).unwrap();
        assert_eq!(batches.len(), 2, "the held batch and the one after it");
        let query = [("lane", "query")];
        assert_eq!(got.gauge(names::EMBED_QUEUE, &query), Some(0.0));
        let queries = got.histogram(names::EMBED_BATCH_DURATION, &query).unwrap();
        assert_eq!(queries.len(), 1);
    }

    /// A re-embedding's target counts the serving service's requests as its own: its bulk
    /// lane stands aside for them; it embeds with its own model, and caches its own queries.
    #[tokio::test]
    async fn a_service_alongside_shares_the_requests_but_not_the_model() {
        let serving = EmbedService::new(Arc::new(HashEmbedder::new(8)), &cfg(1, 4));
        let target = serving.alongside(Arc::new(HashEmbedder::new(16)), &cfg(1, 4), None);
        assert!(Arc::ptr_eq(&serving.inner.serving, &target.inner.serving));
        assert_eq!((serving.dims(), target.dims()), (8, 16));
        let query = target.embed_query("a", "where").await.unwrap();
        assert_eq!(query.len(), 16);
        assert!(serving.cached("where").is_none());
    }

    #[test]
    fn blocking_splits_large_inputs_and_threads_exit_on_drop() {
        let (probe, _release) = Probe::new();
        let service = EmbedService::new(probe.clone(), &cfg(2, 4));
        let texts: Vec<String> = (0..10).map(|i| format!("text number {i}")).collect();
        let got = service
            .embed_documents_blocking("a", texts.clone())
            .unwrap();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        assert_eq!(got, probe.inner.embed(Role::Passage, &refs).unwrap());
        assert!(
            probe.calls.load(Ordering::SeqCst) >= 3,
            "batches hold at most 4 texts"
        );
        drop(service);
        let probe: Arc<dyn Embedder> = probe;
        for _ in 0..500 {
            if Arc::strong_count(&probe) == 1 {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("embedding threads still hold the embedder after the service was dropped");
    }

    /// Texts are batched shortest first (less padding), and each answer still lands at its
    /// text's place.
    #[test]
    fn texts_batched_by_length_are_answered_in_input_order() {
        let (probe, _release) = Probe::new();
        let service = EmbedService::new(probe.clone(), &cfg(1, 3));
        let texts: Vec<String> = [9, 1, 5, 12, 3, 7, 2, 11, 4]
            .iter()
            .map(|n| format!("{n} {}", "word ".repeat(*n)))
            .collect();
        let got = service
            .embed_documents_blocking("a", texts.clone())
            .unwrap();
        for (text, vector) in texts.iter().zip(&got) {
            assert_eq!(
                *vector,
                probe.inner.embed(Role::Passage, &[text.as_str()]).unwrap()[0],
                "{text}"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_default_models_service_matches_direct_embedding() {
        let model = from_config(&EmbedderConfig::default())
            .unwrap_or_else(|e| panic!("{e} (run scripts/setup)"));
        let service = EmbedService::new(model.clone(), &EmbedderConfig::default());
        assert_eq!((service.name(), service.dims()), (model.name(), 384));
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let service = service.clone();
                let text = format!("Memory number {i}: the build server restarts at {i} am");
                tokio::spawn(async move {
                    (
                        service
                            .embed_documents("a", Class::Bulk, vec![text.clone()])
                            .await,
                        text,
                    )
                })
            })
            .collect();
        for task in tasks {
            let (got, text) = task.await.unwrap();
            let direct = model.embed(Role::Passage, &[&text]).unwrap();
            let got = got.unwrap();
            let diff = got[0].iter().zip(&direct[0]).map(|(a, b)| (a - b).abs());
            assert!(diff.fold(0.0, f32::max) < 1e-4, "{text}");
        }
    }
}
