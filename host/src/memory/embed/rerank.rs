//! The reranking lane: one thread running the [`CrossEncoder`], taking the accounts'
//! searches in turn (see [`fair`]), with a short bounded queue.
//!
//! The model is loaded by the lane's thread at its first search, not at start: a server
//! whose users never ask for `rerank` spends neither the ~40 MB nor the load time. Its
//! files are checked at start ([`locate`]), so a missing model fails the start, not a
//! search.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::OnceLock;

use tokio::sync::oneshot;

use super::cross::{self, CrossEncoder};
use super::tokens::require_files;
use super::{EmbedError, EmbedderConfig, locate};
use crate::memory::fair::{self, Bounds, Class};

/// Searches one account may have waiting for the cross-encoder, and all accounts together;
/// past them a search is refused (503 `temporarily_unavailable`) rather than left to wait
/// seconds behind others (each takes ~0.1–0.3 s here).
const QUEUED: Bounds = Bounds {
    per_account: 4,
    total: 32,
};

/// Where the cross-encoder's files are, checked to exist.
#[derive(Debug, Clone)]
pub struct RerankerFiles {
    library: PathBuf,
    dir: PathBuf,
    threads: usize,
}

/// Finds the configured cross-encoder (`[embedder] rerank_model_dir`, else
/// `models/ms-marco-MiniLM-L-12-v2-int8` of the wasmind home) and the ONNX Runtime library,
/// and checks the model's files are there.
pub fn locate_reranker(cfg: &EmbedderConfig) -> Result<RerankerFiles, EmbedError> {
    let library = locate::library(cfg.onnxruntime.as_deref(), locate::ONNXRUNTIME)?;
    let dir = locate::resolve(cfg.rerank_model_dir.as_deref(), cross::DEFAULT_DIR)?;
    require_files(&dir, cross::FILES, cross::PACKAGE)?;
    Ok(RerankerFiles {
        library,
        dir,
        threads: cfg.threads.max(1),
    })
}

/// One search's passages to score, and where the scores go.
struct Job {
    query: String,
    passages: Vec<String>,
    reply: oneshot::Sender<Result<Vec<f32>, EmbedError>>,
}

/// The lane, started at its first use.
pub(super) struct Reranker {
    files: RerankerFiles,
    lane: OnceLock<fair::Sender<Job>>,
}

impl Reranker {
    pub(super) fn new(files: RerankerFiles) -> Self {
        Self {
            files,
            lane: OnceLock::new(),
        }
    }

    /// The cross-encoder's logit for each of `passages` against `query`, in order, as
    /// `account`'s work; [`EmbedError::Busy`] when its queue is full.
    pub(super) async fn scores(
        &self,
        account: &str,
        query: String,
        passages: Vec<String>,
    ) -> Result<Vec<f32>, EmbedError> {
        let (reply, rx) = oneshot::channel();
        let job = Job {
            query,
            passages,
            reply,
        };
        let lane = self.lane.get_or_init(|| spawn(self.files.clone()));
        lane.admit(account, Class::Interactive, vec![(1, job)])?;
        rx.await.map_err(|_| EmbedError::ShutDown)?
    }
}

/// Starts the lane's thread; it exits when the returned sender is dropped.
fn spawn(files: RerankerFiles) -> fair::Sender<Job> {
    let (tx, rx) = fair::channel::<Job>(QUEUED);
    std::thread::Builder::new()
        .name("rerank".into())
        .spawn(move || {
            let mut model: Option<CrossEncoder> = None;
            while let Some(group) = rx.group([1, 1]) {
                for (_, job) in group {
                    let result = catch_unwind(AssertUnwindSafe(|| {
                        let model = match &mut model {
                            Some(model) => model,
                            None => model.insert(CrossEncoder::load(
                                &files.library,
                                &files.dir,
                                files.threads,
                            )?),
                        };
                        let passages: Vec<&str> = job.passages.iter().map(String::as_str).collect();
                        model.scores(&job.query, &passages)
                    }))
                    .unwrap_or_else(|_| {
                        Err(EmbedError::Inference(
                            "the cross-encoder panicked".to_owned(),
                        ))
                    });
                    let _ = job.reply.send(result);
                }
            }
        })
        .expect("the OS refused to start the reranking thread");
    tx
}
