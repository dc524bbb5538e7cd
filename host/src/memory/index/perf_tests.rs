//! Timing runs for the latency/cold-start targets. Ignored by default (minutes, GBs):
//! `cargo test -p wasmind --lib memory::index::perf_tests -- --ignored --nocapture --test-threads 1`
//! Scale down with `WASMIND_PERF_SCALE=10` (divides every doc count).

use std::time::{Duration, Instant};

use super::test_support::{Rng, doc};
use super::{IndexOp, KeywordIndex, SearchFilter, VectorIndex};

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

fn report(label: &str, mut samples: Vec<Duration>) {
    samples.sort_unstable();
    let pct = |p: usize| samples[(samples.len() * p / 100).min(samples.len() - 1)];
    eprintln!(
        "{label}: p50 {:?}  p99 {:?}  max {:?}",
        pct(50),
        pct(99),
        samples[samples.len() - 1]
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
    }
}

/// Docs `first..first + n` of one account: namespace "n0"/"n1" alternating, tag "rare" on 1%.
fn batch(rng: &mut Rng, account: &str, first: u64, n: u64, with_vectors: bool) -> Vec<IndexOp> {
    (first..first + n)
        .map(|id| {
            let vector = if with_vectors {
                rng.unit_vector(DIMS)
            } else {
                Vec::new()
            };
            let mut d = doc(id, account, if id % 2 == 0 { "n0" } else { "n1" }, vector);
            d.value = sentence(rng, 30);
            if id % 100 == 0 {
                d.tags = vec!["rare".into()];
            }
            IndexOp::Upsert(d)
        })
        .collect()
}

fn time_vector_searches(idx: &VectorIndex, accounts: &[String], rng: &mut Rng) {
    let rare = ["rare".to_string()];
    let cases: [(&str, Option<&str>, &[String]); 3] = [
        ("vector search, no filter", None, &[]),
        ("vector search, namespace (50%)", Some("n0"), &[]),
        ("vector search, tag (1%, exact scan)", None, &rare),
    ];
    for (label, ns, tags) in cases {
        let samples = (0..QUERIES)
            .map(|i| {
                let query = rng.unit_vector(DIMS);
                let f = filter(&accounts[i % accounts.len()], ns, tags);
                let start = Instant::now();
                let hits = idx.search(&f, &query, 10).unwrap();
                let took = start.elapsed();
                assert_eq!(hits.len(), 10);
                took
            })
            .collect();
        report(label, samples);
    }
}

fn run_vector(accounts: usize, per_account: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(1);
    let names: Vec<String> = (0..accounts).map(|a| format!("account-{a}")).collect();
    let idx = VectorIndex::open(dir.path(), DIMS).unwrap();
    let start = Instant::now();
    let mut seq = 0;
    for (a, name) in names.iter().enumerate() {
        for chunk in (0..per_account).step_by(1_000) {
            let n = 1_000.min(per_account - chunk) as u64;
            let ops = batch(&mut rng, name, (a * per_account + chunk) as u64, n, true);
            seq += 1;
            idx.apply(&ops, seq).unwrap();
        }
    }
    eprintln!(
        "vector: added {} vectors in {:?}",
        accounts * per_account,
        start.elapsed()
    );
    time_vector_searches(&idx, &names, &mut rng);
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
    time_vector_searches(&idx, &names, &mut rng);
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
            false,
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
    drop(idx);
    let start = Instant::now();
    let idx = KeywordIndex::open(dir.path()).unwrap();
    eprintln!(
        "keyword: reopen {:?} (watermark {})",
        start.elapsed(),
        idx.watermark()
    );
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
        let samples = (0..QUERIES)
            .map(|i| {
                let query = sentence(&mut rng, 4);
                let f = filter(&names[i % names.len()], ns, tags);
                let start = Instant::now();
                idx.search(&f, &query, 10).unwrap();
                start.elapsed()
            })
            .collect();
        report(label, samples);
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
