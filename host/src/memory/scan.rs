//! Exact scoring of a set of versions: every version a search with an observation window
//! keeps (no index knows observation times), and on postgres the versions of the past live
//! at a search's `as_of`. Each is scored with the cosine of its stored embedding (computed
//! by the backend, where the embeddings are) and BM25 with tantivy's formula (k1 = 1.2,
//! b = 0.75, idf = ln(1 + (N − n + 0.5) / (n + 0.5)), summed over key and value, lengths
//! quantized as fieldnorms) with the set itself as the corpus. A search without time
//! filters never comes here.

use std::collections::HashMap;

use tantivy::fieldnorm::FieldNormReader;

use super::{
    MemoryError, Result,
    index::{index_terms, query_terms},
    record::Memory,
    search::Candidate,
};

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// One field of every document: its term frequencies and quantized length.
struct Field {
    docs: Vec<(HashMap<String, u32>, f32)>,
    average: f32,
}

impl Field {
    fn new<'a>(texts: impl Iterator<Item = &'a str>) -> Self {
        let docs: Vec<(HashMap<String, u32>, f32)> = texts
            .map(|text| {
                let terms = index_terms(text);
                let count = u32::try_from(terms.len()).unwrap_or(u32::MAX);
                let norm =
                    FieldNormReader::id_to_fieldnorm(FieldNormReader::fieldnorm_to_id(count));
                let mut freqs = HashMap::new();
                for term in terms {
                    *freqs.entry(term).or_insert(0) += 1;
                }
                (freqs, norm as f32)
            })
            .collect();
        let total: f32 = docs.iter().map(|(_, norm)| norm).sum();
        let average = total / docs.len().max(1) as f32;
        Self { docs, average }
    }

    /// Adds this field's BM25 of `term` to each document's score.
    fn score(&self, term: &str, scores: &mut [Option<f32>]) {
        let n = self
            .docs
            .iter()
            .filter(|(f, _)| f.contains_key(term))
            .count() as f32;
        if n == 0.0 {
            return;
        }
        let total = self.docs.len() as f32;
        let idf = (1.0 + (total - n + 0.5) / (n + 0.5)).ln();
        for ((freqs, norm), score) in self.docs.iter().zip(scores.iter_mut()) {
            if let Some(&tf) = freqs.get(term) {
                let tf = tf as f32;
                let length = 1.0 - B + B * norm / self.average.max(f32::MIN_POSITIVE);
                *score = Some(score.unwrap_or(0.0) + idf * tf * (K1 + 1.0) / (tf + K1 * length));
            }
        }
    }
}

/// BM25 of `query` for each of `memories` (`None` where no term matches), the set being
/// the corpus.
pub fn keyword_scores(query: &str, memories: &[Memory]) -> Vec<Option<f32>> {
    let mut scores = vec![None; memories.len()];
    let keys = Field::new(memories.iter().map(|m| m.key.as_str()));
    let values = Field::new(memories.iter().map(|m| m.value.as_str()));
    for term in query_terms(query) {
        keys.score(&term, &mut scores);
        values.score(&term, &mut scores);
    }
    scores
}

/// Cosine of two vectors (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norms =
        a.iter().map(|x| x * x).sum::<f32>().sqrt() * b.iter().map(|x| x * x).sum::<f32>().sqrt();
    match norms > 0.0 {
        true => dot / norms,
        false => 0.0,
    }
}

/// The candidates of a scan: each version with its BM25 (when `query` is searched by
/// keywords) and its cosine to the query's vector (from the backend, which holds the
/// embeddings); a version neither side finds (no query term, no vector) is none.
fn candidates(
    memories: Vec<Memory>,
    cosines: Vec<Option<f32>>,
    query: Option<&str>,
) -> Vec<(Memory, Candidate)> {
    let bm25 = match query {
        Some(q) => keyword_scores(q, &memories),
        None => vec![None; memories.len()],
    };
    memories
        .into_iter()
        .zip(cosines)
        .zip(bm25)
        .map(|((memory, cosine), bm25)| (memory, Candidate { cosine, bm25 }))
        .filter(|(_, c)| c.bm25.is_some() || c.cosine.is_some())
        .collect()
}

/// [`candidates`] on the blocking pool: analysing thousands of keys and values for BM25
/// takes tens of milliseconds (23 ms for 5,000 versions, BENCHMARKS.md), which must not
/// hold an async worker and the requests queued behind it.
pub async fn candidates_apart(
    memories: Vec<Memory>,
    cosines: Vec<Option<f32>>,
    query: Option<String>,
) -> Result<Vec<(Memory, Candidate)>> {
    tokio::task::spawn_blocking(move || candidates(memories, cosines, query.as_deref()))
        .await
        .map_err(|_| MemoryError::Stopped)
}

/// Of scanned candidates, the best `k` of each side (cosine, BM25), as an index of them
/// would return: a search of the past is one more source of candidates beside the live
/// indexes, each bounded alike.
pub fn best(found: Vec<(Memory, Candidate)>, k: usize) -> Vec<(Memory, Candidate)> {
    let mut kept = vec![false; found.len()];
    for side in [|c: &Candidate| c.cosine, |c: &Candidate| c.bm25] {
        let mut order: Vec<(usize, f32)> = (found.iter().enumerate())
            .filter_map(|(i, (_, c))| side(c).map(|score| (i, score)))
            .collect();
        order.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for (i, _) in order.into_iter().take(k) {
            kept[i] = true;
        }
    }
    found
        .into_iter()
        .zip(kept)
        .filter_map(|(found, kept)| kept.then_some(found))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::record::sample;

    fn memory(id: u64, key: &str, value: &str) -> Memory {
        Memory {
            key: key.into(),
            value: value.into(),
            ..sample(id)
        }
    }

    #[test]
    fn rarer_terms_and_shorter_fields_score_higher_and_misses_score_none() {
        let set = [
            memory(1, "pet", "the user has a cat named miso"),
            memory(2, "city", "the user lives in lisbon"),
            memory(
                3,
                "cats",
                "cat cat and more words about a cat and other animals here",
            ),
        ];
        let scores = keyword_scores("cat", &set);
        assert_eq!(scores[1], None);
        let (pet, many) = (scores[0].unwrap(), scores[2].unwrap());
        assert!(pet > 0.0 && many > 0.0);
        let lisbon = keyword_scores("lisbon cat", &set);
        assert!(
            lisbon[1].unwrap() > lisbon[0].unwrap(),
            "lisbon is rarer: {lisbon:?}"
        );
    }

    #[test]
    fn a_cosine_is_of_directions_and_a_candidate_is_what_either_side_finds() {
        let half = std::f32::consts::FRAC_1_SQRT_2;
        assert!((cosine(&[1.0, 0.0], &[1.0, 1.0]) - half).abs() < 1e-6);
        assert!((cosine(&[0.0, 2.0], &[1.0, 1.0]) - half).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
        let set = vec![memory(1, "a", "x"), memory(2, "b", "y")];
        let found = candidates(set, vec![Some(0.5), Some(0.25)], None);
        let cos: Vec<f32> = found.iter().map(|(_, c)| c.cosine.unwrap()).collect();
        assert_eq!(cos, [0.5, 0.25]);
        assert!(found.iter().all(|(_, c)| c.bm25.is_none()));
        let set = vec![memory(1, "a", "cat"), memory(2, "b", "dog")];
        let found = candidates(set, vec![None, None], Some("cat"));
        assert_eq!(found.len(), 1, "a keyword search finds only what matches");
        assert_eq!(found[0].0.id, 1);
    }

    #[test]
    fn the_best_of_a_scan_are_the_best_k_of_either_side() {
        let found = |c: &[(Option<f32>, Option<f32>)]| -> Vec<(Memory, Candidate)> {
            (c.iter().enumerate())
                .map(|(i, &(cosine, bm25))| (sample(i as u64), Candidate { cosine, bm25 }))
                .collect()
        };
        let ids = |kept: Vec<(Memory, Candidate)>| -> Vec<u64> {
            kept.into_iter().map(|(m, _)| m.id).collect()
        };
        let scanned = [
            (Some(0.1), None),
            (Some(0.9), Some(1.0)),
            (Some(0.8), None),
            (Some(0.2), Some(3.0)),
            (None, Some(2.0)),
        ];
        assert_eq!(
            ids(best(found(&scanned), 1)),
            [1, 3],
            "the nearest; the best BM25"
        );
        assert_eq!(ids(best(found(&scanned), 2)), [1, 2, 3, 4]);
        assert_eq!(ids(best(found(&scanned), 9)), [0, 1, 2, 3, 4]);
    }
}
