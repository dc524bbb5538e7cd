//! Search latency over a loaded data set, served with the embedder that loaded it: keyword,
//! hybrid and semantic over HTTP (distinct queries, and a small repeated set whose query
//! embeddings are cached), then the same on the library and on each index alone.

use std::cell::RefCell;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmind::memory::embed::{Embedder, Role};
use wasmind::memory::index::{KeywordIndex, LATEST, SearchFilter, VectorIndex};
use wasmind::memory::{Mode, SearchQuery};

use super::Settings;
use super::harness::{self, Client, Server};
use super::load::{Loaded, search_body};
use super::report::{Table, ms};
use super::text::Texts;

/// Queries repeated in the "cached" runs.
const CACHED_SET: usize = 20;

pub fn run(
    table: &mut Table,
    settings: &Settings,
    section: &str,
    path: &Path,
    loaded: &Loaded,
    per_account: usize,
    model: &Arc<dyn Embedder>,
) {
    let opened = harness::open(path, harness::config(loaded.kind, per_account as u64));
    table.value(
        section,
        "open in-process: server::open_state (model, indexes, agent runtime)",
        format!("{:.2} s", opened.open_time.as_secs_f64()),
        "",
        None,
    );
    let server = Server::start(opened);
    table.value(
        section,
        "machine load at the start of the searches",
        harness::loadavg(),
        "",
        None,
    );
    let keys = &loaded.keys;
    let client = Client::new(&server.base(), &keys[0].1);
    let mut texts = Texts::new(section.len() as u64 * 7919);
    let mut seen = HashSet::new();
    let mut distinct = |n: usize, texts: &mut Texts| texts.fresh_queries(&mut seen, n);
    let pick = |texts: &mut Texts| -> &str {
        let i = texts.rng().range(0, keys.len() - 1);
        &keys[i].1
    };

    // Warm up: connection, runtime, model, page cache of the indexes.
    for q in distinct(30, &mut texts) {
        for mode in ["keyword", "hybrid"] {
            client.timed_post_as(
                pick(&mut texts),
                "/api/v1/memory/search",
                &search_body(&q, mode),
                &[200],
            );
        }
    }

    let mut empty = 0usize;
    // The `as_of` results of memories rewritten since (namespace, key, memory_id): each
    // must be the version before, which only the index of the past holds (checked below).
    let rewritten = RefCell::new(Vec::new());
    // `as_of`: the world as it was then (issue 26), else the live memories.
    let mut http = |mode: &str, queries: &[String], texts: &mut Texts, as_of: Option<u64>| {
        queries
            .iter()
            .map(|q| {
                let key = pick(texts);
                let mut request = search_body(q, mode);
                if let Some(at) = as_of {
                    request["as_of"] = at.into();
                }
                let started = Instant::now();
                let (status, body) = client.post_as(key, "/api/v1/memory/search", &request);
                let took = started.elapsed();
                assert_eq!(status, 200, "search answered {status}: {body}");
                if body["results"].as_array().is_none_or(Vec::is_empty) {
                    empty += 1;
                }
                if let (Some((_, every)), Some(_)) = (loaded.rewrites, as_of) {
                    for hit in body["results"].as_array().into_iter().flatten() {
                        let key = hit["key"].as_str().unwrap_or_default();
                        let n: usize = key.trim_start_matches("memo_").parse().unwrap_or(1);
                        if n.is_multiple_of(every) {
                            let text = |f: &str| hit[f].as_str().unwrap_or_default().to_string();
                            let address = (text("namespace"), text("key"), text("memory_id"));
                            rewritten.borrow_mut().push(address);
                        }
                    }
                }
                took
            })
            .collect::<Vec<Duration>>()
    };

    let kw = distinct(settings.keyword_queries, &mut texts);
    let samples = http("keyword", &kw, &mut texts, None);
    table.latency(
        section,
        "keyword search, distinct queries",
        &samples,
        Some(5.0),
    );
    for mode in ["hybrid", "semantic"] {
        let qs = distinct(settings.embed_queries, &mut texts);
        let samples = http(mode, &qs, &mut texts, None);
        table.latency(
            section,
            &format!("{mode} search, distinct queries (query embedded)"),
            &samples,
            Some(30.0),
        );
    }
    // Before every tenth memory got its second version (when the load rewrote them): the
    // live index answers for the others, the index of the past for the tenth.
    let at = loaded
        .rewrites
        .map_or_else(harness::now_ms, |(before, _)| before);
    let qs = distinct(settings.embed_queries, &mut texts);
    let samples = http("hybrid", &qs, &mut texts, Some(at));
    let label = match loaded.rewrites {
        Some(_) => "hybrid search `as_of` before a tenth was rewritten (query embedded)",
        None => "hybrid search `as_of` a moment ago, distinct queries (query embedded)",
    };
    table.latency(section, label, &samples, None);
    let cached_set = distinct(CACHED_SET, &mut texts);
    http("hybrid", &cached_set, &mut texts, None);
    for mode in ["hybrid", "semantic"] {
        let qs: Vec<String> = (0..settings.cached_queries)
            .map(|i| cached_set[i % CACHED_SET].clone())
            .collect();
        let samples = http(mode, &qs, &mut texts, None);
        table.latency(
            section,
            &format!("{mode} search, {CACHED_SET} repeated queries (embedding cached)"),
            &samples,
            Some(5.0),
        );
    }
    let total = settings.keyword_queries
        + 3 * settings.embed_queries
        + CACHED_SET
        + 2 * settings.cached_queries;
    println!("  ({empty} of {total} searches returned no results)");
    let (rss, hwm) = harness::rss_mib(std::process::id());
    table.value(
        section,
        "bench process RSS (in-process server + client), after searches",
        format!("{rss:.0} MiB (peak {hwm:.0} MiB)"),
        "",
        None,
    );

    // The same searches on the library, no HTTP.
    let opened = server.stop();
    let rt = &opened.runtime;
    if loaded.rewrites.is_some() {
        let rewritten = rewritten.into_inner();
        assert!(
            !rewritten.is_empty(),
            "no `as_of` result was a version rewritten since"
        );
        for (namespace, key, then) in &rewritten {
            let account = &keys[0].0;
            let now = rt.block_on(opened.memory().get(account, namespace, key));
            assert_ne!(
                &now.expect("live").memory_id,
                then,
                "{key} as of then is its old version"
            );
        }
        println!(
            "  {} `as_of` results were versions rewritten since, each the old one",
            rewritten.len()
        );
    }
    let lib = |mode: Mode, queries: &[String], texts: &mut Texts| -> Vec<Duration> {
        queries
            .iter()
            .map(|q| {
                let account = &keys[texts.rng().range(0, keys.len() - 1)].0;
                let query = SearchQuery {
                    query: q.clone(),
                    namespace: None,
                    tags: Vec::new(),
                    limit: 10,
                    mode,
                    min_score: 0.0,
                    rerank: false,
                    time: Default::default(),
                };
                let started = Instant::now();
                rt.block_on(opened.memory().search(account, query))
                    .expect("search");
                started.elapsed()
            })
            .collect()
    };
    let n = settings.keyword_queries.min(500);
    let samples = lib(Mode::Keyword, &distinct(n, &mut texts), &mut texts);
    table.latency(
        section,
        "breakdown: MemoryService::search keyword, no HTTP",
        &samples,
        None,
    );
    let qs: Vec<String> = (0..n).map(|i| cached_set[i % CACHED_SET].clone()).collect();
    let samples = lib(Mode::Hybrid, &qs, &mut texts);
    table.latency(
        section,
        "breakdown: MemoryService::search hybrid cached, no HTTP",
        &samples,
        None,
    );
    let samples = lib(Mode::Semantic, &qs, &mut texts);
    table.latency(
        section,
        "breakdown: MemoryService::search semantic cached, no HTTP",
        &samples,
        None,
    );
    opened.close();

    // Each index alone (candidates = 40, what a limit-10 search asks for).
    let index_dir = path.join("index").join("memory");
    let keyword = KeywordIndex::open(&index_dir.join("keyword")).expect("keyword index");
    let vector = VectorIndex::open(&index_dir.join("vector"), 384).expect("vector index");
    let now = harness::now_ms();
    let qs = distinct(n, &mut texts);
    let mut kw_samples = Vec::new();
    let mut vec_samples = Vec::new();
    let mut embed_samples = Vec::new();
    let mut slowest: Vec<(Duration, &str, &str)> = Vec::new();
    for (i, q) in qs.iter().enumerate() {
        let account = &keys[texts.rng().range(0, keys.len() - 1)].0;
        let filter = SearchFilter {
            account: account.as_str(),
            namespace: None,
            tags: &[],
            now_ms: now,
            written_by: LATEST,
        };
        let started = Instant::now();
        keyword.search(&filter, q, 40).expect("keyword search");
        kw_samples.push(started.elapsed());
        slowest.push((started.elapsed(), account.as_str(), q.as_str()));
        if i < settings.embed_queries {
            let started = Instant::now();
            let v = model
                .embed(Role::Query, &[q])
                .expect("embed")
                .pop()
                .expect("vector");
            embed_samples.push(started.elapsed());
            let started = Instant::now();
            vector.search(&filter, &v, 40).expect("vector search");
            vec_samples.push(started.elapsed());
        }
    }
    table.latency(
        section,
        "breakdown: KeywordIndex::search, 40 candidates",
        &kw_samples,
        None,
    );
    // Whether the tail is the queries themselves or the machine: time the slowest again.
    slowest.sort_by_key(|entry| std::cmp::Reverse(entry.0));
    for (took, account, q) in slowest.iter().take(5) {
        let filter = SearchFilter {
            account,
            namespace: None,
            tags: &[],
            now_ms: now,
            written_by: LATEST,
        };
        let again: Vec<Duration> = (0..5)
            .map(|_| {
                let started = Instant::now();
                keyword.search(&filter, q, 40).expect("keyword search");
                started.elapsed()
            })
            .collect();
        let best = again.iter().min().copied().unwrap_or_default();
        println!(
            "    slow keyword query {q:?}: {:.2} ms, best of 5 repeats {:.2} ms",
            ms(*took),
            ms(best)
        );
    }
    table.latency(
        section,
        "breakdown: VectorIndex::search, 40 candidates",
        &vec_samples,
        None,
    );
    table.latency(
        section,
        "breakdown: MiniLm::embed of the query (direct)",
        &embed_samples,
        None,
    );
}
