//! A data dir written with today's embedder (all-MiniLM-L6-v2) re-embedded with
//! e5-small-v2 while it is searched: a kill -9 midway, the work resumed at the restart,
//! every search answered throughout with one model's query and vectors, and at the end
//! e5 recorded and serving. On postgres the ask is refused, saying so.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Client, Options, Server, on_postgres, poll_until, server_with_keys};

/// Memories written with MiniLM: enough that e5 takes seconds over them.
const STORED: usize = 300;
/// With those put while the re-embedding runs.
const ALL: usize = STORED + 5;

fn value(n: usize) -> String {
    format!(
        "note {n}: the build server {} restarts at {} am after the {} deploy",
        n % 17,
        n % 12,
        n * 7
    )
}

fn e5(upgrade: bool) -> Options {
    let mut env = vec![("WASMIND_EMBEDDER_MODEL".into(), "e5-small-v2".into())];
    if upgrade {
        env.push(("WASMIND_EMBEDDER_UPGRADE".into(), "true".into()));
    }
    Options {
        env,
        ..Options::default()
    }
}

/// The top hit of a semantic search for the stored text of `n`: its key and its cosine,
/// which is near 1 when the query and the vectors are of one model (MiniLM's, or e5's
/// `query: ` against `passage: `) and far below when they are mixed.
fn top(c: &Client, n: usize) -> (String, f64) {
    let r = c.post(
        "/api/v1/memory/search",
        &json!({ "query": value(n), "mode": "semantic", "limit": 1 }),
    );
    assert_eq!(
        r.status, 200,
        "a search failed during the re-embedding: {:#}",
        r.body
    );
    let hit = &r.body["results"][0];
    let key = hit["key"].as_str().expect("no hit").to_owned();
    (key, hit["breakdown"]["semantic"].as_f64().unwrap())
}

/// Searches until `stop`, each for a stored text, which must come first with one model's
/// cosine; returns the lowest cosine seen and how many searches ran.
fn search_until(c: &Client, stop: &AtomicBool) -> (f64, usize) {
    let (mut lowest, mut searches) = (1.0f64, 0);
    while !stop.load(Ordering::Acquire) {
        let n = searches * 37 % STORED;
        let (key, cosine) = top(c, n);
        assert_eq!(key, format!("k{n}"), "cosine {cosine}");
        assert!(
            cosine > 0.8,
            "a search mixed two models: cosine {cosine} for k{n}"
        );
        lowest = lowest.min(cosine);
        searches += 1;
    }
    (lowest, searches)
}

/// `/readyz`'s re-embedding report, as a keyed request sees it.
fn reembed(c: &Client) -> Value {
    c.get("/readyz").body["reembed"].clone()
}

/// Searches `server` while `until` says the re-embedding is not there yet; returns the
/// report that satisfied it, the lowest cosine and how many searches ran.
fn searched_until(
    server: &Server,
    key: &str,
    what: &str,
    until: impl Fn(&Value) -> bool,
) -> (Value, f64, usize) {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let searcher = s.spawn(|| search_until(&server.client(key), &stop));
        let report = poll_until(Duration::from_secs(300), what, || {
            let report = reembed(&server.client(key));
            match until(&report) {
                true => Ok(report),
                false => Err(format!("{report}")),
            }
        });
        stop.store(true, Ordering::Release);
        let (lowest, searches) = searcher.join().expect("the searcher failed");
        (report, lowest, searches)
    })
}

#[test]
fn a_data_dir_written_with_minilm_is_reembedded_with_e5_while_searched_across_a_kill() {
    let (tmp, mut server, keys) = server_with_keys(&[("acme", "free")], &Options::default());
    let dir = tmp.path().join("data");
    let c = server.client(&keys[0]);
    let memories: Vec<Value> = (0..STORED)
        .map(|n| json!({ "key": format!("k{n}"), "value": value(n) }))
        .collect();
    for chunk in memories.chunks(100) {
        let r = c.post("/api/v1/memory/import", &json!({ "memories": chunk }));
        assert_eq!(r.status, 200, "{:#}", r.body);
    }
    let (_, minilm) = top(&c, 7);
    assert!(
        minilm > 0.999,
        "MiniLM embeds query and passage alike: {minilm}"
    );
    server.stop();

    if on_postgres() {
        let refused = Server::try_start(&dir, &e5(true))
            .err()
            .expect("postgres re-embedded");
        assert!(
            refused.contains("not available on the postgres backend"),
            "{refused}"
        );
        return;
    }

    // Asked for: MiniLM serves while e5 walks; killed midway.
    let mut server = Server::start_with(&dir, &e5(true));
    let midway = |r: &Value| r["state"] == "running" && r["done"].as_u64() > Some(0);
    let (report, lowest, searches) = searched_until(&server, &keys[0], "midway", midway);
    assert_eq!(
        report["from"], "onnx:all-MiniLM-L6-v2-onnx-int8:384",
        "{report}"
    );
    assert_eq!(report["to"], "onnx:e5-small-v2-onnx-int8:384", "{report}");
    assert!(
        report["done"].as_u64() < report["total"].as_u64(),
        "done already: {report}"
    );
    assert!(
        searches > 0 && lowest > 0.999,
        "MiniLM serves until the flip: {lowest}"
    );
    let anonymous = Client::new(&server.base, None).get("/readyz");
    assert_eq!(anonymous.body["reembed"], json!({ "state": "running" }));
    server.kill9();

    // Restarted with e5 alone (the ask is recorded): the work goes on from where it was
    // committed, and finishes while searched.
    let mut server = Server::start_with(&dir, &e5(false));
    let resumed = reembed(&server.client(&keys[0]));
    assert!(
        resumed["done"].as_u64() >= report["done"].as_u64(),
        "{resumed} after {report}"
    );
    // Puts meanwhile are embedded by MiniLM and walked by e5 too.
    let c = server.client(&keys[0]);
    for n in STORED..ALL {
        crate::common::put(&c, &json!({ "key": format!("k{n}"), "value": value(n) }));
    }
    let done = |r: &Value| r["state"] == "done";
    let (report, _, searches) = searched_until(&server, &keys[0], "done", done);
    assert!(searches > 0);
    assert_eq!(report["done"], ALL, "{report}");
    assert_eq!(report["total"], ALL, "{report}");
    let metrics = reqwest::blocking::get(format!("{}/metrics", server.base))
        .unwrap()
        .text()
        .unwrap();
    for line in [
        "wasmind_memory_reembed_state{state=\"done\"} 1",
        &format!("wasmind_memory_reembed_vectors{{part=\"done\"}} {ALL}"),
        &format!("wasmind_memory_reembed_vectors{{part=\"all\"}} {ALL}"),
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
    let e5_cosines: Vec<f64> = [7, ALL - 1]
        .into_iter()
        .map(|n| {
            let (key, cosine) = top(&c, n);
            assert_eq!(key, format!("k{n}"));
            assert!(
                (0.8..0.999).contains(&cosine),
                "e5 embeds a query and a passage differently: {cosine}"
            );
            cosine
        })
        .collect();
    server.stop();

    // e5 is recorded: it starts without an ask and answers as before; MiniLM is refused.
    let server = Server::start_with(&dir, &e5(false));
    let c = server.client(&keys[0]);
    assert!(reembed(&c).is_null());
    for (n, before) in [7, ALL - 1].into_iter().zip(e5_cosines) {
        let (key, cosine) = top(&c, n);
        assert_eq!(key, format!("k{n}"));
        assert!((cosine - before).abs() < 1e-3, "{cosine} after {before}");
    }
    drop(server);
    let refused = Server::try_start(&dir, &Options::default())
        .err()
        .expect("MiniLM started on e5's vectors");
    assert!(
        refused.contains("onnx:e5-small-v2-onnx-int8:384"),
        "{refused}"
    );
    assert!(refused.contains("WASMIND_EMBEDDER_UPGRADE"), "{refused}");
}

/// `wasmind memory reembed` runs the re-embedding offline, reporting its progress: refused
/// while a server holds the data dir, then done, and a server with e5 starts on it.
#[test]
fn the_operator_command_reembeds_a_stopped_data_dir_and_reports_it() {
    let (tmp, mut server, keys) = server_with_keys(&[("acme", "free")], &Options::default());
    let dir = tmp.path().join("data");
    let memories: Vec<Value> = (0..40)
        .map(|n| json!({ "key": format!("k{n}"), "value": value(n) }))
        .collect();
    let r =
        (server.client(&keys[0])).post("/api/v1/memory/import", &json!({ "memories": memories }));
    assert_eq!(r.status, 200, "{:#}", r.body);
    let command = || {
        let mut cmd = std::process::Command::new(crate::common::binary());
        cmd.args(["memory", "reembed", "--data-dir", dir.to_str().unwrap()])
            .env("WASMIND_EMBEDDER_MODEL", "e5-small-v2")
            .env_remove("WASMIND_MODEL_DIR")
            .env_remove("WASMIND_HOME")
            .env_remove("WASMIND_CONFIG");
        if on_postgres() {
            let config = dir.with_extension("cli.toml");
            std::fs::write(&config, crate::common::storage_section(&dir)).unwrap();
            cmd.arg("--config").arg(config);
        }
        let out = cmd.output().expect("running wasmind memory reembed");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    };
    if on_postgres() {
        server.stop();
        let (ok, _, stderr) = command();
        assert!(
            !ok && stderr.contains("not available on the postgres backend"),
            "{stderr}"
        );
        return;
    }
    let (ok, _, stderr) = command();
    assert!(
        !ok && stderr.contains("in use by another wasmind process"),
        "{stderr}"
    );
    server.stop();
    let (ok, stdout, stderr) = command();
    assert!(ok, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("done: 40 of 40 versions re-embedded from onnx:all-MiniLM-L6-v2-onnx-int8:384 to onnx:e5-small-v2-onnx-int8:384"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the memories are embedded by onnx:e5-small-v2-onnx-int8:384"),
        "{stdout}"
    );
    let (ok, stdout, _) = command();
    assert!(ok && stdout.contains("nothing to do"), "{stdout}");
    let server = Server::start_with(&dir, &e5(false));
    let (key, cosine) = top(&server.client(&keys[0]), 3);
    assert_eq!(key, "k3");
    assert!((0.8..0.999).contains(&cosine), "e5's cosine: {cosine}");
}
