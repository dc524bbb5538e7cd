//! The `components` phase: tenants' uploaded agent components against the built-in agent.
//!
//! Uploads `n` distinct components of the default agent's size (its bytes, or
//! `WASMIND_BENCH_AGENT`'s with a custom
//! section naming the copy, so each is compiled: the worst case), timing `POST
//! /api/v1/agents/components` → 201 (from then on the component is spawnable), and the
//! RSS they add while stored and idle (each linked and kept in the runtime's cache); and
//! uploads of bytes already stored (not compiled again, but answered no sooner than their
//! first validation, so the time tells nothing). Then spawns the built-in agent and
//! uploaded components (round robin over the `n`) alternately, timing 201 and spawn →
//! `running` for each kind; the target is uploaded within 1.2× of the built-in at p99.

use std::time::{Duration, Instant};

use wasm_encoder::{ComponentSection, CustomSection};

use super::{Seen, Table, id_of, wait_until};
use crate::{
    fake_mind::FakeMind,
    harness::{self, Server, ServerOptions, rss_kib, summary},
};

/// The default agent, as the server embeds it.
const DEFAULT_AGENT: &str = wasmind_guests::DEFAULT_AGENT;

/// The default agent's bytes made distinct: a custom section saying which copy it is.
fn distinct(base: &[u8], i: usize) -> Vec<u8> {
    let mut bytes = base.to_vec();
    let copy = i.to_le_bytes();
    CustomSection {
        name: "wasmind-bench-copy".into(),
        data: copy.as_slice().into(),
    }
    .append_to_component(&mut bytes);
    bytes
}

pub fn run(n: usize, spawns: usize, grace: f64, mind: &FakeMind, table: &mut Table) {
    println!("\n== components: {n} uploaded, {spawns} spawns of each kind ==");
    let server = Server::start(harness::config(
        &mind.base_url(),
        &ServerOptions {
            max_agents: None,
            stop_grace_secs: grace,
            component: None,
        },
    ));
    let client = server.client();
    let agent = std::env::var("WASMIND_BENCH_AGENT").unwrap_or_else(|_| DEFAULT_AGENT.into());
    let base = std::fs::read(&agent).unwrap_or_else(|e| panic!("{agent}: {e}"));
    std::thread::sleep(Duration::from_millis(500));
    let rss_before = rss_kib();
    let mut uploads = Vec::with_capacity(n);
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let path = format!("/api/v1/agents/components?name=bench_{i}&version=1.0.0");
        let bytes = distinct(&base, i);
        let sent = Instant::now();
        let reply = client.post_wasm(&path, bytes);
        uploads.push(sent.elapsed());
        assert_eq!(reply.status, 201, "{}", reply.body);
        ids.push(reply.body["component_id"].as_str().unwrap().to_string());
    }
    std::thread::sleep(Duration::from_millis(500));
    let rss_after = rss_kib();
    let kib = base.len() / 1024;
    table.latency(
        &format!("upload → 201 (spawnable), distinct {kib} KiB components (each compiled)"),
        &uploads,
        None,
    );
    let again: Vec<Duration> = (0..20)
        .map(|i| {
            let path = format!("/api/v1/agents/components?name=again_{i}&version=1.0.0");
            let sent = Instant::now();
            let reply = client.post_wasm(&path, distinct(&base, 0));
            assert_eq!(reply.status, 201, "{}", reply.body);
            sent.elapsed()
        })
        .collect();
    table.latency(
        "upload → 201, bytes already stored (not compiled; padded to the first validation)",
        &again,
        None,
    );
    table.row(
        "host RSS per stored, idle component (linked, in the cache)",
        format!(
            "{:.1} KiB (VmRSS {:.0} → {:.0} MiB over {n})",
            rss_after.saturating_sub(rss_before) as f64 / n as f64,
            rss_before as f64 / 1024.0,
            rss_after as f64 / 1024.0
        ),
        "",
        None,
    );

    // Alternating, so both kinds see the same load (live agents, database size).
    let (mut builtin, mut uploaded) = (Kind::default(), Kind::default());
    for i in 0..spawns {
        builtin.spawn(&client, None);
        uploaded.spawn(&client, Some(&ids[i % n]));
    }
    let mut seen = Seen::default();
    let all = 2 * spawns;
    assert!(
        wait_until(Duration::from_secs(120), || {
            seen.drain(&server);
            seen.running.len() >= all
        }),
        "agents never all ran"
    );
    for (what, kind) in [("built-in", &builtin), ("uploaded", &uploaded)] {
        table.latency(
            &format!("POST /api/v1/agents → 201, {what} agent ({n} components stored)"),
            &kind.posts,
            None,
        );
        table.latency(
            &format!("spawn → `running`, {what} agent"),
            &kind.to_running(&seen),
            None,
        );
    }
    for (what, pick) in [
        (
            "201",
            (|k: &Kind, _: &Seen| k.posts.clone()) as fn(&Kind, &Seen) -> Vec<Duration>,
        ),
        ("`running`", |k: &Kind, s: &Seen| k.to_running(s)),
    ] {
        let ratio = harness::pct_ms(&pick(&uploaded, &seen), 0.99)
            / harness::pct_ms(&pick(&builtin, &seen), 0.99);
        table.row(
            &format!("spawn of an uploaded component, p99 to {what} ÷ built-in's"),
            format!("{ratio:.2}×"),
            "≤ 1.2×",
            Some(ratio <= 1.2),
        );
    }
    println!("uploads: {}", summary(&uploads));
    server.shutdown();
}

/// One kind's spawns: ids, when each was sent, its 201 latency.
#[derive(Default)]
struct Kind {
    ids: Vec<String>,
    sent: Vec<Instant>,
    posts: Vec<Duration>,
}

impl Kind {
    fn spawn(&mut self, client: &harness::Client, agent: Option<&str>) {
        let (reply, sent, latency) = client.spawn_agent("bench", agent);
        self.ids.push(id_of(&reply));
        self.sent.push(sent);
        self.posts.push(latency);
    }

    fn to_running(&self, seen: &Seen) -> Vec<Duration> {
        self.ids
            .iter()
            .zip(&self.sent)
            .map(|(id, sent)| seen.running[id].duration_since(*sent))
            .collect()
    }
}
