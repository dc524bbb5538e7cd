//! Memory service benchmarks against the real server over loopback HTTP.
//!
//! `cargo bench -p wasmind --bench memory` runs, in order:
//! 1. put latency and throughput with the default embedder (int8 all-MiniLM-L6-v2 on ONNX
//!    Runtime; `WASMIND_BENCH_PUT_EMBEDDER=minilm|hash` for the others);
//! 2. search latency over one account of 100,000 memories (keyword, hybrid, semantic;
//!    distinct queries and cached query embeddings);
//! 3. cold start of the real `wasmind` binary on that data dir, and its RSS;
//! 4. search latency over 1,000 accounts × 1,000 memories;
//! 5. only when asked for (`WASMIND_BENCH_PHASES=postgres`): puts and the two search data
//!    sets on the postgres backend, on the library, the single account with a past and
//!    searched `as_of` too (see `memory/postgres.rs`);
//! 6. only when asked for (`WASMIND_BENCH_PHASES=fair`): account B's put and search
//!    latency idle and while account A imports 6,500 memories as fast as it can, over HTTP
//!    (see `memory/fair.rs`); `fair-postgres` measures the same on the postgres backend;
//! 7. only when asked for (`WASMIND_BENCH_PHASES=strangers`): 10,000 connections that send
//!    half a request line, how soon the server closes them, and account B's reads meanwhile
//!    (see `memory/strangers.rs`);
//! 8. only when asked for (`WASMIND_BENCH_PHASES=slow-readers`): 10,000 connections from one
//!    address that ask for the 1.45 MB documentation bundle and read it a byte a second,
//!    what the server does with them, and B's reads from another address meanwhile (see
//!    `memory/slow_readers.rs`; the readers are this binary run again as a process of their
//!    own, `memory/readers.rs`);
//! 9. only when asked for (`WASMIND_BENCH_PHASES=backends`): both backends served over HTTP
//!    side by side at 1,000, 10,000 and 100,000 memories in one account, every request sent
//!    to both, with postgres ÷ embedded per row (see `memory/backends.rs`; its own settings
//!    are listed there).
//!
//! The search data sets are loaded through `MemoryService::import` and served with the
//! embedder that loaded them (a data dir refuses another one's vectors): one account with
//! the default embedder, so its hybrid and semantic rows include a real query embedding;
//! 1,000 × 1,000 with the `hash` embedder (same 384 dimensions; a million texts through the
//! model would take ~25 min), so its rows show the search without inference.
//!
//! Environment (all optional):
//! - `WASMIND_BENCH_SCALE=N` divides the data set sizes (quick run: 20);
//! - `WASMIND_BENCH_SINGLE`, `WASMIND_BENCH_ACCOUNTS`, `WASMIND_BENCH_PER_ACCOUNT` set them;
//! - `WASMIND_BENCH_PHASES=put,single,cold,multi,postgres,fair,fair-postgres,strangers,`
//!   `slow-readers,backends` picks phases (cold needs single's dir; the default is put,
//!   single, cold and multi);
//! - `WASMIND_BENCH_PUT_SECS` (10), `WASMIND_BENCH_CLIENTS` (16), `WASMIND_BENCH_PUTS` (300);
//! - `WASMIND_BENCH_PUT_EMBEDDER=hash` serves the HTTP puts with the hash embedder (storage
//!   and HTTP without inference); `WASMIND_BENCH_FAIR_EMBEDDER=hash` does the same for the
//!   fair phases;
//! - `WASMIND_BENCH_DIR` (/tmp) holds the data dirs; `WASMIND_BENCH_KEEP=1` keeps them and
//!   `WASMIND_BENCH_REUSE=1` reuses kept ones instead of loading again;
//! - `WASMIND_BIN` (the `wasmind` binary cargo built for this profile), `WASMIND_MODEL_DIR`.

#[path = "memory/backends.rs"]
mod backends;
#[path = "memory/bystander.rs"]
mod bystander;
#[path = "memory/cold.rs"]
mod cold;
#[path = "memory/fair.rs"]
mod fair;
#[path = "memory/graph_recall.rs"]
mod graph_recall;
#[path = "memory/harness.rs"]
mod harness;
#[path = "memory/load.rs"]
mod load;
#[path = "memory/nofile.rs"]
mod nofile;
#[path = "memory/postgres.rs"]
mod postgres;
#[path = "memory/put.rs"]
mod put;
#[path = "memory/readers.rs"]
mod readers;
#[path = "memory/remembered.rs"]
mod remembered;
#[path = "memory/report.rs"]
mod report;
#[path = "memory/search.rs"]
mod search;
#[path = "shared.rs"]
mod shared;
#[path = "memory/slow_readers.rs"]
mod slow_readers;
#[path = "memory/strangers.rs"]
mod strangers;
#[path = "memory/text.rs"]
mod text;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use wasmind::memory::embed::{EmbedderConfig, EmbedderKind};

/// Sizes and counts, from the environment.
pub struct Settings {
    pub single: usize,
    pub accounts: usize,
    pub per_account: usize,
    pub puts: usize,
    pub clients: usize,
    pub put_secs: Duration,
    pub keyword_queries: usize,
    pub embed_queries: usize,
    pub cached_queries: usize,
    pub cold_runs: usize,
    phases: Vec<String>,
    keep: bool,
}

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok().map(|v| {
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a whole number"))
    })
}

impl Settings {
    fn from_env() -> Self {
        let scale = env_usize("WASMIND_BENCH_SCALE").unwrap_or(1).max(1);
        let phases = std::env::var("WASMIND_BENCH_PHASES")
            .unwrap_or_else(|_| "put,single,cold,multi".into())
            .split(',')
            .map(|p| p.trim().to_string())
            .collect();
        Self {
            single: env_usize("WASMIND_BENCH_SINGLE")
                .unwrap_or(100_000 / scale)
                .max(1),
            accounts: env_usize("WASMIND_BENCH_ACCOUNTS")
                .unwrap_or(1_000 / scale)
                .max(1),
            per_account: env_usize("WASMIND_BENCH_PER_ACCOUNT")
                .unwrap_or(1_000)
                .max(1),
            puts: env_usize("WASMIND_BENCH_PUTS").unwrap_or(300).max(1),
            clients: env_usize("WASMIND_BENCH_CLIENTS").unwrap_or(16).max(1),
            put_secs: Duration::from_secs(env_usize("WASMIND_BENCH_PUT_SECS").unwrap_or(10) as u64),
            keyword_queries: 1_000,
            embed_queries: 300,
            cached_queries: 500,
            cold_runs: 3,
            phases,
            keep: ["WASMIND_BENCH_KEEP", "WASMIND_BENCH_REUSE"]
                .iter()
                .any(|v| std::env::var(v).is_ok_and(|v| v == "1")),
        }
    }

    fn wants(&self, phase: &str) -> bool {
        self.phases.iter().any(|p| p == phase)
    }
}

/// A data dir for `name` under `WASMIND_BENCH_DIR` (default /tmp).
pub fn bench_dir(name: &str) -> PathBuf {
    let root =
        std::env::var_os("WASMIND_BENCH_DIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    root.join(format!("wasmind-bench-{name}"))
}

fn main() {
    // The slow-readers phase runs its readers in this binary run again (see there).
    if readers::serve_if_asked() {
        return;
    }
    let started = Instant::now();
    let settings = Settings::from_env();
    let mut table = report::Table::default();
    println!(
        "wasmind memory benchmarks: {} cores; sizes: single {} memories, multi {} × {}",
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
        settings.single,
        settings.accounts,
        settings.per_account
    );
    let model_cfg = EmbedderConfig {
        kind: EmbedderKind::Onnx,
        ..EmbedderConfig::default()
    };
    let load_started = Instant::now();
    let model = wasmind::memory::embed::from_config(&model_cfg)
        .expect("load the embedder (run scripts/setup)");
    println!(
        "embedder loaded in {:.2} s",
        load_started.elapsed().as_secs_f64()
    );
    let mut dirs = Vec::new();

    if settings.wants("put") {
        println!("({})", harness::loadavg());
        put::run(&mut table, &settings, &model);
    }

    if settings.wants("single") || settings.wants("cold") {
        let section = format!("search, 1 account × {}", settings.single);
        println!("\n== {section} == ({})", harness::loadavg());
        let path = bench_dir(&format!("single-{}", settings.single));
        dirs.push(path.clone());
        // Every tenth memory rewritten: an `as_of` search from before then has a past.
        let sizes = (1, settings.single);
        let loaded = load::load(&path, sizes, 1, EmbedderKind::Onnx, Some(10));
        report_load(&mut table, &section, &loaded, settings.single, &path);
        if settings.wants("single") {
            search::run(
                &mut table,
                &settings,
                &section,
                &path,
                &loaded,
                settings.single,
                &model,
            );
        }
        if settings.wants("cold") {
            cold::run(&mut table, &path, &loaded.keys[0].1, settings.cold_runs);
        }
    }

    if settings.wants("multi") {
        let total = settings.accounts * settings.per_account;
        let section = format!(
            "search, {} accounts × {}",
            settings.accounts, settings.per_account
        );
        println!("\n== {section} == ({})", harness::loadavg());
        let path = bench_dir(&format!(
            "multi-{}x{}",
            settings.accounts, settings.per_account
        ));
        dirs.push(path.clone());
        let sizes = (settings.accounts, settings.per_account);
        let loaded = load::load(&path, sizes, 2, EmbedderKind::Hash, None);
        report_load(&mut table, &section, &loaded, total, &path);
        search::run(
            &mut table,
            &settings,
            &section,
            &path,
            &loaded,
            settings.per_account,
            &model,
        );
    }

    if settings.wants("postgres") {
        println!("\n({})", harness::loadavg());
        postgres::run(&mut table, &settings, &model);
    }

    if settings.wants("fair") {
        fair::run(&mut table, None);
    }

    if settings.wants("fair-postgres") {
        let pg = postgres::server::Postgres::start();
        fair::run(&mut table, Some(pg.database("fair")));
    }

    if settings.wants("strangers") {
        strangers::run(&mut table);
    }

    if settings.wants("slow-readers") {
        slow_readers::run(&mut table);
    }

    if settings.wants("backends") {
        backends::run(&mut table, &model);
    }

    drop(model);
    if !settings.keep {
        for dir in dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    println!(
        "\n## Results ({:.0} s in all; at the end: {})\n",
        started.elapsed().as_secs_f64(),
        harness::loadavg()
    );
    println!("{}", table.markdown());
}

fn report_load(
    table: &mut report::Table,
    section: &str,
    loaded: &load::Loaded,
    total: usize,
    path: &std::path::Path,
) {
    if loaded.took.is_zero() {
        return;
    }
    let secs = loaded.took.as_secs_f64();
    table.value(
        section,
        "load via MemoryService::import (setup)",
        format!(
            "{total} memories in {secs:.0} s ({:.0}/s), data dir {:.0} MiB",
            total as f64 / secs,
            harness::dir_mib(path)
        ),
        "",
        None,
    );
}
