//! The `[embedder]` section of the config file.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::Deserialize;

use super::OnnxModel;
use crate::secret::Secret;

/// The `[embedder]` section of the TOML config file: which embedder to run and how.
///
/// Every field has a default, so an absent section means all-MiniLM-L6-v2 with int8 weights
/// on ONNX Runtime, its files found as [`locate`](super::locate) describes.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EmbedderConfig {
    /// Which embedder to build.
    pub kind: EmbedderKind,
    /// Which network the `onnx` kind runs (its prefixes, output and default directory come
    /// with it: [`OnnxModel::card`]); other kinds ignore it.
    pub model: OnnxModel,
    /// Directory holding the model files (`model.onnx` and `tokenizer.json` for `onnx`;
    /// `model.safetensors`, `tokenizer.json` and `config.json` for `minilm`). `None` means
    /// the kind's directory under `models/` of the wasmind home ([`locate`](super::locate)).
    pub model_dir: Option<PathBuf>,
    /// The ONNX Runtime shared library (`libonnxruntime.so`) the `onnx` kind loads at start.
    /// `None` means `models/onnxruntime/libonnxruntime.so` of the wasmind home.
    pub onnxruntime: Option<PathBuf>,
    /// Directory holding the cross-encoder searches with `rerank` use (`model.onnx` and
    /// `tokenizer.json`; whatever the embedder's kind, it runs on ONNX Runtime). `None`
    /// means `models/ms-marco-MiniLM-L-12-v2-int8` of the wasmind home.
    pub rerank_model_dir: Option<PathBuf>,
    /// Worker threads of the bulk lane (imports' texts, at background priority) and of the
    /// interactive lane (puts' texts), each running its own batch on one thread, and the
    /// intra-op threads of the rerank cross-encoder; values below 1 mean 1.
    pub threads: usize,
    /// Most texts one batch takes (one call of the embedder; the `onnx` kind then runs each
    /// text on its own, as its activations are quantized per run); values below 1 mean 1.
    pub batch_size: usize,
    /// Most texts of bulk work (imports, consolidations) one batch takes, at most
    /// `batch_size`: accounts' imports take turns in batches this short. Values below 1
    /// mean 1.
    pub bulk_batch_size: usize,
    /// Query embeddings kept in the LRU cache; 0 turns the cache off.
    pub query_cache: usize,
    /// Most texts one account may have waiting in a lane; past it its requests that embed
    /// are refused with 503 `temporarily_unavailable` (one request is always admitted when
    /// the account has nothing waiting). Values below 1 mean 1.
    pub queue_per_account: usize,
    /// Most texts all accounts together may have waiting in a lane (past it, 503 as
    /// above). Values below 1 mean 1.
    pub queue_total: usize,
    /// Settings of the remote OpenAI-compatible provider, used when `kind = "openai"`.
    pub openai: OpenAiEmbedConfig,
    /// Re-embed a data dir (or database) whose vectors another embedder made with this
    /// one, in the background, the recorded embedder serving until it is done; without
    /// it such a data dir refuses to start. Once asked, a restart with this embedder goes
    /// on with it whatever this says.
    pub upgrade: bool,
}

impl Default for EmbedderConfig {
    fn default() -> Self {
        Self {
            kind: EmbedderKind::Onnx,
            model: OnnxModel::default(),
            model_dir: None,
            onnxruntime: None,
            rerank_model_dir: None,
            threads: 2,
            batch_size: 32,
            bulk_batch_size: 8,
            query_cache: 4096,
            queue_per_account: 2048,
            queue_total: 16384,
            openai: OpenAiEmbedConfig::default(),
            upgrade: false,
        }
    }
}

/// Which embedder produces the vectors; vectors of different kinds are not comparable.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// A sentence encoder with int8 weights on ONNX Runtime, the one `model` names: semantic,
    /// 384 dims; its default all-MiniLM-L6-v2 is ~3x faster than `minilm` and within 0.98
    /// cosine of it (the agreement test).
    #[default]
    Onnx,
    /// all-MiniLM-L6-v2 in fp32 run with candle (pure Rust): the reference `onnx` is checked
    /// against, and a fallback where ONNX Runtime cannot be loaded.
    Minilm,
    /// Lexical feature hashing: instant and deterministic, for tests; not semantic.
    Hash,
    /// A remote OpenAI-compatible `/embeddings` endpoint.
    Openai,
}

impl EmbedderKind {
    /// The name used in the config file and in `WASMIND_EMBEDDER`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Onnx => "onnx",
            Self::Minilm => "minilm",
            Self::Hash => "hash",
            Self::Openai => "openai",
        }
    }
}

impl fmt::Display for EmbedderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no embedder kind (e.g. a bad `WASMIND_EMBEDDER`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown embedder kind {0:?}: expected onnx, minilm, hash or openai")]
pub struct UnknownEmbedderKind(pub String);

impl FromStr for EmbedderKind {
    type Err = UnknownEmbedderKind;

    /// Parses the config names, ignoring case and surrounding blanks.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "onnx" => Ok(Self::Onnx),
            "minilm" => Ok(Self::Minilm),
            "hash" => Ok(Self::Hash),
            "openai" => Ok(Self::Openai),
            _ => Err(UnknownEmbedderKind(s.to_owned())),
        }
    }
}

/// The `[embedder.openai]` section: an OpenAI-compatible embeddings endpoint.
///
/// `Debug` redacts the API key so configs can be logged.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct OpenAiEmbedConfig {
    /// API root; requests go to `{base_url}/embeddings`.
    pub base_url: String,
    /// Sent as a bearer token; `None` sends no `Authorization` header (local servers).
    pub api_key: Option<Secret>,
    /// Provider model name.
    pub model: String,
    /// Vector length asked for with the `dimensions` request field, and checked on replies.
    pub dims: usize,
}

impl Default for OpenAiEmbedConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.openai.com/v1".to_owned(),
            api_key: None,
            model: "text-embedding-3-small".to_owned(),
            dims: 384,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_parses_case_insensitively_and_rejects_unknown() {
        assert_eq!(" MiniLM ".parse::<EmbedderKind>(), Ok(EmbedderKind::Minilm));
        assert_eq!("hash".parse::<EmbedderKind>(), Ok(EmbedderKind::Hash));
        assert_eq!("ONNX".parse::<EmbedderKind>(), Ok(EmbedderKind::Onnx));
        assert_eq!("openai".parse::<EmbedderKind>(), Ok(EmbedderKind::Openai));
        let err = "bert".parse::<EmbedderKind>().unwrap_err();
        assert!(err.to_string().contains("onnx, minilm, hash or openai"));
    }

    #[test]
    fn debug_redacts_api_key() {
        let cfg = OpenAiEmbedConfig {
            api_key: Some("sk-secret".into()),
            ..OpenAiEmbedConfig::default()
        };
        let shown = format!("{cfg:?}");
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }

    #[test]
    fn toml_section_fills_defaults_and_rejects_unknown_fields() {
        let cfg: EmbedderConfig =
            toml::from_str("kind = \"hash\"\n[openai]\ndims = 256\n").unwrap();
        assert_eq!(cfg.kind, EmbedderKind::Hash);
        assert_eq!(cfg.model, OnnxModel::MiniLmL6V2);
        let e5: EmbedderConfig = toml::from_str("model = \"e5-small-v2\"").unwrap();
        assert_eq!(e5.model, OnnxModel::E5SmallV2);
        assert!(toml::from_str::<EmbedderConfig>("model = \"bge\"").is_err());
        assert_eq!(cfg.openai.dims, 256);
        assert_eq!(cfg.openai.model, "text-embedding-3-small");
        assert_eq!(cfg.batch_size, 32);
        assert_eq!(EmbedderConfig::default().kind, EmbedderKind::Onnx);
        assert!(toml::from_str::<EmbedderConfig>("kinds = \"hash\"").is_err());
        assert_eq!(
            toml::from_str::<EmbedderConfig>("").unwrap(),
            EmbedderConfig::default()
        );
    }
}
