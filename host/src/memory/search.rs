//! Search: candidates from BOTH indexes (BM25 keywords and vector neighbours, each filtered
//! by account, namespace, tags and expiry inside the index), then one scoring formula.
//!
//! Every part of the breakdown lies in [0, 1]:
//! - `semantic`   = max(0, cosine(query, memory)) — computed for keyword-only candidates too;
//! - `keyword`    = (BM25 / the best BM25 among this query's keyword candidates)²: squared
//!   so that only near-best keyword matches weigh much: a plain ratio lets every document
//!   sharing one common query word compete with close meanings (on LoCoMo, hybrid
//!   recall@10 0.637 → 0.653; BENCHMARKS.md, "Retrieval quality");
//! - `importance` = importance / 10;
//! - `timeDecay`  = 0.5 ^ (days since the version's fact was observed (`observed_at`, by
//!   default when it was written) / half-life).
//!
//! `score` = Σ weightᵢ · partᵢ with weights summing to 1 (so `score` ∈ [0, 1]):
//!
//! | mode     | semantic | keyword | importance | timeDecay |
//! |----------|----------|---------|------------|-----------|
//! | hybrid   | 0.57     | 0.23    | 0.10       | 0.10      |
//! | semantic | 0.80     | 0       | 0.10       | 0.10      |
//! | keyword  | 0        | 0.80    | 0.10       | 0.10      |
//!
//! The hybrid row is all-MiniLM-L6-v2's: each embedder says its own ([`Fusion`]), as how
//! far apart a query's related and unrelated texts score depends on the model.
//!
//! With `rerank`, the mode's best [`rerank_pool`] are then read again by a cross-encoder
//! with the query (`embed::cross`), and ordered by what it says: `score` becomes its
//! relevance, σ(logit) ∈ (0, 1), also in the breakdown as `rerank` (the other parts are
//! kept, for explanation). It is a search option, not the default: it costs one network
//! pass per candidate, ~0.1–0.3 s a search on two cores, against ~6 ms without.

use std::{collections::HashMap, str::FromStr};

use super::{MemoryError, record::Memory, time::TimeFilter};

/// How candidates are found and weighted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Hybrid,
    Semantic,
    Keyword,
}

impl FromStr for Mode {
    type Err = MemoryError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "hybrid" => Ok(Mode::Hybrid),
            "semantic" => Ok(Mode::Semantic),
            "keyword" => Ok(Mode::Keyword),
            other => Err(wasmind_rules::unknown_mode(other).into()),
        }
    }
}

impl Mode {
    /// The mode as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Hybrid => "hybrid",
            Mode::Semantic => "semantic",
            Mode::Keyword => "keyword",
        }
    }

    /// Whether this mode embeds the query and asks the vector index.
    pub fn uses_vectors(self) -> bool {
        self != Mode::Keyword
    }

    /// Whether this mode asks the keyword index.
    pub fn uses_keywords(self) -> bool {
        self != Mode::Semantic
    }

    fn weights(self, fusion: Fusion) -> [f64; 4] {
        match self {
            Mode::Hybrid => [fusion.semantic, fusion.keyword, 0.1, 0.1],
            Mode::Semantic => [0.8, 0.0, 0.1, 0.1],
            Mode::Keyword => [0.0, 0.8, 0.1, 0.1],
        }
    }
}

/// The hybrid search's weights of the semantic and keyword parts (summing to 0.8, the rest
/// is importance's and time decay's), chosen for one embedder's cosines on LoCoMo's dev
/// conversations, each split half's choice made on the other (BENCHMARKS.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    pub semantic: f64,
    pub keyword: f64,
}

impl Fusion {
    /// all-MiniLM-L6-v2's (and the weights of embedders tuned for none): its cosines spread
    /// widely (a question's best turn 0.63, its median 0.26), so keywords weigh much.
    pub const MINILM: Self = Self {
        semantic: 0.57,
        keyword: 0.23,
    };
    /// e5-small-v2's: its cosines are compressed (best turn 0.85, median 0.76), so a
    /// keyword part of MiniLM's weight outweighs the whole semantic spread. Both halves
    /// chose 0.03–0.035 for keywords (candidates.py `fusion`).
    pub const E5: Self = Self {
        semantic: 0.77,
        keyword: 0.03,
    };
}

/// Default and maximum results per search (§4.2), the shared rules' numbers.
pub const DEFAULT_LIMIT: usize = wasmind_rules::limits::SEARCH_DEFAULT_LIMIT as usize;
pub const MAX_LIMIT: usize = wasmind_rules::limits::SEARCH_MAX_LIMIT as usize;

/// A validated search request.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchQuery {
    pub query: String,
    pub namespace: Option<String>,
    pub tags: Vec<String>,
    pub limit: usize,
    pub mode: Mode,
    pub min_score: f64,
    /// Order the best candidates by the cross-encoder (see the module doc).
    pub rerank: bool,
    /// Search the versions live at `as_of` and observed in a window (an exact scan of
    /// what the filters keep) instead of the live indexes.
    pub time: TimeFilter,
}

/// The parts of a score, each in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Breakdown {
    pub semantic: f64,
    pub keyword: f64,
    pub importance: f64,
    pub time_decay: f64,
    /// The cross-encoder's relevance, when the search was reranked.
    pub rerank: Option<f64>,
}

/// One ranked result.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub memory: Memory,
    pub score: f64,
    pub breakdown: Breakdown,
}

/// Candidates a reranked search reads with the cross-encoder: its limit, and at least 30
/// (on LoCoMo, reordering the best 10 gains recall@10 nothing, the best 20 +0.05, 30 +0.07,
/// on each half of the conversations alike; BENCHMARKS.md, "Reranking").
pub fn rerank_pool(limit: usize) -> usize {
    limit.max(30)
}

/// Orders `hits` by the cross-encoder's `logits` (one each, in order): each one's score
/// becomes σ(logit), also its breakdown's `rerank`.
pub fn reranked(mut hits: Vec<SearchHit>, logits: &[f32]) -> Vec<SearchHit> {
    for (hit, &logit) in hits.iter_mut().zip(logits) {
        let relevance = 1.0 / (1.0 + (-f64::from(logit)).exp());
        hit.score = relevance;
        hit.breakdown.rerank = Some(relevance);
    }
    hits
}

/// How many candidates to ask each index for.
pub fn candidates_for(limit: usize) -> usize {
    (limit * 4).clamp(40, 200)
}

/// A candidate as the indexes found it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Candidate {
    /// Cosine similarity, when the vector index (or a lookup) gave one.
    pub cosine: Option<f32>,
    /// BM25, when the keyword index found it.
    pub bm25: Option<f32>,
}

/// Merges both indexes' hits into one candidate set.
pub fn merge(keyword: &[(u64, f32)], semantic: &[(u64, f32)]) -> HashMap<u64, Candidate> {
    let mut out: HashMap<u64, Candidate> = HashMap::new();
    for &(id, bm25) in keyword {
        out.entry(id).or_default().bm25 = Some(bm25);
    }
    for &(id, cos) in semantic {
        out.entry(id).or_default().cosine = Some(cos);
    }
    out
}

/// Scores one candidate, with the hybrid `fusion` of the embedder that made the vectors.
pub fn score(
    mode: Mode,
    fusion: Fusion,
    memory: &Memory,
    candidate: Candidate,
    best_bm25: f32,
    now: u64,
    half_life_days: f64,
) -> (f64, Breakdown) {
    let age_days = now.saturating_sub(memory.observed()) as f64 / 86_400_000.0;
    let breakdown = Breakdown {
        semantic: f64::from(candidate.cosine.unwrap_or(0.0)).clamp(0.0, 1.0),
        keyword: match candidate.bm25 {
            Some(s) if best_bm25 > 0.0 => f64::from(s / best_bm25).clamp(0.0, 1.0).powi(2),
            _ => 0.0,
        },
        importance: (memory.importance / 10.0).clamp(0.0, 1.0),
        time_decay: 0.5f64.powf(age_days / half_life_days).clamp(0.0, 1.0),
        rerank: None,
    };
    let [ws, wk, wi, wt] = mode.weights(fusion);
    let total = ws * breakdown.semantic
        + wk * breakdown.keyword
        + wi * breakdown.importance
        + wt * breakdown.time_decay;
    (total.clamp(0.0, 1.0), breakdown)
}

/// Sorts best first, drops those under `min_score`, keeps `limit`.
pub fn finish(mut hits: Vec<SearchHit>, min_score: f64, limit: usize) -> Vec<SearchHit> {
    hits.retain(|h| h.score >= min_score);
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| b.memory.id.cmp(&a.memory.id))
    });
    hits.truncate(limit);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::record::sample;

    /// Hybrid weighs semantic and keyword parts by the embedder's fusion; the other modes
    /// do not depend on it.
    #[test]
    fn hybrid_weighs_by_the_embedders_fusion() {
        let m = sample(1);
        let total = |mode, fusion, cosine, bm25| {
            let c = Candidate {
                cosine: Some(cosine),
                bm25: Some(bm25),
            };
            score(mode, fusion, &m, c, 3.0, m.updated_at, 30.0).0
        };
        let (minilm, e5) = (Fusion::MINILM, Fusion::E5);
        let meaning = total(Mode::Hybrid, e5, 1.0, 0.0) - total(Mode::Hybrid, minilm, 1.0, 0.0);
        assert!((meaning - (0.77 - 0.57)).abs() < 1e-9, "{meaning}");
        let words = total(Mode::Hybrid, e5, 0.0, 3.0) - total(Mode::Hybrid, minilm, 0.0, 3.0);
        assert!((words - (0.03 - 0.23)).abs() < 1e-9, "{words}");
        for mode in [Mode::Semantic, Mode::Keyword] {
            assert_eq!(total(mode, e5, 0.5, 2.0), total(mode, minilm, 0.5, 2.0));
        }
    }

    #[test]
    fn parts_and_total_stay_in_range() {
        let m = sample(1);
        let c = Candidate {
            cosine: Some(-0.3),
            bm25: Some(9.0),
        };
        let (s, b) = score(Mode::Hybrid, Fusion::MINILM, &m, c, 3.0, m.updated_at, 30.0);
        assert_eq!(b.semantic, 0.0);
        assert_eq!(b.keyword, 1.0);
        assert_eq!(b.time_decay, 1.0);
        assert!((s - (0.23 + 0.05 + 0.1)).abs() < 1e-9, "{s}");
        let c = Candidate {
            cosine: Some(1.0),
            bm25: Some(3.0),
        };
        let (s, _) = score(Mode::Hybrid, Fusion::MINILM, &m, c, 3.0, m.updated_at, 30.0);
        assert!(s <= 1.0);
    }

    #[test]
    fn keyword_part_is_the_squared_share_of_the_best_bm25() {
        let m = sample(1);
        let c = Candidate {
            cosine: None,
            bm25: Some(1.5),
        };
        let (_, b) = score(
            Mode::Keyword,
            Fusion::MINILM,
            &m,
            c,
            3.0,
            m.updated_at,
            30.0,
        );
        assert!((b.keyword - 0.25).abs() < 1e-9, "{}", b.keyword);
    }

    #[test]
    fn decay_halves_per_half_life() {
        let m = sample(1);
        let later = m.updated_at + 30 * 86_400_000;
        let (_, b) = score(
            Mode::Semantic,
            Fusion::MINILM,
            &m,
            Candidate::default(),
            0.0,
            later,
            30.0,
        );
        assert!((b.time_decay - 0.5).abs() < 1e-9);
    }

    #[test]
    fn keyword_mode_ignores_semantics_in_the_total() {
        let m = sample(1);
        let with = Candidate {
            cosine: Some(0.9),
            bm25: None,
        };
        let (s, b) = score(
            Mode::Keyword,
            Fusion::MINILM,
            &m,
            with,
            0.0,
            m.updated_at,
            30.0,
        );
        assert!(b.semantic > 0.8);
        assert!((s - 0.15).abs() < 1e-9, "{s}");
    }

    #[test]
    fn merge_keeps_both_sources() {
        let c = merge(&[(1, 2.0), (2, 1.0)], &[(2, 0.5), (3, 0.4)]);
        assert_eq!(c.len(), 3);
        assert!(c[&1].cosine.is_none() && c[&3].bm25.is_none());
        assert_eq!((c[&2].bm25, c[&2].cosine), (Some(1.0), Some(0.5)));
    }

    #[test]
    fn finish_sorts_filters_truncates() {
        let hit = |id, score| SearchHit {
            memory: sample(id),
            score,
            breakdown: Breakdown::default(),
        };
        let out = finish(
            vec![hit(1, 0.2), hit(2, 0.9), hit(3, 0.5), hit(4, 0.05)],
            0.1,
            2,
        );
        let ids: Vec<u64> = out.iter().map(|h| h.memory.id).collect();
        assert_eq!(ids, [2, 3]);
    }

    #[test]
    fn modes_parse() {
        for mode in [Mode::Hybrid, Mode::Semantic, Mode::Keyword] {
            assert_eq!(mode.as_str().parse::<Mode>().unwrap(), mode);
        }
        assert!(matches!(
            "fuzzy".parse::<Mode>(),
            Err(MemoryError::Invalid { field: "mode", .. })
        ));
    }
}
