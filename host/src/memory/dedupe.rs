//! Dedupe: pairs of live memories in the same namespace whose embeddings have cosine
//! similarity at or above the threshold; of each pair the less useful copy goes.
//!
//! "Less useful" is decided in order: lower importance, then fewer accesses, then older
//! (earlier `updated_at`), then the lower id. Pairs are taken most-similar first, and a
//! memory already chosen for removal is not paired again, so a cluster of near-copies
//! keeps exactly its most useful member.

use std::{
    cmp::Ordering,
    collections::{HashMap, HashSet},
};

use super::record::Memory;

/// Default similarity threshold (§4.2).
pub const DEFAULT_THRESHOLD: f32 = 0.92;

/// One decided pair: indexes into the scanned memories.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    pub kept: u64,
    pub removed: u64,
    pub similarity: f32,
}

/// Orders memories by usefulness (greater = more useful).
pub fn usefulness(a: &Memory, b: &Memory) -> Ordering {
    a.importance
        .total_cmp(&b.importance)
        .then(a.access_count.cmp(&b.access_count))
        .then(a.updated_at.cmp(&b.updated_at))
        .then(a.id.cmp(&b.id))
}

/// Normalizes candidate similar pairs `(a, b, similarity)` by id, as the vector index
/// reports them (each direction, possibly twice): keeps pairs of two distinct scanned
/// memories of the same namespace at or above `threshold`, once each as `(lower id,
/// higher id, similarity)`, most similar first. Dedupe and consolidation both start here.
pub fn similar_pairs(
    memories: &[Memory],
    candidates: Vec<(u64, u64, f32)>,
    threshold: f32,
) -> Vec<(u64, u64, f32)> {
    let by_id: HashMap<u64, &Memory> = memories.iter().map(|m| (m.id, m)).collect();
    let mut pairs: Vec<_> = candidates
        .into_iter()
        .filter(|&(a, b, s)| a != b && s >= threshold)
        .filter_map(|(a, b, s)| {
            let (ma, mb) = (by_id.get(&a)?, by_id.get(&b)?);
            (ma.namespace == mb.namespace).then_some((a.min(b), a.max(b), s))
        })
        .collect();
    // The two directions of a pair may differ in the last digits (vectors are stored at
    // f16): keep the higher, then order most similar first.
    pairs.sort_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)).then(y.2.total_cmp(&x.2)));
    pairs.dedup_by(|later, kept| (later.0, later.1) == (kept.0, kept.1));
    pairs.sort_by(|x, y| y.2.total_cmp(&x.2).then(x.0.cmp(&y.0)).then(x.1.cmp(&y.1)));
    pairs
}

/// Decides which memories go, given candidate similar pairs `(a, b, similarity)` by id.
pub fn plan(memories: &[Memory], candidates: Vec<(u64, u64, f32)>, threshold: f32) -> Vec<Pair> {
    let by_id: HashMap<u64, &Memory> = memories.iter().map(|m| (m.id, m)).collect();
    let mut removed = HashSet::new();
    let mut pairs = Vec::new();
    for (a, b, similarity) in similar_pairs(memories, candidates, threshold) {
        if removed.contains(&a) || removed.contains(&b) {
            continue;
        }
        let (keep, drop) = match usefulness(by_id[&a], by_id[&b]) {
            Ordering::Less => (b, a),
            _ => (a, b),
        };
        removed.insert(drop);
        pairs.push(Pair {
            kept: keep,
            removed: drop,
            similarity,
        });
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::record::sample;

    #[test]
    fn keeps_the_most_useful_of_a_cluster() {
        let mut ms: Vec<Memory> = (1..=3).map(sample).collect();
        ms[1].importance = 9.0;
        let pairs = plan(
            &ms,
            vec![(1, 2, 0.99), (2, 3, 0.95), (1, 3, 0.93), (3, 1, 0.93)],
            0.92,
        );
        let removed: Vec<u64> = pairs.iter().map(|p| p.removed).collect();
        assert_eq!(removed, [1, 3]);
        assert!(pairs.iter().all(|p| p.kept == 2));
    }

    #[test]
    fn threshold_and_namespace_bound_pairs() {
        let mut ms: Vec<Memory> = (1..=3).map(sample).collect();
        ms[2].namespace = "other".into();
        let pairs = plan(&ms, vec![(1, 2, 0.91), (1, 3, 0.99)], 0.92);
        assert!(pairs.is_empty());
    }

    #[test]
    fn usefulness_order() {
        let (mut a, mut b) = (sample(1), sample(2));
        assert_eq!(
            usefulness(&a, &b),
            Ordering::Less,
            "older id loses the final tie"
        );
        a.access_count = 3;
        assert_eq!(usefulness(&a, &b), Ordering::Greater);
        b.importance = 6.0;
        assert_eq!(usefulness(&a, &b), Ordering::Less);
    }
}
