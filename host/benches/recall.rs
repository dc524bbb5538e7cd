//! Retrieval quality on LoCoMo (issue 10): evidence recall@5 and @10 of the real server,
//! over loopback HTTP, in each search mode.
//!
//! `cargo bench -p wasmind --bench recall` reads `../shared/data/locomo-dev.json` (beside
//! the repository root; never copied into it — CC BY-NC 4.0), starts the server as the
//! memory bench does (default embedder: int8 MiniLM on ONNX Runtime), imports every turn of
//! each conversation as a memory `"Speaker: text"` keyed by its `dia_id` (`D1:3` → `d1_3`),
//! one account per conversation, then searches every question of categories 1–4 with
//! limit 10 in keyword, hybrid and semantic mode, then hybrid with `rerank` (in that order:
//! the later ones find each query embedding in the cache hybrid filled, so semantic's
//! latency is the cached one). It prints
//! recall by category, overall and for each split half (conversations 0–2 and 3–4: tune
//! on one, report the other), import throughput and search latency as Markdown.
//!
//! Environment (all optional): `WASMIND_LOCOMO` (the data file), `WASMIND_BENCH_IMPORT_BATCH`
//! (memories per import request, 100), `WASMIND_BENCH_DIR` (/tmp), `WASMIND_BENCH_KEEP=1`
//! (keep the data dir), `WASMIND_MODEL_DIR`, `WASMIND_RECALL_DUMP=<file>` (also writes each
//! question's 50 best hybrid hits with their breakdowns as JSON lines, to try other fusions
//! offline without rebuilding).

// The memory bench's harness and report serve several benches; this one uses part of them.
#[allow(dead_code)]
#[path = "memory/harness.rs"]
mod harness;
#[path = "recall/locomo.rs"]
mod locomo;
#[allow(dead_code)]
#[path = "memory/report.rs"]
mod report;
#[path = "shared.rs"]
mod shared;
#[path = "recall/tally.rs"]
mod tally;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasmind::memory::embed::EmbedderKind;

use harness::{Client, Server};
use locomo::Conversation;
use tally::{KS, ModeResult, Recall};

/// The searches compared: (label, mode, rerank).
const MODES: [(&str, &str, bool); 4] = [
    ("keyword", "keyword", false),
    ("hybrid", "hybrid", false),
    ("semantic", "semantic", false),
    ("rerank", "hybrid", true),
];

/// The split halves (issue 26): a constant is chosen on one half and reported on the other,
/// never chosen on the whole.
const FIRST_HALF: std::ops::Range<usize> = 0..3;
const SECOND_HALF: std::ops::Range<usize> = 3..usize::MAX;

fn main() {
    let started = Instant::now();
    let conversations = locomo::load();
    let turns: usize = conversations.iter().map(|c| c.turns.len()).sum();
    let questions: usize = conversations.iter().map(|c| c.questions.len()).sum();
    let skipped: usize = conversations.iter().map(|c| c.without_evidence).sum();
    println!(
        "LoCoMo {}: {} conversations, {turns} turns, {questions} questions of categories 1-4 \
         ({skipped} more without any evidence turn, left out); {}",
        locomo::path().display(),
        conversations.len(),
        harness::loadavg()
    );
    let batch = std::env::var("WASMIND_BENCH_IMPORT_BATCH")
        .map_or(100, |v| v.parse().expect("WASMIND_BENCH_IMPORT_BATCH"))
        .max(1);

    let path = data_dir();
    let _ = std::fs::remove_dir_all(&path);
    let largest = conversations
        .iter()
        .map(|c| c.turns.len())
        .max()
        .unwrap_or(0);
    let opened = harness::open(
        &path,
        harness::config(EmbedderKind::Onnx, largest as u64 + 1),
    );
    let keys: Vec<String> = conversations.iter().map(|c| opened.key(&c.id)).collect();
    let server = Server::start(opened);
    let client = Client::new(&server.base(), &keys[0]);

    let import = import(&client, &conversations, &keys, batch);
    println!(
        "import: {turns} memories in {:.1} s, {:.0} memories/s (batches of {batch})",
        import.as_secs_f64(),
        turns as f64 / import.as_secs_f64()
    );

    let results: Vec<ModeResult> = MODES
        .iter()
        .map(|&search| search_all(&client, &conversations, &keys, search))
        .collect();

    if let Some(out) = std::env::var_os("WASMIND_RECALL_DUMP") {
        dump(&client, &conversations, &keys, &PathBuf::from(out));
    }
    server.stop().close();
    if std::env::var("WASMIND_BENCH_KEEP").is_ok_and(|v| v == "1") {
        println!("data dir kept: {}", path.display());
    } else {
        let _ = std::fs::remove_dir_all(&path);
    }
    println!(
        "\n## Evidence recall@k, limit {} ({:.0} s in all; at the end: {})\n",
        KS[KS.len() - 1],
        started.elapsed().as_secs_f64(),
        harness::loadavg()
    );
    println!("{}\n", tally::recall_table(&results, |_| true));
    for (name, half) in [
        ("conversations 0-2", FIRST_HALF),
        ("conversations 3-4", SECOND_HALF),
    ] {
        println!(
            "### {name}\n\n{}\n",
            tally::recall_table(&results, |i| half.contains(&i))
        );
    }
    println!(
        "Import: {turns} memories in {:.1} s = **{:.0} memories/s** (batches of {batch}).\n",
        import.as_secs_f64(),
        turns as f64 / import.as_secs_f64()
    );
    println!("{}", tally::latency_table(&results));
}

fn data_dir() -> PathBuf {
    std::env::var_os("WASMIND_BENCH_DIR")
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
        .join("wasmind-bench-recall")
}

/// Imports every turn, one account per conversation; returns the wall time of it all.
fn import(
    client: &Client,
    conversations: &[Conversation],
    keys: &[String],
    batch: usize,
) -> Duration {
    let started = Instant::now();
    for (conversation, key) in conversations.iter().zip(keys) {
        for chunk in conversation.turns.chunks(batch) {
            let memories: Vec<Value> = chunk
                .iter()
                .map(|t| json!({ "key": locomo::key(&t.dia_id), "value": t.value }))
                .collect();
            let (status, body) = client.post_as(
                key,
                "/api/v1/memory/import",
                &json!({ "memories": memories }),
            );
            assert_eq!(status, 200, "import into {}: {body}", conversation.id);
            assert_eq!(
                (body["imported"].as_u64(), body["failed"].as_u64()),
                (Some(chunk.len() as u64), Some(0)),
                "import into {}: {body}",
                conversation.id
            );
        }
    }
    started.elapsed()
}

/// Searches every question in `mode`, timing each request and tallying recall.
fn search_all(
    client: &Client,
    conversations: &[Conversation],
    keys: &[String],
    (label, mode, rerank): (&'static str, &str, bool),
) -> ModeResult {
    let limit = KS[KS.len() - 1];
    let mut per_conversation = Vec::new();
    let mut latencies = Vec::new();
    for (conversation, key) in conversations.iter().zip(keys) {
        let mut recall = Recall::default();
        for question in &conversation.questions {
            let body = json!({
                "query": question.text, "limit": limit, "mode": mode, "rerank": rerank
            });
            let started = Instant::now();
            let (status, resp) = client.post_as(key, "/api/v1/memory/search", &body);
            latencies.push(started.elapsed());
            assert_eq!(status, 200, "search {body}: {resp}");
            let result_keys: Vec<String> = resp["results"]
                .as_array()
                .unwrap_or_else(|| panic!("search {body}: {resp}"))
                .iter()
                .map(|hit| hit["key"].as_str().unwrap_or_default().to_string())
                .collect();
            recall.add(question, &result_keys);
        }
        per_conversation.push(recall);
    }
    let [r5, r10] = Recall::sum(&per_conversation).mean(None).1;
    println!(
        "{label}: {} searches, recall@5 {r5:.3}, recall@10 {r10:.3}",
        latencies.len()
    );
    ModeResult {
        mode: label,
        per_conversation,
        latencies,
    }
}

/// Writes, per question, its category, evidence keys and its 50 best hybrid hits with
/// their breakdowns as JSON lines: the material to try other fusions offline.
fn dump(client: &Client, conversations: &[Conversation], keys: &[String], out: &std::path::Path) {
    let mut lines = String::new();
    for (index, (conversation, key)) in conversations.iter().zip(keys).enumerate() {
        for question in &conversation.questions {
            let body = json!({ "query": question.text, "limit": 50, "mode": "hybrid" });
            let (status, resp) = client.post_as(key, "/api/v1/memory/search", &body);
            assert_eq!(status, 200, "search {body}: {resp}");
            let hits: Vec<Value> = resp["results"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|h| {
                    json!([
                        h["key"],
                        h["breakdown"]["semantic"],
                        h["breakdown"]["keyword"]
                    ])
                })
                .collect();
            let evidence: Vec<String> = question.evidence.iter().map(|e| locomo::key(e)).collect();
            let line = json!({
                "conversation": index,
                "question": question.text,
                "category": question.category,
                "evidence": evidence,
                "hits": hits
            });
            lines.push_str(&format!("{line}\n"));
        }
    }
    std::fs::write(out, lines).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
