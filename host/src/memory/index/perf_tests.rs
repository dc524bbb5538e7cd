//! Timing runs for the latency/cold-start targets. Ignored by default (minutes, GBs):
//! `cargo test -p wasmind --lib memory::index::perf_tests -- --ignored --nocapture --test-threads 1`
//! Scale down with `WASMIND_PERF_SCALE=10` (divides every doc count).

use std::time::{Duration, Instant};

use super::test_support::{Rng, doc, normalize};
use super::{IndexOp, KeywordIndex, LATEST, SearchFilter, VectorIndex};

const DIMS: usize = 384;
const VOCABULARY: u64 = 20_000;
const QUERIES: usize = 1_000;

fn scale(n: usize) -> usize {
    let divisor: usize = std::env::var("WASMIND_PERF_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    (n / divisor).max(1)
}

/// Roughly Zipf-distributed word, so common words have long posting lists.
fn word(rng: &mut Rng) -> String {
    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let rank = ((VOCABULARY as f64).powf(u) as u64).saturating_sub(1);
    let syllables = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "da", "ve"];
    let mut w = String::new();
    let mut r = rank + 10;
    while r > 0 {
        w.push_str(syllables[(r % 10) as usize]);
        r /= 10;
    }
    w
}

fn sentence(rng: &mut Rng, words: usize) -> String {
    (0..words).map(|_| word(rng)).collect::<Vec<_>>().join(" ")
}

/// Times `run` on each of `QUERIES` inputs, three times each, and prints percentiles of the
/// first run and of the fastest of the three (which discounts preemption on a busy machine).
fn time_queries(label: &str, mut run: impl FnMut(usize)) {
    let mut first = Vec::with_capacity(QUERIES);
    let mut best = Vec::with_capacity(QUERIES);
    for i in 0..QUERIES {
        let mut times = [Duration::ZERO; 3];
        for t in &mut times {
            let start = Instant::now();
            run(i);
            *t = start.elapsed();
        }
        first.push(times[0]);
        best.push(*times.iter().min().unwrap());
    }
    let pct = |samples: &mut Vec<Duration>, p: usize| {
        samples.sort_unstable();
        samples[(samples.len() * p / 100).min(samples.len() - 1)]
    };
    eprintln!(
        "{label}: p50 {:?}  p99 {:?}  |  best-of-3: p50 {:?}  p99 {:?}",
        pct(&mut first, 50),
        pct(&mut first, 99),
        pct(&mut best, 50),
        pct(&mut best, 99),
    );
}

fn filter<'a>(
    account: &'a str,
    namespace: Option<&'a str>,
    tags: &'a [String],
) -> SearchFilter<'a> {
    SearchFilter {
        account,
        namespace,
        tags,
        now_ms: 1,
        written_by: LATEST,
    }
}

/// Embedding-like vectors: noisy copies of a few hundred topic directions. Real sentence
/// embeddings cluster like this; uniform random 384-d vectors are HNSW's worst case.
struct Topics(Vec<Vec<f32>>);

impl Topics {
    fn new(rng: &mut Rng) -> Topics {
        Topics((0..256).map(|_| rng.unit_vector(DIMS)).collect())
    }

    fn sample(&self, rng: &mut Rng) -> Vec<f32> {
        let topic = &self.0[rng.below(self.0.len() as u64) as usize];
        let mut v: Vec<f32> = topic.iter().map(|x| x + 0.06 * rng.signed_unit()).collect();
        normalize(&mut v);
        v
    }
}

/// Docs `first..first + n` of one account: namespace "n0"/"n1" alternating, tag "rare" on 1%.
fn batch(
    rng: &mut Rng,
    account: &str,
    first: u64,
    n: u64,
    topics: Option<&Topics>,
) -> Vec<IndexOp> {
    (first..first + n)
        .map(|id| {
            let vector = topics.map_or_else(Vec::new, |t| t.sample(rng));
            let mut d = doc(id, account, if id % 2 == 0 { "n0" } else { "n1" }, vector);
            d.value = sentence(rng, 30);
            if id % 100 == 0 {
                d.tags = vec!["rare".into()];
            }
            IndexOp::Upsert(d)
        })
        .collect()
}

fn time_vector_searches(idx: &VectorIndex, accounts: &[String], topics: &Topics, rng: &mut Rng) {
    let rare = ["rare".to_string()];
    let cases: [(&str, Option<&str>, &[String]); 3] = [
        ("vector search, no filter", None, &[]),
        ("vector search, namespace (50%)", Some("n0"), &[]),
        ("vector search, tag (1%, exact scan)", None, &rare),
    ];
    for (label, ns, tags) in cases {
        let queries: Vec<Vec<f32>> = (0..QUERIES).map(|_| topics.sample(rng)).collect();
        time_queries(label, |i| {
            let f = filter(&accounts[i % accounts.len()], ns, tags);
            assert_eq!(idx.search(&f, &queries[i], 10).unwrap().len(), 10);
        });
    }
}

/// Fraction of the true 10 nearest docs (brute force over `docs`) that the index returns.
fn recall_at_10(
    idx: &VectorIndex,
    account: &str,
    docs: &[(u64, Vec<f32>)],
    topics: &Topics,
    rng: &mut Rng,
) -> f64 {
    let f = filter(account, None, &[]);
    let mut found = 0;
    for _ in 0..100 {
        let query = topics.sample(rng);
        let mut exact: Vec<(u64, f32)> = docs
            .iter()
            .map(|(id, v)| (*id, v.iter().zip(&query).map(|(a, b)| a * b).sum()))
            .collect();
        exact.sort_unstable_by(|a, b| b.1.total_cmp(&a.1));
        let got = idx.search(&f, &query, 10).unwrap();
        found += exact[..10]
            .iter()
            .filter(|(id, _)| got.iter().any(|g| g.0 == *id))
            .count();
    }
    found as f64 / 1_000.0
}

fn run_vector(accounts: usize, per_account: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(1);
    let topics = Topics::new(&mut rng);
    let names: Vec<String> = (0..accounts).map(|a| format!("account-{a}")).collect();
    let idx = VectorIndex::open(dir.path(), DIMS).unwrap();
    let start = Instant::now();
    let mut seq = 0;
    let mut first_account = Vec::new();
    for (a, name) in names.iter().enumerate() {
        for chunk in (0..per_account).step_by(1_000) {
            let n = 1_000.min(per_account - chunk) as u64;
            let ops = batch(
                &mut rng,
                name,
                (a * per_account + chunk) as u64,
                n,
                Some(&topics),
            );
            seq += 1;
            idx.apply(&ops, seq).unwrap();
            if a == 0 {
                first_account.extend(ops.into_iter().map(|op| match op {
                    IndexOp::Upsert(d) => (d.id, d.embedding),
                    IndexOp::Remove { .. } => unreachable!(),
                }));
            }
        }
    }
    eprintln!(
        "vector: added {} vectors in {:?}",
        accounts * per_account,
        start.elapsed()
    );
    let recall = recall_at_10(&idx, &names[0], &first_account, &topics, &mut rng);
    eprintln!("vector: recall@10 (no filter, {per_account} docs) {recall:.3}");
    time_vector_searches(&idx, &names, &topics, &mut rng);
    let start = Instant::now();
    idx.checkpoint().unwrap();
    eprintln!("vector: checkpoint {:?}", start.elapsed());
    drop(idx);
    let start = Instant::now();
    let idx = VectorIndex::open(dir.path(), DIMS).unwrap();
    eprintln!(
        "vector: reopen {:?} (watermark {})",
        start.elapsed(),
        idx.watermark()
    );
    time_vector_searches(&idx, &names, &topics, &mut rng);
}
fn run_keyword(accounts: usize, per_account: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(2);
    let names: Vec<String> = (0..accounts).map(|a| format!("account-{a}")).collect();
    let idx = KeywordIndex::open(dir.path()).unwrap();
    let start = Instant::now();
    let mut seq = 0;
    let mut ops = Vec::new();
    for (a, name) in names.iter().enumerate() {
        ops.extend(batch(
            &mut rng,
            name,
            (a * per_account) as u64,
            per_account as u64,
            None,
        ));
        if ops.len() >= 10_000 || a + 1 == accounts {
            seq += 1;
            idx.apply(&std::mem::take(&mut ops), seq).unwrap();
        }
    }
    eprintln!(
        "keyword: indexed {} docs in {:?}",
        accounts * per_account,
        start.elapsed()
    );
    let mut commits: Vec<Duration> = (0..20)
        .map(|i| {
            let ops = batch(&mut rng, &names[0], 1 << 40 | i, 1, None);
            let start = Instant::now();
            idx.apply(&ops, seq + 1 + i).unwrap();
            start.elapsed()
        })
        .collect();
    commits.sort_unstable();
    eprintln!(
        "keyword: one-doc apply (commit + reload) p50 {:?}",
        commits[10]
    );
    drop(idx);
    let start = Instant::now();
    let idx = KeywordIndex::open(dir.path()).unwrap();
    eprintln!("keyword: reopen {:?}", start.elapsed());
    let rare = ["rare".to_string()];
    let cases: [(&str, Option<&str>, &[String]); 2] = [
        ("keyword search, 4 words", None, &[]),
        (
            "keyword search, 4 words + namespace + tag",
            Some("n0"),
            &rare,
        ),
    ];
    for (label, ns, tags) in cases {
        let queries: Vec<String> = (0..QUERIES).map(|_| sentence(&mut rng, 4)).collect();
        time_queries(label, |i| {
            let f = filter(&names[i % names.len()], ns, tags);
            idx.search(&f, &queries[i], 10).unwrap();
        });
    }
}

#[test]
#[ignore = "timing run; minutes and GBs"]
fn vector_one_big_account() {
    run_vector(1, scale(100_000));
}

#[test]
#[ignore = "timing run; minutes and GBs"]
fn vector_many_accounts() {
    run_vector(scale(1_000), 1_000);
}

#[test]
#[ignore = "timing run; minutes and GBs"]
fn keyword_one_big_account() {
    run_keyword(1, scale(100_000));
}

#[test]
#[ignore = "timing run; minutes and GBs"]
fn keyword_many_accounts() {
    run_keyword(scale(1_000), 1_000);
}
