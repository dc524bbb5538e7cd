//! The `cpu` phase: CPU shared by account, and the API while guests keep the cores busy.
//!
//! Tenant B's CPU-bound agent (the `hostile` test guest's `work N`: N rounds of fixed
//! work, each with a progress report) is timed from spawn to `completed` alone, then
//! while tenant A runs `spin` agents (8 by default) that burn CPU until stopped; the
//! target is within 1.5× of alone. `GET /api/v1/agents/{id}` and a keyword search are
//! timed idle and under the same load; the target is p99 ≤ 2× idle p99 + 2 ms. Then what
//! metering costs: a read of the thread CPU clock, twice per slice of 10 ms.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{Table, wait_until};
use crate::{
    fake_mind::FakeMind,
    guests,
    harness::{self, Client, Server, ServerOptions, pct_ms, summary},
};

/// Rounds of `work` (each ~19 ms of CPU): about 2 s alone.
const WORK: &str = "work 100";

pub fn run(spinners: usize, samples: usize, requests: usize, mind: &FakeMind, table: &mut Table) {
    println!(
        "\n== cpu: tenant B's `{WORK}` alone and beside tenant A's {spinners} spinning agents =="
    );
    let server = Server::start(harness::config(
        &mind.base_url(),
        &ServerOptions {
            max_agents: None,
            stop_grace_secs: 0.2,
            component: None,
        },
    ));
    let a = server.client();
    let (b_key, _) = server.create_key("tenant_b");
    let b = Client::new(&format!("http://{}", server.addr), &b_key);
    let spin = a.upload(&guests::spin(), "spin");
    let worker = b.upload(&guests::hostile(), "hostile");
    seed(&b);
    let probe = finished(&b, &worker);

    let alone: Vec<Duration> = (0..samples).map(|_| finished_in(&b, &worker)).collect();
    let (get_idle, search_idle) = probes(&b, &probe, requests);

    let crowd: Vec<String> = (0..spinners).map(|_| spawn(&a, &spin, "spin")).collect();
    assert!(
        wait_until(Duration::from_secs(30), || crowd
            .iter()
            .all(
                |id| a.get(&format!("/api/v1/agents/{id}")).body["status"] == "running"
            )),
        "the spinners did not start"
    );
    let beside: Vec<Duration> = (0..samples).map(|_| finished_in(&b, &worker)).collect();
    let (get_busy, search_busy) = probes(&b, &probe, requests);
    for id in &crowd {
        a.delete(&format!("/api/v1/agents/{id}"));
    }

    let (alone_ms, beside_ms) = (pct_ms(&alone, 0.5), pct_ms(&beside, 0.5));
    println!("B alone:   {}", summary(&alone));
    println!("B beside:  {}", summary(&beside));
    let ratio = beside_ms / alone_ms;
    table.row(
        &format!("tenant B's CPU-bound agent beside A's {spinners} spinners, vs alone (p50)"),
        format!("{ratio:.2}× ({alone_ms:.0} → {beside_ms:.0} ms)"),
        "≤ 1.5×",
        Some(ratio <= 1.5),
    );
    for (what, idle, busy) in [
        ("GET /api/v1/agents/{id}", &get_idle, &get_busy),
        ("keyword search", &search_idle, &search_busy),
    ] {
        println!("{what} idle: {}", summary(idle));
        println!("{what} busy: {}", summary(busy));
        let (idle99, busy99) = (pct_ms(idle, 0.99), pct_ms(busy, 0.99));
        let bound = 2.0 * idle99 + 2.0;
        table.row(
            &format!("{what} p99 while guests keep the cores busy"),
            format!("{busy99:.2} ms (idle {idle99:.2} ms)"),
            &format!("≤ {bound:.2} ms"),
            Some(busy99 <= bound),
        );
    }
    let read = clock_read();
    let overhead = 2.0 * read.as_secs_f64() / 0.010 * 100.0;
    println!("thread CPU clock read: {read:?}; two per 10 ms slice: {overhead:.4} %");
    table.row(
        "CPU metering on a CPU-bound guest",
        format!(
            "{overhead:.4} % (2 clock reads of {:.0} ns per 10 ms slice)",
            read.as_nanos()
        ),
        "≤ 10 %",
        Some(overhead <= 10.0),
    );
    server.shutdown();
}

/// Spawns `component` on `task`, with no extraction (the bench's fake Mind never answers).
fn spawn(client: &Client, component: &str, task: &str) -> String {
    let body = json!({ "task": task, "name": "cpu bench", "agent": component,
                       "memory_mode": "explicit" });
    let reply = client.post("/api/v1/agents", &body);
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.body["agent_id"].as_str().unwrap().to_string()
}

/// Spawns `WORK` and waits for it to complete; its id.
fn finished(client: &Client, worker: &str) -> String {
    let id = spawn(client, worker, WORK);
    assert!(
        wait_until(Duration::from_secs(120), || {
            let r = client.get(&format!("/api/v1/agents/{id}"));
            match r.body["status"].as_str() {
                Some("completed") => true,
                Some("spawning" | "running") => false,
                _ => panic!("the worker ended {}", r.body),
            }
        }),
        "the worker did not finish"
    );
    id
}

/// Spawn → `completed` of one `WORK`; says its CPU time too.
fn finished_in(client: &Client, worker: &str) -> Duration {
    let started = Instant::now();
    let id = finished(client, worker);
    let took = started.elapsed();
    let record = client.get(&format!("/api/v1/agents/{id}")).body;
    println!(
        "  B's run: {:.0} ms, {} CPU seconds",
        took.as_secs_f64() * 1e3,
        record["usage"]["cpu_seconds"]
    );
    took
}

/// Memories for the keyword search to find.
fn seed(client: &Client) {
    let items: Vec<_> = (0..500)
        .map(|i| json!({ "key": format!("fact_{i}"), "value": format!("fact {i} about apples and pears number {}", i % 17) }))
        .collect();
    let r = client.post("/api/v1/memory/import", &json!({ "memories": items }));
    assert_eq!(r.status, 200, "{}", r.body);
}

/// `n` GETs of agent `id` and `n` keyword searches, one after another.
fn probes(client: &Client, id: &str, n: usize) -> (Vec<Duration>, Vec<Duration>) {
    let time = |f: &dyn Fn() -> u16| {
        (0..n)
            .map(|_| {
                let t = Instant::now();
                assert_eq!(f(), 200);
                let took = t.elapsed();
                std::thread::sleep(Duration::from_millis(2));
                took
            })
            .collect::<Vec<_>>()
    };
    let get = time(&|| client.get(&format!("/api/v1/agents/{id}")).status);
    let body = json!({ "query": "apples number 7", "mode": "keyword", "limit": 10 });
    let search = time(&|| client.post("/api/v1/memory/search", &body).status);
    (get, search)
}

/// What one read of the thread CPU clock costs, averaged over a million.
fn clock_read() -> Duration {
    let n = 1_000_000u32;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(rustix::time::clock_gettime(
            rustix::time::ClockId::ThreadCPUTime,
        ));
    }
    t.elapsed() / n
}
