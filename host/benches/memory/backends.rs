//! Both backends side by side over HTTP (`WASMIND_BENCH_PHASES=backends`, issue 46): an
//! account grown to each of `WASMIND_BENCH_SIZES` memories (1,000, 10,000 and 100,000) in a
//! data dir and in a PostgreSQL of the bench's own (the test harness's server), both served
//! as `serve` serves them with the default embedder, and the HTTP harness's workload sent
//! to both: every request goes to one server then the same to the other, the order
//! alternating, so that both see the same queries on the same box at the same moment.
//! Prints each row's p50 and p99 on either backend and postgres ÷ embedded, with the
//! issue's targets: hybrid p50 ≤ 1.5× and p99 ≤ 2×, and `as_of` p99 on postgres ≤ 2× its
//! plain hybrid p99.
//!
//! The memories are loaded through `MemoryService::import` on the library, the same texts
//! and vectors into both (embedded once by the default model, kept across runs:
//! [`Remembered`]); each size's new tenth of them is then written again, so that an `as_of`
//! search from between the two has a past, as the `single` phase's does. Postgres gives the
//! account its graph then (what the first search would start in the background, timed as
//! set-up) and is vacuumed; its graph's recall against an exact scan is then measured per
//! `hnsw.ef_search` ([`graph_recall`]). With `WASMIND_BENCH_BACKENDS_ACCOUNTS=N`, N accounts hold the
//! same memories each (the same texts: embedding a million of them would take hours) and
//! each request goes to a random one of them.
//!
//! Settings: `WASMIND_BENCH_SIZES` (comma-separated, growing), `WASMIND_BENCH_QUERIES`
//! (200 a row), `WASMIND_BENCH_BACKENDS_ACCOUNTS` (1).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::task::JoinSet;
use wasmind::data_dir::DataDir;
use wasmind::memory::embed::{self, EmbedService, Embedder, EmbedderConfig, EmbedderKind};
use wasmind::memory::{ImportItem, MemoryConfig, MemoryService, PgMemory, PutInput, Quota};
use wasmind::storage::{Backend, StorageConfig, connect};

use super::graph_recall;
use super::harness::{self, Client, Server};
use super::load::{CHUNK, IN_FLIGHT, item, search_body};
use super::postgres::server::Postgres;
use super::remembered::Remembered;
use super::report::{Table, percentile_ms};
use super::text::Texts;
use super::{bench_dir, env_usize};

/// Of each size's new memories, every this many is written again: the account's past.
const REWRITE_EVERY: usize = 10;
/// Fresh queries the graph's recall is measured with.
const RECALL_QUERIES: usize = 100;
/// Queries repeated in the "cached" rows.
const CACHED_SET: usize = 20;
/// Where searches and puts go, and what they answer.
const SEARCH: (&str, u16) = ("/api/v1/memory/search", 200);
const PUT: (&str, u16) = ("/api/v1/memory", 201);

/// The two sides of a row.
#[derive(Clone, Copy)]
enum Side {
    Embedded,
    Postgres,
}

/// One measured row: the samples on each backend.
struct Pair {
    what: String,
    embedded: Vec<Duration>,
    postgres: Vec<Duration>,
}

impl Pair {
    fn p(&self, side: Side, q: f64) -> f64 {
        match side {
            Side::Embedded => percentile_ms(&self.embedded, q),
            Side::Postgres => percentile_ms(&self.postgres, q),
        }
    }

    /// postgres ÷ embedded at `q`.
    fn ratio(&self, q: f64) -> f64 {
        self.p(Side::Postgres, q) / self.p(Side::Embedded, q)
    }

    /// p50 and p99 embedded, p50 and p99 on postgres, and postgres ÷ embedded at both.
    fn figures(&self) -> [f64; 6] {
        let (e, p) = (Side::Embedded, Side::Postgres);
        let (e50, e99, p50, p99) = (
            self.p(e, 0.5),
            self.p(e, 0.99),
            self.p(p, 0.5),
            self.p(p, 0.99),
        );
        [e50, e99, p50, p99, p50 / e50, p99 / e99]
    }
}

/// One server of each backend with a key per account.
struct Servers {
    embedded: (Server, Client, Vec<String>),
    postgres: (Server, Client, Vec<String>),
    accounts: usize,
}

impl Servers {
    fn side(&self, side: Side) -> &(Server, Client, Vec<String>) {
        match side {
            Side::Embedded => &self.embedded,
            Side::Postgres => &self.postgres,
        }
    }

    /// `n` requests to both, the `i`th `body(i)` to `path` as a random account, timed; the
    /// first side alternates. `ok` is the status each must answer.
    fn pairs(
        &self,
        what: &str,
        n: usize,
        texts: &mut Texts,
        (path, ok): (&str, u16),
        mut body: impl FnMut(usize) -> Value,
    ) -> Pair {
        let (mut embedded, mut postgres) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for i in 0..n {
            let account = texts.rng().range(0, self.accounts - 1);
            let body = body(i);
            let order = match i % 2 {
                0 => [Side::Embedded, Side::Postgres],
                _ => [Side::Postgres, Side::Embedded],
            };
            for side in order {
                let (_, client, keys) = self.side(side);
                let took = client.timed_post_as(&keys[account], path, &body, &[ok]);
                match side {
                    Side::Embedded => embedded.push(took),
                    Side::Postgres => postgres.push(took),
                }
            }
        }
        Pair {
            what: what.to_string(),
            embedded,
            postgres,
        }
    }

    fn stop(self) {
        self.embedded.0.stop().close();
        self.postgres.0.stop().close();
    }
}

/// Both loaders: the memory service of each backend on the library, embedding with the
/// remembered embeddings, and the postgres backend to give accounts their graphs.
struct Loaders {
    runtime: tokio::runtime::Runtime,
    dir: DataDir,
    embedded: MemoryService,
    postgres: MemoryService,
    pg: Arc<PgMemory>,
}

impl Loaders {
    fn open(path: &Path, url: &str, remembered: &Arc<Remembered>) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let embedder: Arc<dyn Embedder> = remembered.clone();
        let service = || EmbedService::new(embedder.clone(), &EmbedderConfig::default());
        let dir = DataDir::open(path).expect("open the data dir");
        embed::check_identity(dir.db(), EmbedderKind::Onnx, &*embedder, false).expect("identity");
        let embedded = MemoryService::open(
            dir.db().clone(),
            &dir.index_dir("memory"),
            service(),
            &MemoryConfig::default(),
        )
        .expect("open the embedded memory");
        let pg = runtime.block_on(async {
            let config = StorageConfig {
                backend: Backend::Postgres,
                database_url: Some(url.into()),
                ..StorageConfig::default()
            };
            let pool = connect(&config).await.expect("connect");
            let identity = embed::identity(EmbedderKind::Onnx, &*embedder);
            let backend = PgMemory::open(pool, &identity, embedder.dims()).await;
            Arc::new(backend.expect("open the postgres memory"))
        });
        let postgres = MemoryService::over(pg.clone(), service(), &MemoryConfig::default());
        Self {
            runtime,
            dir,
            embedded,
            postgres,
            pg,
        }
    }

    /// Imports `items` into both, [`CHUNK`] at a time with [`IN_FLIGHT`] in flight each.
    fn import(&self, items: &[PutInput]) {
        for memory in [&self.embedded, &self.postgres] {
            self.runtime.block_on(async {
                let mut jobs = JoinSet::new();
                for chunk in items.chunks(CHUNK) {
                    while jobs.len() >= IN_FLIGHT {
                        imported(jobs.join_next().await);
                    }
                    let (memory, account) = (memory.clone(), chunk[0].account.clone());
                    let chunk: Vec<ImportItem> = (chunk.iter().cloned().enumerate())
                        .map(|(index, input)| ImportItem {
                            index,
                            key: None,
                            input: Ok(input),
                        })
                        .collect();
                    jobs.spawn(async move {
                        memory
                            .import(&account, chunk, Quota::memories(u64::MAX))
                            .await
                    });
                }
                while !jobs.is_empty() {
                    imported(jobs.join_next().await);
                }
            });
        }
    }

    /// Closes both, the embedded one's indexes made durable.
    fn close(self) {
        self.embedded.checkpoint().expect("checkpoint");
        drop((self.embedded, self.postgres, self.pg));
        self.runtime.shutdown_timeout(Duration::from_secs(10));
        harness::release(self.dir);
    }
}

fn imported(
    joined: Option<
        Result<wasmind::memory::Result<wasmind::memory::ImportReport>, tokio::task::JoinError>,
    >,
) {
    let report = joined.expect("a job").expect("join").expect("import");
    assert!(report.failed == 0 && report.halted.is_none(), "{report:?}");
}

pub fn run(table: &mut Table, model: &Arc<dyn Embedder>) {
    let sizes: Vec<usize> = std::env::var("WASMIND_BENCH_SIZES")
        .unwrap_or_else(|_| "1000,10000,100000".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("WASMIND_BENCH_SIZES: whole numbers")
        })
        .collect();
    let queries = env_usize("WASMIND_BENCH_QUERIES").unwrap_or(200).max(1);
    let accounts = env_usize("WASMIND_BENCH_BACKENDS_ACCOUNTS")
        .unwrap_or(1)
        .max(1);
    let names: Vec<String> = (0..accounts).map(|a| format!("acct-{a:04}")).collect();
    let pg = Postgres::start();
    let url = pg.database("backends");
    let (embedded_dir, node_dir) = (bench_dir("backends"), bench_dir("backends-node"));
    for dir in [&embedded_dir, &node_dir] {
        let _ = std::fs::remove_dir_all(dir);
    }
    let remembered = Remembered::open(model.clone());
    let (mut load_texts, mut values, mut texts) = (Texts::new(2), Texts::new(3), Texts::new(46));
    let mut results: Vec<(usize, Vec<Pair>)> = Vec::new();
    let mut loaded = 0;
    for &size in &sizes {
        assert!(size > loaded, "WASMIND_BENCH_SIZES must grow");
        let section = format!("backends: {accounts} × {size} memories");
        println!("\n== {section} == ({})", harness::loadavg());
        let loaders = Loaders::open(&embedded_dir, &url, &remembered);
        let started = Instant::now();
        let memories: Vec<PutInput> = (loaded..size)
            .map(|i| item(&names[0], i, &mut load_texts))
            .collect();
        let everyone = |inputs: &[PutInput]| -> Vec<PutInput> {
            (names.iter())
                .flat_map(|account| {
                    inputs.iter().map(|input| PutInput {
                        account: account.clone(),
                        ..input.clone()
                    })
                })
                .collect()
        };
        loaders.import(&everyone(&memories));
        std::thread::sleep(Duration::from_millis(5));
        let before = harness::now_ms();
        std::thread::sleep(Duration::from_millis(5));
        let rewritten: Vec<PutInput> = (memories.iter().step_by(REWRITE_EVERY))
            .map(|input| PutInput {
                value: values.memory_value(),
                ..input.clone()
            })
            .collect();
        loaders.import(&everyone(&rewritten));
        let took = started.elapsed().as_secs_f64();
        let started = Instant::now();
        for account in &names {
            (loaders.runtime.block_on(loaders.pg.index_now(account))).expect("graph");
        }
        let graphs = started.elapsed().as_secs_f64();
        loaders.close();
        pg.psql("backends", "VACUUM (ANALYZE)");
        let recall = graph_recall::measure(&pg, "backends", &names[0], model, RECALL_QUERIES);
        table.value(
            &section,
            "postgres graph: recall@40 against an exact scan, database ms per search",
            recall,
            "",
            None,
        );
        table.value(
            &section,
            "load of both via MemoryService::import, a tenth rewritten (setup)",
            format!(
                "{} memories + {} versions each in {took:.0} s; postgres graphs made in {graphs:.0} s",
                size - loaded,
                rewritten.len(),
            ),
            "",
            None,
        );
        loaded = size;

        let quota = 2 * size as u64 + 10_000;
        let servers = start(&embedded_dir, &node_dir, &url, quota, &names);
        table.value(
            &section,
            "machine load at the start of the requests",
            harness::loadavg(),
            "",
            None,
        );
        let pairs = measure(&servers, queries, size, before, &mut texts);
        servers.stop();
        let plain = pairs
            .iter()
            .find(|p| p.what.starts_with("hybrid, distinct"));
        for pair in &pairs {
            report(table, &section, pair, plain);
        }
        results.push((size, pairs));
    }
    println!("\n### Postgres ÷ embedded, same run\n");
    println!("{}", markdown(accounts, &results));
    for dir in [&embedded_dir, &node_dir] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Both servers on what was loaded, with a key for each account on each.
fn start(embedded: &Path, node: &Path, url: &str, quota: u64, names: &[String]) -> Servers {
    let side = |path: &PathBuf, storage: Option<StorageConfig>| {
        let mut config = harness::config(EmbedderKind::Onnx, quota);
        // Two servers in one process: the agent pool each reserves by default is most of
        // the address space, which holds one of them only. This workload runs no agents.
        config.runtime.max_agents = Some(100);
        if let Some(storage) = storage {
            config.storage = storage;
        }
        let opened = harness::open(path, config);
        let keys: Vec<String> = names.iter().map(|account| opened.key(account)).collect();
        let server = Server::start(opened);
        let client = Client::new(&server.base(), &keys[0]);
        (server, client, keys)
    };
    let storage = StorageConfig {
        backend: Backend::Postgres,
        database_url: Some(url.into()),
        ..StorageConfig::default()
    };
    Servers {
        embedded: side(&embedded.to_path_buf(), None),
        postgres: side(&node.to_path_buf(), Some(storage)),
        accounts: names.len(),
    }
}

/// The workload's rows at one size.
fn measure(servers: &Servers, n: usize, size: usize, before: u64, texts: &mut Texts) -> Vec<Pair> {
    let mut seen = std::collections::HashSet::new();
    let mut distinct = |texts: &mut Texts, n: usize| texts.fresh_queries(&mut seen, n);
    // Warm up: connections, page caches, the query lanes.
    for mode in ["keyword", "hybrid"] {
        let qs = distinct(texts, 30);
        servers.pairs("warm-up", 30, texts, SEARCH, |i| search_body(&qs[i], mode));
    }
    let mut rows = Vec::new();
    for (what, mode) in [
        ("keyword, distinct queries", "keyword"),
        ("hybrid, distinct queries (query embedded)", "hybrid"),
        ("semantic, distinct queries (query embedded)", "semantic"),
    ] {
        let qs = distinct(texts, n);
        rows.push(servers.pairs(what, n, texts, SEARCH, |i| search_body(&qs[i], mode)));
    }
    let cached = distinct(texts, CACHED_SET);
    for q in &cached {
        servers.pairs("cache", 1, texts, SEARCH, |_| search_body(q, "hybrid"));
    }
    for (what, mode) in [
        ("hybrid, 20 repeated queries (embedding cached)", "hybrid"),
        (
            "semantic, 20 repeated queries (embedding cached)",
            "semantic",
        ),
    ] {
        rows.push(servers.pairs(what, n, texts, SEARCH, |i| {
            search_body(&cached[i % CACHED_SET], mode)
        }));
    }
    let qs = distinct(texts, n);
    rows.push(servers.pairs(
        "hybrid `as_of` before the last tenth was rewritten (query embedded)",
        n,
        texts,
        SEARCH,
        |i| {
            let mut body = search_body(&qs[i], "hybrid");
            body["as_of"] = before.into();
            body
        },
    ));
    let values: Vec<String> = (0..n).map(|_| texts.sentence(13, 17)).collect();
    rows.push(servers.pairs(
        "put, sequential (a new memory, embedded)",
        n,
        texts,
        PUT,
        |i| json!({ "key": format!("put_{size}_{i}"), "value": values[i] }),
    ));
    rows
}

/// `pair`'s row in the bench's table (`plain`: the same size's plain hybrid row).
fn report(table: &mut Table, section: &str, pair: &Pair, plain: Option<&Pair>) {
    let [e50, e99, p50, p99, r50, r99] = pair.figures();
    let value = format!(
        "embedded {e50:.2} / {e99:.2} ms, postgres {p50:.2} / {p99:.2} ms: ×{r50:.2} / ×{r99:.2}"
    );
    let (target, met) = match target(pair, plain) {
        Some((target, met)) => (target, Some(met)),
        None => (String::new(), None),
    };
    table.value(section, &pair.what, value, &target, met);
}

/// The target for `pair`'s row, and whether it was met; `plain` is the plain
/// hybrid row of the same size (what `as_of` is held to).
fn target(pair: &Pair, plain: Option<&Pair>) -> Option<(String, bool)> {
    if pair.what.starts_with("hybrid, distinct") {
        let met = pair.ratio(0.5) <= 1.5 && pair.ratio(0.99) <= 2.0;
        return Some(("postgres ≤ ×1.5 p50, ×2 p99".into(), met));
    }
    let plain = plain?;
    pair.what.contains("as_of").then(|| {
        let bound = 2.0 * plain.p(Side::Postgres, 0.99);
        let met = pair.p(Side::Postgres, 0.99) <= bound;
        (format!("postgres p99 ≤ 2 × its plain ({bound:.1} ms)"), met)
    })
}

/// The comparison as one Markdown table, a line per row and size.
fn markdown(accounts: usize, results: &[(usize, Vec<Pair>)]) -> String {
    let mut out = String::from(
        "| accounts × memories | measurement | embedded p50 / p99 ms | postgres p50 / p99 ms | postgres ÷ embedded p50 / p99 | target | met |\n|---|---|---|---|---|---|---|\n",
    );
    for (size, pairs) in results {
        let plain = pairs
            .iter()
            .find(|p| p.what.starts_with("hybrid, distinct"));
        for pair in pairs {
            let (target, met) = match target(pair, plain) {
                Some((target, true)) => (target, "yes"),
                Some((target, false)) => (target, "**no**"),
                None => (String::new(), ""),
            };
            let [e50, e99, p50, p99, r50, r99] = pair.figures();
            out.push_str(&format!(
                "| {accounts} × {size} | {} | {e50:.2} / {e99:.2} | {p50:.2} / {p99:.2} | ×{r50:.2} / ×{r99:.2} | {target} | {met} |\n",
                pair.what,
            ));
        }
    }
    out
}
