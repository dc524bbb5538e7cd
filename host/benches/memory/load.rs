//! Bulk loading of the search data sets through `MemoryService::import` on the library,
//! several imports in flight so embedding overlaps the single writer.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::task::JoinSet;
use wasmind::memory::embed::EmbedderKind;
use wasmind::memory::{Door, ImportItem, Provenance, PutInput};

use super::harness;
use super::text::Texts;

/// Most items per import call: two in flight fit in one account's embedding queue
/// (`[embedder] queue_per_account`, 2,048 texts), which refuses a third import (or a
/// larger one) while another of the account's waits.
pub const CHUNK: usize = 1_000;
/// Imports in flight at once.
pub const IN_FLIGHT: usize = 2;

const NAMESPACES: [&str; 4] = ["default", "default", "work", "personal"];
const TAGS: [&str; 6] = ["project", "family", "travel", "health", "finance", "ideas"];

/// What the keys file beside a loaded data dir holds: the keys, and [`Loaded::rewrites`].
type Saved = (Vec<(String, String)>, Option<(u64, usize)>);

/// What a load produced: one key per account, and how long it took.
pub struct Loaded {
    /// (account, key) in account order.
    pub keys: Vec<(String, String)>,
    pub took: Duration,
    /// The embedder that made the vectors, the only one the data dir serves with.
    pub kind: EmbedderKind,
    /// With a history (see [`load`]): an instant after the first versions were written
    /// and before the rewrites, which an `as_of` search looks back to, and which memories
    /// were rewritten (every nth).
    pub rewrites: Option<(u64, usize)>,
}

/// Loads `accounts` accounts of `per_account` memories each into a fresh data dir at
/// `path`, creating one lightyear key per account; saves the keys beside the data so a
/// later run can reuse the dir (`WASMIND_BENCH_REUSE=1`). With `rewrite_every` = n, every
/// nth memory then gets a second version, so the data has a past.
/// `kind` embeds them; the data dir then serves only with that embedder.
pub fn load(
    path: &Path,
    (accounts, per_account): (usize, usize),
    seed: u64,
    kind: EmbedderKind,
    rewrite_every: Option<usize>,
) -> Loaded {
    let keys_file = path.join("bench-keys.json");
    let reuse = std::env::var("WASMIND_BENCH_REUSE").is_ok_and(|v| v == "1");
    if reuse && let Ok(text) = std::fs::read_to_string(&keys_file) {
        let (keys, rewrites): Saved = serde_json::from_str(&text).expect("keys file");
        println!("  reusing {} ({} accounts)", path.display(), keys.len());
        return Loaded {
            keys,
            took: Duration::ZERO,
            kind,
            rewrites,
        };
    }
    let _ = std::fs::remove_dir_all(path);
    let started = Instant::now();
    let opened = harness::open(path, harness::config(kind, per_account as u64));
    let keys: Vec<(String, String)> = (0..accounts)
        .map(|a| {
            let account = format!("acct-{a:04}");
            let key = opened.key(&account);
            (account, key)
        })
        .collect();
    let rt = &opened.runtime;
    let mut texts = Texts::new(seed);
    let first = import_all(rt, &opened, &keys, per_account, |account, i| {
        Some(item(account, i, &mut texts))
    });
    assert_eq!(first, accounts * per_account, "every memory imported");
    let rewrites = rewrite_every.map(|every| {
        std::thread::sleep(Duration::from_millis(5));
        let before = harness::now_ms();
        std::thread::sleep(Duration::from_millis(5));
        // The same seed again gives each memory its namespace; another gives new values.
        let (mut replay, mut values) = (Texts::new(seed), Texts::new(seed + 1));
        let rewritten = import_all(rt, &opened, &keys, per_account, |account, i| {
            let mut input = item(account, i, &mut replay);
            i.is_multiple_of(every).then(|| {
                input.value = values.memory_value();
                input
            })
        });
        println!("  rewrote {rewritten} memories: a second version each");
        (before, every)
    });
    opened.close();
    let took = started.elapsed();
    let saved = serde_json::to_string(&(&keys, rewrites)).expect("keys json");
    std::fs::write(&keys_file, saved).expect("write keys");
    Loaded {
        keys,
        took,
        kind,
        rewrites,
    }
}

/// Imports what `make` gives for each (account, i < per_account), in that order (`None`:
/// nothing for that one), [`CHUNK`] at a time with [`IN_FLIGHT`] in flight; returns how
/// many were imported.
fn import_all(
    rt: &tokio::runtime::Runtime,
    opened: &harness::Opened,
    keys: &[(String, String)],
    per_account: usize,
    mut make: impl FnMut(&str, usize) -> Option<PutInput>,
) -> usize {
    let limit = opened.limit();
    let started = Instant::now();
    let mut done = 0usize;
    let mut last_report = Instant::now();
    rt.block_on(async {
        let mut jobs = JoinSet::new();
        for (account, _) in keys {
            let mut i = 0;
            while i < per_account {
                let mut items = Vec::with_capacity(CHUNK);
                while items.len() < CHUNK && i < per_account {
                    if let Some(input) = make(account, i) {
                        items.push(ImportItem {
                            index: items.len(),
                            key: Some(input.key.clone()),
                            input: Ok(input),
                        });
                    }
                    i += 1;
                }
                if items.is_empty() {
                    continue;
                }
                while jobs.len() >= IN_FLIGHT {
                    done += finished(jobs.join_next().await);
                }
                let memory = opened.memory().clone();
                let account = account.clone();
                jobs.spawn(async move {
                    memory
                        .import(&account, items, wasmind::memory::Quota::memories(limit))
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
            done += finished(jobs.join_next().await);
        }
    });
    done
}

fn finished(
    joined: Option<
        Result<wasmind::memory::Result<wasmind::memory::ImportReport>, tokio::task::JoinError>,
    >,
) -> usize {
    let report = joined.expect("a job").expect("join").expect("import");
    assert!(
        report.failed == 0 && report.halted.is_none(),
        "import refused items: {report:?}"
    );
    report.imported
}

/// The `i`th memory of an account: a short English-like text with a few fields varied.
pub fn item(account: &str, i: usize, texts: &mut Texts) -> PutInput {
    let value = texts.memory_value();
    let rng = texts.rng();
    let tags = match rng.range(0, 3) {
        0 => vec![TAGS[rng.range(0, TAGS.len() - 1)].to_string()],
        _ => Vec::new(),
    };
    PutInput {
        account: account.to_string(),
        key: format!("memo_{i}"),
        value,
        namespace: NAMESPACES[rng.range(0, NAMESPACES.len() - 1)].to_string(),
        tags,
        importance: rng.range(1, 10) as f64,
        expires_in_days: None,
        observed_at: None,
        provenance: Provenance::door(Door::Import),
    }
}

/// The body of a search request.
pub fn search_body(query: &str, mode: &str) -> serde_json::Value {
    json!({ "query": query, "mode": mode })
}
