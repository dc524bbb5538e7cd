//! Consolidation planning: which live memories form clusters, and the summary memory that
//! replaces each. Pure: the service gathers the memories and their similar pairs (dedupe's
//! machinery), asks the Mind for the summaries, and the store writes them in one batch.
//!
//! Clusters are stars, not connected components: the most useful memory not yet clustered
//! (dedupe's usefulness order) is a centre, and every unclustered memory of its namespace
//! at least `threshold` similar to it joins. Every member is thus close to one memory,
//! where components could chain A≈B≈C into one cluster of unrelated ends. A star smaller
//! than `min_cluster_size` is not formed (its members may still join a later centre).
//! Memories still linked by similarity once clustering is done form the `skipped` groups.

mod gate;

use std::collections::{HashMap, HashSet};

pub use gate::{Gate, Refusal};

use super::{
    MemoryError, PutInput,
    dedupe::usefulness,
    input::{MAX_KEY_CHARS, MAX_TAGS, validate_key},
    record::{Door, Memory, Provenance},
};
use crate::mind::{MindError, Summary};

/// Default similarity threshold of clustering (§4.2).
pub const DEFAULT_THRESHOLD: f32 = 0.75;
/// Default smallest cluster consolidated (§4.2).
pub const DEFAULT_MIN_CLUSTER_SIZE: usize = 3;
/// Neighbours asked of the vector index per memory: the largest cluster has this many
/// members besides its centre.
pub const NEIGHBOURS: usize = 32;

/// The clusters to consolidate and how many smaller groups were left alone.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Ids of each cluster's members: the centre, then the others most similar first.
    pub clusters: Vec<Vec<u64>>,
    /// Groups of two or more memories linked by similarity that are in no cluster.
    pub skipped: usize,
}

/// Plans clusters among `memories` given their similar `pairs` (normalized by
/// `dedupe::similar_pairs`: same namespace, at or above the threshold).
pub fn plan(memories: &[Memory], pairs: &[(u64, u64, f32)], min_cluster_size: usize) -> Plan {
    let mut adjacent: HashMap<u64, Vec<(u64, f32)>> = HashMap::new();
    for &(a, b, s) in pairs {
        adjacent.entry(a).or_default().push((b, s));
        adjacent.entry(b).or_default().push((a, s));
    }
    for near in adjacent.values_mut() {
        near.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    }
    let mut centres: Vec<&Memory> = memories
        .iter()
        .filter(|m| adjacent.contains_key(&m.id))
        .collect();
    centres.sort_by(|a, b| usefulness(b, a));
    let mut clustered = HashSet::new();
    let mut clusters = Vec::new();
    for centre in centres {
        if clustered.contains(&centre.id) {
            continue;
        }
        let members: Vec<u64> = std::iter::once(centre.id)
            .chain(
                adjacent[&centre.id]
                    .iter()
                    .map(|&(id, _)| id)
                    .filter(|id| !clustered.contains(id)),
            )
            .collect();
        if members.len() >= min_cluster_size {
            clustered.extend(members.iter().copied());
            clusters.push(members);
        }
    }
    let skipped = groups(&adjacent, &clustered);
    Plan { clusters, skipped }
}

/// Counts the connected groups of the similarity graph left once `clustered` is taken out.
fn groups(adjacent: &HashMap<u64, Vec<(u64, f32)>>, clustered: &HashSet<u64>) -> usize {
    let mut seen = clustered.clone();
    let mut count = 0;
    let mut starts: Vec<u64> = adjacent.keys().copied().collect();
    starts.sort_unstable();
    for start in starts {
        if !seen.insert(start) {
            continue;
        }
        let mut stack = vec![start];
        let mut size = 0;
        while let Some(id) = stack.pop() {
            size += 1;
            for &(next, _) in &adjacent[&id] {
                if seen.insert(next) {
                    stack.push(next);
                }
            }
        }
        count += usize::from(size >= 2);
    }
    count
}

/// The memory that replaces `members` (centre first): the Mind's value, its key made
/// snake_case when it is not, the cluster's namespace, highest importance and tags (the
/// first 20 distinct, in member order), observed when the newest member was, source
/// `consolidated`, its provenance naming the
/// members it replaces and the key (`key_id`) that asked for it. It expires only when every
/// member does, with the last of them. A summary that still is no valid memory (a value
/// over 5,000 characters: cutting it would drop facts) is the Mind's failure.
pub fn summary_input(
    members: &[&Memory],
    summary: &Summary,
    now: u64,
    key_id: Option<&str>,
) -> Result<PutInput, MindError> {
    let first = members[0];
    let mut tags: Vec<String> = Vec::new();
    for tag in members.iter().flat_map(|m| &m.tags) {
        if tags.len() < MAX_TAGS && !tags.contains(tag) {
            tags.push(tag.clone());
        }
    }
    let expires_at: Option<Vec<u64>> = members.iter().map(|m| m.expires_at).collect();
    let input = PutInput {
        account: first.account.clone(),
        key: snake_key(&summary.key),
        value: summary.value.clone(),
        namespace: first.namespace.clone(),
        tags,
        importance: members.iter().map(|m| m.importance).fold(1.0, f64::max),
        expires_in_days: expires_at
            .and_then(|at| at.into_iter().max())
            .map(|last| last.saturating_sub(now).max(1) as f64 / 86_400_000.0),
        observed_at: members.iter().map(|m| m.observed()).max(),
        provenance: Provenance {
            key_id: key_id.map(str::to_string),
            replaced: members.iter().map(|m| m.memory_id.clone()).collect(),
            ..Provenance::door(Door::Consolidation)
        },
    };
    match input.validate() {
        Ok(()) => Ok(input),
        Err(MemoryError::Invalid { message, .. }) => Err(MindError::Unavailable(format!(
            "the Mind's summary is not a valid memory: {message}"
        ))),
        Err(other) => Err(MindError::Unavailable(other.to_string())),
    }
}

/// `raw` if it is a valid key, else its ASCII letters and digits lowercased, other runs
/// turned into one `_`, starting with a letter (`memory_` is put before a digit or
/// nothing) and at most 128 characters.
fn snake_key(raw: &str) -> String {
    if validate_key(raw).is_ok() {
        return raw.to_string();
    }
    let mut key = String::new();
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() {
            key.push(c.to_ascii_lowercase());
        } else if !key.is_empty() && !key.ends_with('_') {
            key.push('_');
        }
    }
    if !key.starts_with(|c: char| c.is_ascii_lowercase()) {
        key.insert_str(0, "memory_");
    }
    fit(key.trim_end_matches('_'), "")
}

/// `stem` cut so that `stem + suffix` fits a key, without a trailing `_` before `suffix`.
fn fit(stem: &str, suffix: &str) -> String {
    let mut key = stem.to_string();
    key.truncate(MAX_KEY_CHARS - suffix.len());
    format!("{}{suffix}", key.trim_end_matches('_'))
}

/// Makes the summaries' (namespace, key) distinct by suffixing repeats `_2`, `_3`, … so
/// that two clusters never become two versions of one key.
pub fn distinct_keys(inputs: &mut [PutInput]) {
    let mut used: HashSet<(String, String)> = HashSet::new();
    for input in inputs {
        let mut n = 1;
        let mut key = input.key.clone();
        while !used.insert((input.namespace.clone(), key.clone())) {
            n += 1;
            key = fit(&input.key, &format!("_{n}"));
        }
        input.key = key;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        memory::record::{Source, sample},
        mind::Usage,
    };

    fn memories(n: u64) -> Vec<Memory> {
        (1..=n).map(sample).collect()
    }

    #[test]
    fn stars_form_around_the_most_useful_member() {
        let mut ms = memories(6);
        ms[2].importance = 9.0; // 3 is the centre of 1, 2, 3, 4
        let pairs = [
            (1, 3, 0.9),
            (2, 3, 0.95),
            (3, 4, 0.8),
            (1, 2, 0.85),
            (5, 6, 0.99),
        ];
        let plan = plan(&ms, &pairs, 3);
        assert_eq!(plan.clusters, vec![vec![3, 2, 1, 4]]);
        assert_eq!(plan.skipped, 1, "5 and 6 are too few");
        assert_eq!(super::plan(&ms, &pairs, 2).clusters.len(), 2);
        assert_eq!(super::plan(&ms, &pairs, 5).clusters.len(), 0);
        assert_eq!(super::plan(&ms, &pairs, 5).skipped, 2);
    }

    #[test]
    fn chains_do_not_merge_their_ends() {
        // 1≈2≈3≈4≈5 in a line: a star around 2, 3 or 4 has three members at most.
        let mut ms = memories(5);
        ms[1].importance = 9.0;
        let pairs = [(1, 2, 0.9), (2, 3, 0.9), (3, 4, 0.9), (4, 5, 0.9)];
        let plan = plan(&ms, &pairs, 3);
        assert_eq!(plan.clusters, vec![vec![2, 1, 3]]);
        assert_eq!(plan.skipped, 1, "4 and 5 remain linked");
    }

    #[test]
    fn a_small_star_leaves_its_members_to_others() {
        // 1 is most useful but has one neighbour; 2 has three.
        let mut ms = memories(4);
        ms[0].importance = 9.0;
        ms[1].importance = 8.0;
        let pairs = [(1, 2, 0.9), (2, 3, 0.9), (2, 4, 0.8)];
        let plan = plan(&ms, &pairs, 3);
        assert_eq!(plan.clusters, vec![vec![2, 1, 3, 4]]);
        assert_eq!(plan.skipped, 0);
    }

    fn summary(key: &str, value: &str) -> Summary {
        Summary {
            key: key.into(),
            value: value.into(),
            usage: Usage::default(),
        }
    }

    #[test]
    fn summaries_take_the_clusters_attributes() {
        let mut ms = memories(3);
        ms[0].tags = (0..15).map(|i| format!("t{i}")).collect();
        ms[1].tags = (10..30).map(|i| format!("t{i}")).collect();
        ms[1].importance = 7.5;
        ms[2].namespace = "ignored".into();
        let members: Vec<&Memory> = ms.iter().collect();
        let input = summary_input(
            &members,
            &summary("colour_summary", "Blue."),
            0,
            Some("key_1"),
        );
        let input = input.unwrap();
        assert_eq!(input.key, "colour_summary");
        assert_eq!(input.namespace, "default");
        assert_eq!(input.importance, 7.5);
        assert_eq!(input.source(), Source::Consolidated);
        assert_eq!(input.provenance.key_id.as_deref(), Some("key_1"));
        assert_eq!(input.provenance.replaced, ["mem_1", "mem_2", "mem_3"]);
        assert_eq!(input.tags.len(), 20);
        assert_eq!(input.tags[19], "t19");
        assert_eq!(input.expires_in_days, None);

        ms[0].expires_at = Some(86_400_000);
        ms[1].expires_at = Some(2 * 86_400_000);
        let members: Vec<&Memory> = ms.iter().collect();
        let input = summary_input(&members, &summary("k", "v"), 0, None).unwrap();
        assert_eq!(input.expires_in_days, None, "3 never expires");
        ms[2].expires_at = Some(1);
        let members: Vec<&Memory> = ms.iter().collect();
        let input = summary_input(&members, &summary("k", "v"), 0, None).unwrap();
        assert_eq!(input.expires_in_days, Some(2.0), "the last member's expiry");
    }

    #[test]
    fn bad_keys_are_made_snake_case_and_long_values_refused() {
        let ms = memories(1);
        let members: Vec<&Memory> = ms.iter().collect();
        for (raw, want) in [
            ("Favourite Colour!", "favourite_colour"),
            ("9 lives", "memory_9_lives"),
            ("--", "memory"),
            ("user_likes", "user_likes"),
        ] {
            let input = summary_input(&members, &summary(raw, "v"), 0, None).unwrap();
            assert_eq!(input.key, want);
        }
        let long = summary_input(&members, &summary(&"Key ".repeat(100), "v"), 0, None).unwrap();
        assert!(long.key.len() <= MAX_KEY_CHARS && !long.key.ends_with('_'));
        assert!(matches!(
            summary_input(&members, &summary("k", &"x".repeat(5_001)), 0, None),
            Err(MindError::Unavailable(_))
        ));
    }

    #[test]
    fn keys_are_distinct_per_namespace() {
        let ms = memories(1);
        let members: Vec<&Memory> = ms.iter().collect();
        let mut inputs: Vec<PutInput> = ["a", "a", "b", "a"]
            .iter()
            .map(|k| summary_input(&members, &summary(k, "v"), 0, None).unwrap())
            .collect();
        inputs[2].key = "a".into();
        inputs[2].namespace = "other".into();
        distinct_keys(&mut inputs);
        let keys: Vec<&str> = inputs.iter().map(|i| i.key.as_str()).collect();
        assert_eq!(keys, ["a", "a_2", "a", "a_3"]);
        let mut long: Vec<PutInput> = (0..2)
            .map(|_| summary_input(&members, &summary(&"k".repeat(128), "v"), 0, None).unwrap())
            .collect();
        distinct_keys(&mut long);
        assert_eq!(long[1].key.len(), 128);
        assert!(long[1].key.ends_with("_2"));
    }
}
