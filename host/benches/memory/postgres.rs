//! The memory domain on the postgres backend (`WASMIND_BENCH_PHASES=postgres`): a
//! PostgreSQL of the bench's own (the test harness's server: default settings, fsync and
//! synchronous commit on) on loopback, and `MemoryService` over `PgMemory` in this process
//! with no HTTP, so its rows sit beside the embedded backend's "breakdown: … no HTTP" rows.
//! Searches use the hash embedder (no inference), as the embedded 1,000 × 1,000 rows do.

#[path = "../../tests/support/postgres.rs"]
// Sharing a server across tests and restarting one are the end-to-end tests' needs.
#[allow(dead_code)]
pub mod server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;
use wasmind::memory::embed::{
    EmbedService, Embedder, EmbedderConfig, EmbedderKind, HashEmbedder, identity,
};
use wasmind::memory::{
    ImportItem, MemoryService, Mode, PgMemory, SearchHit, SearchQuery, TimeFilter,
};
use wasmind::storage::{Backend, StorageConfig, connect};

use super::Settings;
use super::load::{CHUNK, IN_FLIGHT, item};
use super::put::{concurrent_lib, input, rate_text};
use super::report::Table;
use super::text::Texts;

/// Of the single account's memories, every this many is written again: its past.
const REWRITE_EVERY: usize = 10;
/// Searches through the scan of every version, the slow path, measured for comparison.
const SCANS: usize = 20;

pub fn run(table: &mut Table, settings: &Settings, model: &Arc<dyn Embedder>) {
    let pg = server::Postgres::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut texts = Texts::new(21);

    let section = "postgres: put";
    println!("\n== {section} ==");
    let (memory, _) = rt.block_on(service(&pg.database("put_onnx"), EmbedderKind::Onnx, model));
    puts(
        table,
        &rt,
        section,
        "default embedder",
        &memory,
        settings,
        &mut texts,
    );
    let hash = hash_embedder();
    let (memory, _) = rt.block_on(service(&pg.database("put_hash"), EmbedderKind::Hash, &hash));
    puts(
        table,
        &rt,
        section,
        "hash embedder",
        &memory,
        settings,
        &mut texts,
    );

    let section = format!("postgres: search, 1 account × {}", settings.single);
    println!("\n== {section} ==");
    let (memory, backend) = rt.block_on(service(&pg.database("single"), EmbedderKind::Hash, &hash));
    let accounts = load(table, &rt, &section, &memory, 1, settings.single);
    let before = rewrite(&rt, &memory, &accounts[0], settings.single);
    // What the first search starts in the background for an account this size, done
    // before measuring so the searches take the graph path throughout.
    let started = Instant::now();
    rt.block_on(backend.index_now(&accounts[0]))
        .expect("give the account its graph");
    let secs = started.elapsed().as_secs_f64();
    // The rewrites left dead rows: vacuum now rather than have autovacuum do it in the
    // middle of the measured searches.
    pg.psql("single", "VACUUM (ANALYZE)");
    table.value(
        &section,
        "giving the loaded account its graph (setup)",
        format!(
            "{} memories in {secs:.0} s ({:.0}/s)",
            settings.single,
            settings.single as f64 / secs
        ),
        "",
        None,
    );
    searches(table, &rt, &section, &memory, &accounts, &mut texts);
    as_of_searches(
        table,
        &rt,
        &section,
        &memory,
        &accounts[0],
        before,
        &mut texts,
    );

    let section = format!(
        "postgres: search, {} accounts × {}",
        settings.accounts, settings.per_account
    );
    println!("\n== {section} ==");
    let (memory, _) = rt.block_on(service(&pg.database("multi"), EmbedderKind::Hash, &hash));
    let accounts = load(
        table,
        &rt,
        &section,
        &memory,
        settings.accounts,
        settings.per_account,
    );
    searches(table, &rt, &section, &memory, &accounts, &mut texts);
}

fn hash_embedder() -> Arc<dyn Embedder> {
    Arc::new(HashEmbedder::new(384))
}

/// A node's memory service on the database at `url`, and its backend.
async fn service(
    url: &str,
    kind: EmbedderKind,
    embedder: &Arc<dyn Embedder>,
) -> (MemoryService, Arc<PgMemory>) {
    let config = StorageConfig {
        backend: Backend::Postgres,
        database_url: Some(url.into()),
        ..StorageConfig::default()
    };
    let pool = connect(&config).await.expect("connect");
    let backend = PgMemory::open(pool, &identity(kind, &**embedder), embedder.dims())
        .await
        .expect("open the memory tables");
    let backend = Arc::new(backend);
    let embed = EmbedService::new(embedder.clone(), &EmbedderConfig::default());
    let memory = MemoryService::over(backend.clone(), embed, &Default::default());
    (memory, backend)
}

fn puts(
    table: &mut Table,
    rt: &tokio::runtime::Runtime,
    section: &str,
    embedder: &str,
    memory: &MemoryService,
    settings: &Settings,
    texts: &mut Texts,
) {
    let sequential: Vec<Duration> = (0..settings.puts)
        .map(|i| {
            let input = input("acct-put", format!("seq_{i}"), texts.sentence(13, 17));
            let started = Instant::now();
            rt.block_on(memory.put(input, wasmind::memory::Quota::memories(1_000_000)))
                .expect("put");
            started.elapsed()
        })
        .collect();
    table.latency(
        section,
        &format!("MemoryService::put, {embedder}, sequential"),
        &sequential,
        None,
    );
    let (_, rate, cpu) = concurrent_lib(rt, memory, settings.clients, settings.put_secs, texts);
    table.value(
        section,
        &format!("MemoryService::put, {embedder}, {} tasks", settings.clients),
        rate_text(rate, cpu),
        "",
        None,
    );
}

/// Loads `accounts` × `per_account` memories through imports; returns the accounts.
fn load(
    table: &mut Table,
    rt: &tokio::runtime::Runtime,
    section: &str,
    memory: &MemoryService,
    accounts: usize,
    per_account: usize,
) -> Vec<String> {
    let names: Vec<String> = (0..accounts).map(|a| format!("acct-{a:04}")).collect();
    let mut texts = Texts::new(2);
    let started = Instant::now();
    let mut last_report = Instant::now();
    let done = rt.block_on(async {
        let mut jobs = JoinSet::new();
        let mut done = 0;
        for account in &names {
            for first in (0..per_account).step_by(CHUNK) {
                let items: Vec<ImportItem> = (first..per_account.min(first + CHUNK))
                    .enumerate()
                    .map(|(index, i)| ImportItem {
                        index,
                        key: None,
                        input: Ok(item(account, i, &mut texts)),
                    })
                    .collect();
                while jobs.len() >= IN_FLIGHT {
                    done += imported(jobs.join_next().await);
                }
                let (memory, account) = (memory.clone(), account.clone());
                jobs.spawn(async move {
                    memory
                        .import(&account, items, wasmind::memory::Quota::memories(u64::MAX))
                        .await
                });
                if last_report.elapsed() > Duration::from_secs(30) {
                    last_report = Instant::now();
                    println!(
                        "  … {done} memories after {:.0} s",
                        started.elapsed().as_secs_f64()
                    );
                }
            }
        }
        while !jobs.is_empty() {
            done += imported(jobs.join_next().await);
        }
        done
    });
    let secs = started.elapsed().as_secs_f64();
    table.value(
        section,
        "load via MemoryService::import, hash embedder (setup)",
        format!(
            "{done} memories in {secs:.0} s ({:.0}/s)",
            done as f64 / secs
        ),
        "",
        None,
    );
    names
}

fn imported(
    joined: Option<
        Result<wasmind::memory::Result<wasmind::memory::ImportReport>, tokio::task::JoinError>,
    >,
) -> usize {
    let report = joined.expect("a job").expect("join").expect("import");
    assert!(report.failed == 0 && report.halted.is_none(), "{report:?}");
    report.imported
}

/// Keyword, hybrid and semantic searches (limit 10) with never-seen queries, each from a
/// random account.
fn searches(
    table: &mut Table,
    rt: &tokio::runtime::Runtime,
    section: &str,
    memory: &MemoryService,
    accounts: &[String],
    texts: &mut Texts,
) {
    for mode in [Mode::Keyword, Mode::Hybrid, Mode::Semantic] {
        let samples: Vec<Duration> = (0..300)
            .map(|_| {
                let account = &accounts[texts.rng().range(0, accounts.len() - 1)];
                let query = search_query(texts.query(), mode, TimeFilter::default());
                timed(rt, memory, account, query).0
            })
            .collect();
        table.latency(
            section,
            &format!("MemoryService::search {}, no HTTP", mode.as_str()),
            &samples,
            None,
        );
    }
}

/// Every [`REWRITE_EVERY`]th memory of `account` (of the `per_account` [`load`] gave it)
/// written again with a new value, so the account has a past; returns an instant between
/// the load and the rewrites, for an `as_of` search to look back to.
fn rewrite(
    rt: &tokio::runtime::Runtime,
    memory: &MemoryService,
    account: &str,
    per_account: usize,
) -> u64 {
    std::thread::sleep(Duration::from_millis(5));
    let before = super::harness::now_ms();
    std::thread::sleep(Duration::from_millis(5));
    // `load`'s seed again gives each memory its namespace; another gives new values.
    let (mut replay, mut values) = (Texts::new(2), Texts::new(3));
    let rewritten: Vec<ImportItem> = (0..per_account)
        .filter_map(|i| {
            let mut input = item(account, i, &mut replay);
            i.is_multiple_of(REWRITE_EVERY).then(|| {
                input.value = values.memory_value();
                input
            })
        })
        .enumerate()
        .map(|(index, input)| ImportItem {
            index,
            key: None,
            input: Ok(input),
        })
        .collect();
    let count = rewritten.len();
    let mut items = rewritten.into_iter().peekable();
    while items.peek().is_some() {
        let chunk: Vec<ImportItem> = items.by_ref().take(CHUNK).collect();
        let import = memory.import(account, chunk, wasmind::memory::Quota::memories(u64::MAX));
        imported(Some(Ok(rt.block_on(import))));
    }
    println!("  rewrote {count} memories: a second version each");
    before
}

/// Hybrid searches of `account` with never-seen queries, of its live memories and `as_of`
/// `before` (a tenth of them rewritten since), in turn; each `as_of` result must have been
/// written by `before`.
fn as_of_searches(
    table: &mut Table,
    rt: &tokio::runtime::Runtime,
    section: &str,
    memory: &MemoryService,
    account: &str,
    before: u64,
    texts: &mut Texts,
) {
    let (mut live, mut past, mut old_versions) = (Vec::new(), Vec::new(), 0);
    for _ in 0..300 {
        for as_of in [None, Some(before)] {
            let time = TimeFilter {
                as_of,
                ..TimeFilter::default()
            };
            let query = search_query(texts.query(), Mode::Hybrid, time);
            let (took, hits) = timed(rt, memory, account, query);
            if as_of.is_none() {
                live.push(took);
                continue;
            }
            past.push(took);
            assert!(hits.iter().all(|h| h.memory.updated_at <= before));
            old_versions += hits.iter().filter(|h| !h.memory.is_latest).count();
        }
    }
    // A window that keeps every version sends a search to the scan of every version live
    // then, the way each postgres `as_of` search went before the index of the past.
    let scanned: Vec<Duration> = (0..SCANS)
        .map(|_| {
            let time = TimeFilter {
                as_of: Some(before),
                observed_after: Some(0),
                observed_before: None,
            };
            let query = search_query(texts.query(), Mode::Hybrid, time);
            timed(rt, memory, account, query).0
        })
        .collect();
    table.latency(
        section,
        "MemoryService::search hybrid, `as_of` with a window keeping all (the scan), no HTTP",
        &scanned,
        None,
    );
    println!("  `as_of` results that were versions rewritten since: {old_versions}");
    table.latency(
        section,
        "MemoryService::search hybrid, live, no HTTP",
        &live,
        None,
    );
    table.latency(
        section,
        &format!("MemoryService::search hybrid, `as_of` before a tenth was rewritten ({old_versions} old versions found), no HTTP"),
        &past,
        None,
    );
}

/// A search for `query` in `mode` (limit 10) with `time`'s filters.
fn search_query(query: String, mode: Mode, time: TimeFilter) -> SearchQuery {
    SearchQuery {
        query,
        namespace: None,
        tags: Vec::new(),
        limit: 10,
        mode,
        min_score: 0.0,
        rerank: false,
        time,
    }
}

/// `query` searched in `account`, with how long it took.
fn timed(
    rt: &tokio::runtime::Runtime,
    memory: &MemoryService,
    account: &str,
    query: SearchQuery,
) -> (Duration, Vec<SearchHit>) {
    let started = Instant::now();
    let hits = rt.block_on(memory.search(account, query)).expect("search");
    (started.elapsed(), hits)
}
