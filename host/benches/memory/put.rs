//! Put latency and throughput with the real embedder, over HTTP, plus the same work on the
//! library (no HTTP) and with the hash embedder (no inference) to show where time goes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use wasmind::memory::embed::{Embedder, EmbedderKind, Role};
use wasmind::memory::{Door, Provenance, PutInput};

use super::harness::{self, Client, Server};
use super::report::{Table, ms};
use super::text::Texts;
use super::{Settings, bench_dir};

const SECTION: &str = "put";

/// The embedder serving the HTTP puts: the default (int8 MiniLM on ONNX Runtime), candle's
/// fp32 MiniLM with `WASMIND_BENCH_PUT_EMBEDDER=minilm`, or with `=hash` the hash embedder,
/// so the HTTP rows show storage + HTTP without inference.
fn put_embedder() -> EmbedderKind {
    match std::env::var("WASMIND_BENCH_PUT_EMBEDDER").as_deref() {
        Ok("hash") => EmbedderKind::Hash,
        Ok("minilm") => EmbedderKind::Minilm,
        _ => EmbedderKind::Onnx,
    }
}

pub fn run(table: &mut Table, settings: &Settings, model: &Arc<dyn Embedder>) {
    let kind = put_embedder();
    println!("\n== put: {kind:?} embedder over HTTP, one account ==");
    let path = bench_dir("put");
    let _ = std::fs::remove_dir_all(&path);
    let opened = harness::open(&path, harness::config(kind, 0));
    let key = opened.key("acct-put");
    let server = Server::start(opened);
    let client = Client::new(&server.base(), &key);
    let mut texts = Texts::new(11);
    table.value(
        SECTION,
        "machine load at the start",
        harness::loadavg(),
        "",
        None,
    );

    // Warm up connection, runtime and model.
    for i in 0..10 {
        let body = json!({ "key": format!("warm_{i}"), "value": texts.sentence(13, 17) });
        client.timed_post("/api/v1/memory", &body, &[201]);
    }
    let floor: Vec<Duration> = (0..500)
        .map(|_| {
            let started = Instant::now();
            assert_eq!(client.get("/api/v1/no_such_route"), 404);
            started.elapsed()
        })
        .collect();
    table.latency(
        SECTION,
        "HTTP round trip floor (unrouted GET → 404)",
        &floor,
        None,
    );
    let authed: Vec<Duration> = (0..500)
        .map(|_| {
            let started = Instant::now();
            assert_eq!(client.get("/api/v1/memory/namespaces"), 200);
            started.elapsed()
        })
        .collect();
    table.latency(
        SECTION,
        "authenticated GET /memory/namespaces",
        &authed,
        None,
    );

    let cpu = harness::cpu_time();
    let sequential: Vec<Duration> = (0..settings.puts)
        .map(|i| {
            let body = json!({ "key": format!("seq_{i}"), "value": texts.sentence(13, 17) });
            client.timed_post("/api/v1/memory", &body, &[201])
        })
        .collect();
    table.latency(
        SECTION,
        &format!(
            "put, 1 client, {} sequential distinct ~15-word texts",
            settings.puts
        ),
        &sequential,
        Some(15.0),
    );
    let cpu = per_put(harness::cpu_time() - cpu, sequential.len());
    table.value(
        SECTION,
        "  CPU per sequential put (whole process: server + client)",
        format!("{:.1} ms", ms(cpu)),
        "",
        None,
    );

    let (latencies, rate, cpu) =
        concurrent_http(&server, &key, settings.clients, settings.put_secs);
    table.latency(
        SECTION,
        &format!(
            "put, {} concurrent clients, {:.0} s",
            settings.clients,
            settings.put_secs.as_secs_f64()
        ),
        &latencies,
        None,
    );
    table.value(
        SECTION,
        &format!("put throughput, {} concurrent clients", settings.clients),
        rate_text(rate, cpu),
        "≥ 400 puts/s",
        Some(rate >= 400.0),
    );

    // The same puts on the library, no HTTP.
    let opened = server.stop();
    let rt = &opened.runtime;
    let lib: Vec<Duration> = (0..settings.puts.min(200))
        .map(|i| {
            let input = input("acct-put", format!("lib_{i}"), texts.sentence(13, 17));
            let started = Instant::now();
            rt.block_on(
                opened
                    .memory()
                    .put(input, wasmind::memory::Quota::memories(1_000_000)),
            )
            .expect("put");
            started.elapsed()
        })
        .collect();
    table.latency(
        SECTION,
        &format!("breakdown: MemoryService::put, {kind:?}, no HTTP"),
        &lib,
        None,
    );
    let (_, lib_rate, lib_cpu) = concurrent_lib(
        rt,
        opened.memory(),
        settings.clients,
        Duration::from_secs(5),
        &mut texts,
    );
    table.value(
        SECTION,
        &format!(
            "breakdown: MemoryService::put, {kind:?}, {} tasks, no HTTP",
            settings.clients
        ),
        rate_text(lib_rate, lib_cpu),
        "",
        None,
    );
    let cpu = harness::cpu_time();
    let embed: Vec<Duration> = (0..100)
        .map(|_| {
            let t = texts.sentence(13, 17);
            let started = Instant::now();
            model.embed(Role::Passage, &[&t]).expect("embed");
            started.elapsed()
        })
        .collect();
    table.latency(
        SECTION,
        "breakdown: Embedder::embed of one text (direct)",
        &embed,
        None,
    );
    let cpu = per_put(harness::cpu_time() - cpu, embed.len());
    table.value(
        SECTION,
        "  CPU per text, one text per call",
        format!("{:.1} ms", ms(cpu)),
        "",
        None,
    );
    let batch: Vec<String> = (0..32).map(|_| texts.sentence(13, 17)).collect();
    let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
    let cpu = harness::cpu_time();
    let started = Instant::now();
    for _ in 0..5 {
        model.embed(Role::Passage, &refs).expect("embed");
    }
    let per_s = 160.0 / started.elapsed().as_secs_f64();
    let cpu = per_put(harness::cpu_time() - cpu, 160);
    table.value(
        SECTION,
        "breakdown: Embedder::embed batches of 32, 1 caller",
        format!("{per_s:.0} texts/s ({:.1} ms CPU per text)", ms(cpu)),
        "",
        None,
    );
    opened.close();
    let _ = std::fs::remove_dir_all(&path);

    // Store + indexes alone: the hash embedder costs microseconds.
    let opened = harness::open(&path, harness::config(EmbedderKind::Hash, 0));
    let rt = &opened.runtime;
    let cpu = harness::cpu_time();
    let store: Vec<Duration> = (0..300)
        .map(|i| {
            let input = input("acct-put", format!("hash_{i}"), texts.sentence(13, 17));
            let started = Instant::now();
            rt.block_on(
                opened
                    .memory()
                    .put(input, wasmind::memory::Quota::memories(1_000_000)),
            )
            .expect("put");
            started.elapsed()
        })
        .collect();
    table.latency(
        SECTION,
        "breakdown: MemoryService::put, hash embedder (store + indexes)",
        &store,
        None,
    );
    let cpu = per_put(harness::cpu_time() - cpu, store.len());
    table.value(
        SECTION,
        "  CPU per sequential put, hash embedder",
        format!("{:.1} ms", ms(cpu)),
        "",
        None,
    );
    let (_, store_rate, store_cpu) = concurrent_lib(
        rt,
        opened.memory(),
        settings.clients,
        Duration::from_secs(5),
        &mut texts,
    );
    table.value(
        SECTION,
        &format!(
            "breakdown: MemoryService::put, hash embedder, {} tasks",
            settings.clients
        ),
        rate_text(store_rate, store_cpu),
        "",
        None,
    );
    opened.close();
    let _ = std::fs::remove_dir_all(&path);
}

pub fn input(account: &str, key: String, value: String) -> PutInput {
    PutInput {
        account: account.into(),
        key,
        value,
        namespace: "default".into(),
        tags: Vec::new(),
        importance: 5.0,
        expires_in_days: None,
        observed_at: None,
        provenance: Provenance::door(Door::Rest),
    }
}

/// `clients` threads, each with its own connection, putting distinct texts until `secs`
/// pass. Returns every latency and the overall rate.
fn concurrent_http(
    server: &Server,
    key: &str,
    clients: usize,
    secs: Duration,
) -> (Vec<Duration>, f64, Duration) {
    let all = Mutex::new(Vec::new());
    let base = server.base();
    // Texts are made before the clock starts so generating them costs nothing measured.
    let per_client: Vec<Vec<String>> = (0..clients)
        .map(|c| {
            let mut texts = Texts::new(1000 + c as u64);
            (0..4000).map(|_| texts.sentence(13, 17)).collect()
        })
        .collect();
    let clients: Vec<Client> = (0..clients).map(|_| Client::new(&base, key)).collect();
    let cpu = harness::cpu_time();
    let started = Instant::now();
    let deadline = started + secs;
    std::thread::scope(|s| {
        for (c, (client, texts)) in clients.iter().zip(&per_client).enumerate() {
            let all = &all;
            s.spawn(move || {
                let mut mine = Vec::new();
                for (i, text) in texts.iter().enumerate() {
                    if Instant::now() >= deadline {
                        break;
                    }
                    let body = json!({ "key": format!("c{c}_{i}"), "value": text });
                    mine.push(client.timed_post("/api/v1/memory", &body, &[201]));
                }
                all.lock().expect("lock").extend(mine);
            });
        }
    });
    let elapsed = started.elapsed();
    let all = all.into_inner().expect("lock");
    let rate = all.len() as f64 / elapsed.as_secs_f64();
    let cpu = per_put(harness::cpu_time() - cpu, all.len());
    (all, rate, cpu)
}

/// `tasks` async tasks putting distinct texts on the library until `secs` pass.
pub fn concurrent_lib(
    rt: &tokio::runtime::Runtime,
    memory: &wasmind::memory::MemoryService,
    tasks: usize,
    secs: Duration,
    texts: &mut Texts,
) -> (Vec<Duration>, f64, Duration) {
    let inputs: Vec<Vec<PutInput>> = (0..tasks)
        .map(|t| {
            (0..2000)
                .map(|i| {
                    input(
                        "acct-put",
                        format!("t{t}_{i}_{}", texts.rng().next_u64() % 1_000_000),
                        texts.sentence(13, 17),
                    )
                })
                .collect()
        })
        .collect();
    let cpu = harness::cpu_time();
    let started = Instant::now();
    let deadline = started + secs;
    let all = rt.block_on(async {
        let jobs: Vec<_> = inputs
            .into_iter()
            .map(|inputs| {
                let memory = memory.clone();
                tokio::spawn(async move {
                    let mut mine = Vec::new();
                    for input in inputs {
                        if Instant::now() >= deadline {
                            break;
                        }
                        let t = Instant::now();
                        memory
                            .put(input, wasmind::memory::Quota::memories(1_000_000))
                            .await
                            .expect("put");
                        mine.push(t.elapsed());
                    }
                    mine
                })
            })
            .collect();
        let mut all = Vec::new();
        for job in jobs {
            all.extend(job.await.expect("join"));
        }
        all
    });
    let rate = all.len() as f64 / started.elapsed().as_secs_f64();
    let cpu = per_put(harness::cpu_time() - cpu, all.len());
    (all, rate, cpu)
}

fn per_put(cpu: Duration, puts: usize) -> Duration {
    cpu / u32::try_from(puts.max(1)).unwrap_or(u32::MAX)
}

/// "N puts/s (C ms CPU per put: at most M puts/s on this machine's idle cores)".
pub fn rate_text(rate: f64, cpu: Duration) -> String {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let cpu_ms = ms(cpu);
    format!(
        "{rate:.0} puts/s ({cpu_ms:.1} ms CPU per put, whole process: ≤ {:.0} puts/s on {cores} idle cores)",
        cores as f64 * 1000.0 / cpu_ms.max(0.001)
    )
}
