//! Sentence embeddings for memory search: text in, unit-length vector out.
//!
//! [`Embedder`] is the model (an int8 sentence encoder on ONNX Runtime by default, described
//! by its [`card`], the fp32 MiniLM in candle as its reference with the `minilm` feature, a
//! lexical hash for tests, or a remote OpenAI-compatible API); [`EmbedService`] runs one on
//! dedicated threads so inference never blocks the async runtime, with a query lane that
//! never waits behind bulk indexing. Every embedding says which [`Role`] its text plays,
//! because asymmetric encoders (e5) embed a search's query and a stored text differently.

mod card;
mod config;
mod cross;
mod error;
mod hash;
mod identity;
mod lane;
mod locate;
#[cfg(feature = "minilm")]
mod minilm;
mod onnx;
mod openai;
mod quiet;
mod rerank;
mod service;
mod tokens;
mod upgrade;

use std::sync::Arc;

use super::search::Fusion;

/// Which part a text plays: a search's query, or a text stored to be found (a passage).
/// Symmetric encoders (MiniLM, the hash) embed both alike; e5 prefixes each with its own
/// word, and a query embedded as a passage (or the reverse) finds less.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Query,
    Passage,
}

pub use card::{ModelCard, OnnxModel, UnknownOnnxModel};
pub use config::{EmbedderConfig, EmbedderKind, OpenAiEmbedConfig, UnknownEmbedderKind};
pub use error::EmbedError;
pub use hash::HashEmbedder;
pub use identity::{Recorded, check_identity, flip, identity, recorded};
#[cfg(feature = "minilm")]
pub use minilm::MiniLm;
pub use onnx::{OnnxEmbedder, Sessions};
pub use openai::OpenAiEmbedder;
pub use quiet::Request;
pub use rerank::{RerankerFiles, locate_reranker};
pub use service::EmbedService;
pub use upgrade::serving_config;

/// Turns texts into vectors whose dot product measures how related the texts are.
///
/// Implementations block while they compute; call them from [`EmbedService`] (or other
/// non-async threads), never directly on an async runtime's worker threads.
pub trait Embedder: Send + Sync + 'static {
    /// Short name for logs, e.g. "all-MiniLM-L6-v2".
    fn name(&self) -> &str;
    /// Output dimensions (384 for MiniLM).
    fn dims(&self) -> usize;
    /// Embeds a batch of texts that all play `role`; each vector is L2-normalized (unit
    /// length), so dot product == cosine similarity.
    ///
    /// Returns exactly one vector of [`dims`](Embedder::dims) floats per text, in order.
    fn embed(&self, role: Role, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// [`embed`](Embedder::embed) for background work (imports), called from a thread of
    /// background priority (see [`priority`](crate::priority)): an embedder that runs
    /// threads of its own runs this batch on threads of that priority too.
    fn embed_background(&self, role: Role, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed(role, texts)
    }

    /// The hybrid search's weights for this embedder's cosines: how far apart a query's
    /// related and unrelated texts score depends on the model, so the keyword part's
    /// weight against it does too. The weights tuned for all-MiniLM-L6-v2 unless the
    /// model was tuned for.
    fn fusion(&self) -> Fusion {
        Fusion::MINILM
    }
}

/// Dimensions of the hash embedder built by [`from_config`]: MiniLM's, so index layouts match.
const HASH_DIMS: usize = 384;

/// Builds the configured embedder (loads the model for `onnx` and `minilm`, from where
/// [`locate`] finds it).
///
/// Fails with [`EmbedError::ModelMissing`] when a model directory lacks a file, and
/// [`EmbedError::NotFound`] when no default location holds one.
pub fn from_config(cfg: &EmbedderConfig) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(match cfg.kind {
        EmbedderKind::Onnx => {
            let library = locate::library(cfg.onnxruntime.as_deref(), locate::ONNXRUNTIME)?;
            let card = cfg.model.card();
            let dir = locate::model_dir(cfg, card.dir)?;
            // A session per worker (the bulk and interactive lanes' `threads` each, the query
            // lane's one), so no lane waits for another; the bulk workers' at background
            // priority.
            let threads = cfg.threads.max(1);
            let sessions = Sessions {
                interactive: threads + 1,
                background: threads,
            };
            Arc::new(OnnxEmbedder::load(&library, &dir, card, sessions)?)
        }
        #[cfg(feature = "minilm")]
        EmbedderKind::Minilm => {
            Arc::new(MiniLm::load(&locate::model_dir(cfg, minilm::DEFAULT_DIR)?)?)
        }
        #[cfg(not(feature = "minilm"))]
        EmbedderKind::Minilm => return Err(EmbedError::NotBuilt { kind: "minilm" }),
        EmbedderKind::Hash => Arc::new(HashEmbedder::new(HASH_DIMS)),
        EmbedderKind::Openai => Arc::new(OpenAiEmbedder::new(&cfg.openai)?),
    })
}

/// Scales `v` to unit length; an all-zero vector is left as it is.
fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_config_builds_hash_and_reports_missing_model() {
        let hash = EmbedderConfig {
            kind: EmbedderKind::Hash,
            ..EmbedderConfig::default()
        };
        let embedder = from_config(&hash).unwrap();
        assert_eq!(embedder.dims(), HASH_DIMS);
        assert_eq!(embedder.name(), "lexical-hash");

        let missing = EmbedderConfig {
            model_dir: Some("/nonexistent/wasmind-model".into()),
            ..EmbedderConfig::default()
        };
        let err = from_config(&missing).err().expect("model dir is missing");
        assert!(matches!(err, EmbedError::ModelMissing { .. }), "{err}");
    }

    #[test]
    fn l2_normalize_makes_unit_length_and_keeps_zero() {
        let mut v = vec![3.0, 4.0];
        l2_normalize(&mut v);
        assert_eq!(v, vec![0.6, 0.8]);
        let mut zero = vec![0.0; 3];
        l2_normalize(&mut zero);
        assert_eq!(zero, vec![0.0; 3]);
    }
}
