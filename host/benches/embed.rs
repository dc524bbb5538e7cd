//! Embedding speed of the local models: query latency and bulk throughput, for the int8
//! all-MiniLM-L6-v2 on ONNX Runtime (`onnx`, the default) and the fp32 one in candle (`minilm`).
//!
//! `cargo bench -p wasmind --bench embed [-- onnx|minilm|all-MiniLM-L6-v2|e5-small-v2 …]`
//! (both kinds when none is named and the build has the `minilm` feature: `--features
//! minilm`; else `onnx`; a model's name runs the `onnx` kind with that model, so naming both
//! models measures them in the same run, under the same load); the files are found as
//! `serve` finds them (`WASMIND_HOME`, else the checkout's `models/`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use wasmind::memory::Class;
use wasmind::memory::embed::{self, EmbedService, EmbedderConfig, EmbedderKind, OnnxModel, Role};

#[path = "recall/locomo.rs"]
#[allow(dead_code)]
mod locomo;

const QUERIES: usize = 200;
const BATCH: usize = 32;
const BATCHES: usize = 12;

fn main() {
    let default = OnnxModel::default();
    let named: Vec<(EmbedderKind, OnnxModel)> = std::env::args()
        .skip(1)
        .filter_map(|a| match a.parse::<OnnxModel>() {
            Ok(model) => Some((EmbedderKind::Onnx, model)),
            Err(_) => a.parse().ok().map(|kind| (kind, default)),
        })
        .collect();
    let runs = if named.is_empty() {
        let mut runs = vec![(EmbedderKind::Onnx, default)];
        runs.extend(cfg!(feature = "minilm").then_some((EmbedderKind::Minilm, default)));
        runs
    } else {
        named
    };
    for (kind, model) in runs {
        bench(kind, model);
    }
}

/// Every measurement for one embedder kind (and the `onnx` kind's model), with the default
/// `[embedder]` settings otherwise. Queries are embedded as queries, the rest as passages.
fn bench(kind: EmbedderKind, model: OnnxModel) {
    let cfg = EmbedderConfig {
        kind,
        model,
        ..EmbedderConfig::default()
    };
    let started = Instant::now();
    let model = embed::from_config(&cfg).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "== {kind} ({}): load {:.0} ms",
        model.name(),
        ms(started.elapsed())
    );
    #[cfg(feature = "minilm")]
    if kind == EmbedderKind::Minilm {
        println!(
            "candle CPU threads: {} (set RAYON_NUM_THREADS to change)",
            candle_core::utils::get_num_threads()
        );
    }
    model
        .embed(Role::Query, &["warm up the thread pools"])
        .expect("warm-up");

    let texts = sentences(QUERIES + BATCH * BATCHES * 4);
    let mut texts = texts.iter();

    let direct = latencies(texts.by_ref().take(QUERIES), |t| {
        model.embed(Role::Query, &[t]).expect("embed");
    });
    report("query, direct Embedder::embed", &direct);

    let batches: Vec<Vec<String>> = (0..BATCHES)
        .map(|_| texts.by_ref().take(BATCH).cloned().collect())
        .collect();
    let started = Instant::now();
    for batch in &batches {
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        model.embed(Role::Passage, &refs).expect("embed");
    }
    println!(
        "bulk, direct Embedder::embed, batches of {BATCH}: {:.0} texts/s",
        (BATCH * BATCHES) as f64 / started.elapsed().as_secs_f64()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    for threads in [1, 2] {
        let cfg = EmbedderConfig {
            threads,
            batch_size: BATCH,
            ..cfg.clone()
        };
        let service = EmbedService::new(model.clone(), &cfg);
        let batches: Vec<Vec<String>> = (0..BATCHES)
            .map(|_| texts.by_ref().take(BATCH).cloned().collect())
            .collect();
        let started = Instant::now();
        rt.block_on(async {
            let jobs: Vec<_> = batches
                .into_iter()
                .map(|batch| {
                    let service = service.clone();
                    tokio::spawn(async move {
                        service.embed_documents("bench", Class::Bulk, batch).await
                    })
                })
                .collect();
            for job in jobs {
                job.await.expect("join").expect("embed");
            }
        });
        println!(
            "bulk, EmbedService threads={threads}, {BATCHES} concurrent jobs of {BATCH}: {:.0} texts/s",
            (BATCH * BATCHES) as f64 / started.elapsed().as_secs_f64()
        );
    }

    if kind == EmbedderKind::Onnx {
        locomo_bulk(&rt, &model, &cfg);
    }

    let service = EmbedService::new(model, &cfg);
    let queries: Vec<String> = sentences(QUERIES * 2)[QUERIES..].to_vec();
    let idle = latencies(queries[..QUERIES / 2].iter(), |t| {
        rt.block_on(service.embed_query("bench", t)).expect("query");
    });
    report("query, EmbedService::embed_query, idle", &idle);
    let cached = latencies(queries[..QUERIES / 2].iter(), |t| {
        rt.block_on(service.embed_query("bench", t)).expect("query");
    });
    report("query, EmbedService::embed_query, cached", &cached);

    let busy = Arc::new(AtomicBool::new(true));
    let loader = std::thread::spawn({
        let (service, busy) = (service.clone(), Arc::clone(&busy));
        let batch: Vec<String> = sentences(BATCH);
        move || {
            let mut done = 0;
            while busy.load(Ordering::Relaxed) {
                done += service
                    .embed_documents_blocking("loader", batch.clone())
                    .expect("bulk")
                    .len();
            }
            done
        }
    });
    let loaded = latencies(queries[QUERIES / 2..].iter(), |t| {
        rt.block_on(service.embed_query("bench", t)).expect("query");
    });
    busy.store(false, Ordering::Relaxed);
    let bulk_done = loader.join().expect("bulk thread");
    report(
        "query, EmbedService::embed_query, during bulk indexing",
        &loaded,
    );
    println!("  (bulk embedded {bulk_done} texts meanwhile)");
}

/// Bulk rate on the LoCoMo dev set's turns (twice the put texts' length, as the recall
/// bench's import embeds them): jobs of 100 as one import request sends, through
/// `EmbedService` with one and two workers.
fn locomo_bulk(
    rt: &tokio::runtime::Runtime,
    model: &Arc<dyn embed::Embedder>,
    cfg: &EmbedderConfig,
) {
    let turns: Vec<String> = locomo::load()
        .into_iter()
        .flat_map(|c| c.turns.into_iter().map(|t| t.value))
        .take(1_000)
        .collect();
    for threads in [1, 2] {
        let cfg = EmbedderConfig {
            threads,
            ..cfg.clone()
        };
        let service = EmbedService::new(model.clone(), &cfg);
        let started = Instant::now();
        rt.block_on(async {
            for job in turns.chunks(100) {
                service
                    .embed_documents("bench", Class::Bulk, job.to_vec())
                    .await
                    .expect("embed");
            }
        });
        println!(
            "bulk, LoCoMo turns, EmbedService threads={threads}, sequential jobs of 100: {:.0} texts/s",
            turns.len() as f64 / started.elapsed().as_secs_f64()
        );
    }
}

/// `n` distinct short sentences of 10 to 14 words.
fn sentences(n: usize) -> Vec<String> {
    const WHO: [&str; 6] = [
        "the agent",
        "a user",
        "the build bot",
        "our team",
        "the tenant",
        "my cat",
    ];
    const DID: [&str; 5] = ["moved", "rotated", "archived", "reviewed", "forgot"];
    const WHAT: [&str; 7] = [
        "the deploy key",
        "last week's notes",
        "a failing test",
        "the billing report",
        "the staging cluster",
        "an old password",
        "the grocery list",
    ];
    const WHEN: [&str; 4] = [
        "before the Monday standup",
        "late at night",
        "after lunch",
        "during the outage",
    ];
    (0..n)
        .map(|i| {
            format!(
                "Note {i}: {} {} {} {}.",
                WHO[i % WHO.len()],
                DID[i / 3 % DID.len()],
                WHAT[i / 7 % WHAT.len()],
                WHEN[i / 11 % WHEN.len()]
            )
        })
        .collect()
}

/// Runs `f` on each text, timing each call.
fn latencies<'a>(
    texts: impl Iterator<Item = &'a String>,
    mut f: impl FnMut(&str),
) -> Vec<Duration> {
    texts
        .map(|t| {
            let started = Instant::now();
            f(t);
            started.elapsed()
        })
        .collect()
}

fn report(what: &str, samples: &[Duration]) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let at = |q: f64| ms(sorted[((sorted.len() - 1) as f64 * q).round() as usize]);
    println!(
        "{what}: p50 {:.2} ms, p99 {:.2} ms ({} samples)",
        at(0.5),
        at(0.99),
        sorted.len()
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
