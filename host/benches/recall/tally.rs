//! Evidence recall@k per category and mode, and the Markdown tables of the results.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::time::Duration;

use super::locomo::{CATEGORIES, Question, key};
use super::report::percentile_ms;

/// The cut-offs reported; the search asks for the largest.
pub const KS: [usize; 2] = [5, 10];

/// Sums of per-question recall, per category, for one mode.
#[derive(Default, Clone)]
pub struct Recall {
    /// Per category (index = category − 1): questions, and Σ recall for each of [`KS`].
    sums: [(usize, [f64; KS.len()]); 4],
}

impl Recall {
    /// The sums of several tallies (of several conversations, say).
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a Recall>) -> Recall {
        let mut out = Recall::default();
        for part in parts {
            for ((n, sums), (m, more)) in out.sums.iter_mut().zip(&part.sums) {
                *n += m;
                for (acc, v) in sums.iter_mut().zip(more) {
                    *acc += v;
                }
            }
        }
        out
    }

    /// Adds one question given the keys of its results, best first.
    pub fn add(&mut self, question: &Question, result_keys: &[String]) {
        let (count, sums) = &mut self.sums[usize::from(question.category - 1)];
        *count += 1;
        for (sum, k) in sums.iter_mut().zip(KS) {
            let top: HashSet<&str> = result_keys.iter().take(k).map(String::as_str).collect();
            let found = question
                .evidence
                .iter()
                .filter(|id| top.contains(key(id).as_str()))
                .count();
            *sum += found as f64 / question.evidence.len() as f64;
        }
    }

    /// (questions, mean recall for each of [`KS`]) of one category, or of all with `None`.
    pub fn mean(&self, category: Option<u8>) -> (usize, [f64; KS.len()]) {
        let picked = self
            .sums
            .iter()
            .enumerate()
            .filter(|(i, _)| category.is_none_or(|c| usize::from(c - 1) == *i));
        let mut count = 0;
        let mut sums = [0.0; KS.len()];
        for (_, (n, s)) in picked {
            count += n;
            for (acc, v) in sums.iter_mut().zip(s) {
                *acc += v;
            }
        }
        (count, sums.map(|s| s / count.max(1) as f64))
    }
}

/// One search mode's results.
pub struct ModeResult {
    pub mode: &'static str,
    /// One tally per conversation, in the data's order.
    pub per_conversation: Vec<Recall>,
    pub latencies: Vec<Duration>,
}

impl ModeResult {
    /// The tally of the conversations whose index is in `picked`.
    pub fn recall(&self, picked: impl Fn(usize) -> bool) -> Recall {
        Recall::sum(
            self.per_conversation
                .iter()
                .enumerate()
                .filter(|(i, _)| picked(*i))
                .map(|(_, r)| r),
        )
    }
}

/// The recall table of the conversations `picked`: one row per category and one for all,
/// recall@5 / @10 per mode.
pub fn recall_table(results: &[ModeResult], picked: impl Fn(usize) -> bool) -> String {
    let tallies: Vec<(&str, Recall)> = results
        .iter()
        .map(|r| (r.mode, r.recall(&picked)))
        .collect();
    let mut out = String::from("| category | questions |");
    for (mode, _) in &tallies {
        let _ = write!(out, " {mode} R@5 | {mode} R@10 |");
    }
    out.push_str("\n|---|---:|");
    out.push_str(&"---:|---:|".repeat(results.len()));
    let rows = CATEGORIES
        .iter()
        .map(|&(c, name)| (Some(c), format!("{c} {name}")))
        .chain([(None, "**all**".to_string())]);
    for (category, name) in rows {
        let n = tallies.first().map_or(0, |(_, r)| r.mean(category).0);
        let _ = write!(out, "\n| {name} | {n} |");
        for (_, r) in &tallies {
            let [r5, r10] = r.mean(category).1;
            let _ = write!(out, " {r5:.3} | {r10:.3} |");
        }
    }
    out
}

/// Search latency per mode.
pub fn latency_table(results: &[ModeResult]) -> String {
    let mut out = String::from("| mode | searches | p50 ms | p99 ms |\n|---|---:|---:|---:|");
    for r in results {
        let _ = write!(
            out,
            "\n| {} | {} | {:.2} | {:.2} |",
            r.mode,
            r.latencies.len(),
            percentile_ms(&r.latencies, 0.5),
            percentile_ms(&r.latencies, 0.99)
        );
    }
    out
}
