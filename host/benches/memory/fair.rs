//! Fair queues: tenant B's put and search latency idle, and while tenant A imports as fast
//! as it can (batches of 500 from two clients, as issue 24 measured), with the default
//! embedder over HTTP. A's clients would be other machines: here they are this process's
//! threads, at nice 19, so that B waits for the server's work on A's import, not for A's
//! clients building and sending it. A's imports refused 503 (its queue full) wait `Retry-After` and are
//! sent again, as the spec tells clients to. With a database URL (phase `fair-postgres`)
//! the server keeps its memories in PostgreSQL: its write transactions are the node's shared
//! write path there, as the redb writer is on the embedded backend.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasmind::memory::embed::EmbedderKind;
use wasmind::storage::{Backend, StorageConfig};

use super::bench_dir;
use super::harness::{self, Client, Server, lower_priority};
use super::load::search_body;
use super::report::{Table, percentile_ms};
use super::text::Texts;

const SECTION: &str = "fair queues: B while A imports";
const SECTION_POSTGRES: &str = "fair queues on postgres: B while A imports";
/// Memories A imports, in batches of [`BATCH`] from [`A_CLIENTS`] clients.
const A_MEMORIES: usize = 6_500;
const BATCH: usize = 500;
const A_CLIENTS: usize = 2;
/// B's idle samples of each kind.
const IDLE: usize = 200;
/// The memories B's account holds throughout.
const B_MEMORIES: usize = 200;

/// The embedder of both tenants: the default, or with `WASMIND_BENCH_FAIR_EMBEDDER=hash`
/// the hash embedder, so the rows show the write path and HTTP without inference (which
/// of the two B waits for).
fn fair_embedder() -> EmbedderKind {
    match std::env::var("WASMIND_BENCH_FAIR_EMBEDDER").as_deref() {
        Ok("hash") => EmbedderKind::Hash,
        _ => EmbedderKind::Onnx,
    }
}

/// The phase on the embedded backend, or on the PostgreSQL database at `database_url`.
pub fn run(table: &mut Table, database_url: Option<String>) {
    let mut config = harness::config(fair_embedder(), 0);
    let (section, dir) = match database_url {
        None => (SECTION, "fair"),
        Some(url) => {
            config.storage = StorageConfig {
                backend: Backend::Postgres,
                database_url: Some(url.into()),
                ..StorageConfig::default()
            };
            (SECTION_POSTGRES, "fair-postgres")
        }
    };
    println!("\n== {section} == ({})", harness::loadavg());
    let path = bench_dir(dir);
    let _ = std::fs::remove_dir_all(&path);
    let opened = harness::open(&path, config);
    let (key_a, key_b) = (opened.key("acct-a"), opened.key("acct-b"));
    let server = Server::start(opened);
    let b = Client::new(&server.base(), &key_b);
    let mut texts = Texts::new(24);
    table.value(
        section,
        "machine load at the start",
        harness::loadavg(),
        "",
        None,
    );

    for i in 0..B_MEMORIES {
        let body = json!({ "key": format!("b_{i}"), "value": texts.sentence(13, 17) });
        b.timed_post("/api/v1/memory", &body, &[201]);
    }
    // Each turn B creates a memory, searches, and deletes its oldest (untimed): its account
    // holds the same number of memories idle and meanwhile, so what its searches scan
    // differs only by A's import (a growing account's searches slow by themselves).
    let mut next = B_MEMORIES;
    let mut b_turn = |b: &Client, texts: &mut Texts| {
        let body = json!({ "key": format!("b_{next}"), "value": texts.sentence(13, 17) });
        let put = b.timed_post("/api/v1/memory", &body, &[201]);
        let query = search_body(&texts.query(), "hybrid");
        let search = b.timed_post("/api/v1/memory/search", &query, &[200]);
        assert_eq!(
            b.delete(&format!("/api/v1/memory?key=b_{}", next - B_MEMORIES)),
            200
        );
        next += 1;
        (put, search)
    };
    let (idle_put, idle_search): (Vec<_>, Vec<_>) =
        (0..IDLE).map(|_| b_turn(&b, &mut texts)).unzip();

    let batches: Vec<Value> = (0..A_MEMORIES.div_ceil(BATCH))
        .map(|n| {
            let memories: Vec<Value> = (n * BATCH..A_MEMORIES.min((n + 1) * BATCH))
                .map(|i| json!({ "key": format!("a_{i}"), "value": texts.memory_value() }))
                .collect();
            json!({ "memories": memories })
        })
        .collect();
    let (taken, done, refused) = (
        AtomicUsize::new(0),
        AtomicBool::new(false),
        AtomicUsize::new(0),
    );
    let (mut busy_put, mut busy_search) = (Vec::new(), Vec::new());
    let started = Instant::now();
    let mut import_secs = 0.0;
    std::thread::scope(|s| {
        let importers: Vec<_> = (0..A_CLIENTS)
            .map(|_| {
                let (batches, taken, refused, key) = (&batches, &taken, &refused, &key_a);
                let base = server.base();
                s.spawn(move || {
                    // Before the client, whose connection thread inherits the priority.
                    lower_priority("A's importer");
                    let a = Client::new(&base, key);
                    while let Some(batch) = batches.get(taken.fetch_add(1, Ordering::SeqCst)) {
                        loop {
                            let (status, body) = a.post_as(key, "/api/v1/memory/import", batch);
                            match status {
                                200 => break,
                                503 => {
                                    refused.fetch_add(1, Ordering::SeqCst);
                                    std::thread::sleep(Duration::from_secs(1));
                                }
                                _ => panic!("import answered {status}: {body}"),
                            }
                        }
                    }
                })
            })
            .collect();
        s.spawn(|| {
            for importer in importers {
                importer.join().expect("importer");
            }
            done.store(true, Ordering::SeqCst);
        });
        while !done.load(Ordering::SeqCst) {
            let (put, search) = b_turn(&b, &mut texts);
            busy_put.push(put);
            busy_search.push(search);
        }
        import_secs = started.elapsed().as_secs_f64();
    });
    table.value(
        section,
        &format!("A imports {A_MEMORIES} memories ({A_CLIENTS} clients × batches of {BATCH})"),
        format!(
            "{import_secs:.1} s ({:.0}/s), {} batches refused 503 and sent again",
            A_MEMORIES as f64 / import_secs,
            refused.load(Ordering::SeqCst)
        ),
        "",
        None,
    );
    // The targets of issue 24, to a tenth of a millisecond.
    let p99 = |samples: &[Duration]| percentile_ms(samples, 0.99);
    let tenth = |ms: f64| (ms * 10.0).round() / 10.0;
    table.latency(section, "B put, idle", &idle_put, None);
    table.latency(
        section,
        &format!("B put, during A's import ({} samples)", busy_put.len()),
        &busy_put,
        Some(tenth(3.0 * p99(&idle_put) + 20.0)),
    );
    table.latency(section, "B hybrid search, idle", &idle_search, None);
    table.latency(
        section,
        &format!(
            "B hybrid search, during A's import ({} samples)",
            busy_search.len()
        ),
        &busy_search,
        Some(tenth(2.0 * p99(&idle_search) + 5.0)),
    );
    table.value(
        section,
        "machine load at the end",
        harness::loadavg(),
        "",
        None,
    );
    server.stop().close();
    let _ = std::fs::remove_dir_all(&path);
}
