//! The `http` phase: agents' outgoing HTTP through the egress door (`egress`,
//! `runtime::host::http`), with the `fetch` test guest (`wstd` over `wasi:http`) as the
//! default agent and an origin on 127.0.0.2 (`origin.rs`, a child process) that the
//! config allows (its host and port on `[egress] allow`, its range in `allow_ranges`).
//!
//! 1. Overhead: one agent makes `gets` GETs of `/fast` one after another (the guest's
//!    `time` command, each timed in the guest); the bench makes the same GETs directly
//!    (async reqwest, one kept-alive connection, as the door's client keeps its pool),
//!    before and after. The difference of the p50s (against the faster direct run) is
//!    what the door adds: policy and budget reads, the journal (a synced commit per
//!    exchange), the hop to the send's task, and wasmtime-wasi-http's resources. The
//!    journal's share comes from the supervisor's samples (`wasi:http.response`), the
//!    reads' from timing them from the bench. Target (issue 40): ≤ 1 ms.
//! 2. Slow responses: `slow` agents each GET `/slow`, which the origin holds, on a server
//!    whose agents hibernate after 100 ms of waiting; the host's resident memory per
//!    parked agent beyond the idle server's (its request in flight meanwhile: the door's
//!    connection and the send's task stay). Targets (issue 40): ≤ 16 KiB per parked
//!    agent, ≤ 32 KiB per agent with a request in flight. Then the origin answers and
//!    the bench times until every agent has woken, replayed and completed.

use std::time::{Duration, Instant};

use serde_json::json;

use wasmind::egress::{EgressConfig, policy::Allow};

use super::{Table, id_of, wait_until};
use crate::{
    fake_mind::FakeMind,
    guests,
    harness::{
        self, ACCOUNT, Client, Mem, Server, ServerOptions, Smaps, loadavg, pct_ms, rss_kib, summary,
    },
    origin::{IP, Origin},
};

pub fn run(gets: usize, slow: usize, grace: f64, mind: &FakeMind, table: &mut Table) {
    let origin = Origin::start();
    let fetch = guests::fetch();
    println!(
        "\n== http: the fetch guest ({}) against an origin at {} ==",
        fetch.display(),
        origin.url("")
    );
    let setup = Setup {
        grace,
        mind,
        origin: &origin,
        fetch: &fetch,
    };
    overhead(gets, &setup, table);
    in_flight(slow, &setup, table);
}

/// What both parts' servers are made of.
struct Setup<'a> {
    grace: f64,
    mind: &'a FakeMind,
    origin: &'a Origin,
    fetch: &'a std::path::Path,
}

/// A server whose default agent is `fetch`, allowed to reach the origin, with room for
/// `agents` of the bench account's requests in flight and an hour for each.
fn config(setup: &Setup, agents: usize) -> wasmind::config::Config {
    let mut config = harness::config(
        &setup.mind.base_url(),
        &ServerOptions {
            max_agents: None,
            stop_grace_secs: setup.grace,
            component: Some(setup.fetch.to_path_buf()),
        },
    );
    config.egress = EgressConfig {
        allow: vec![Allow {
            host: IP.into(),
            ports: vec![setup.origin.0.port],
            schemes: vec!["http".into()],
        }],
        allow_ranges: vec![format!("{IP}/32")],
        max_concurrent_per_account: u32::try_from(agents).unwrap_or(u32::MAX).max(8),
        first_byte_timeout_secs: 3_600.0,
        total_timeout_secs: 3_600.0,
        ..EgressConfig::default()
    };
    config
}

/// Part 1: a guest's GET against the same GET made directly.
fn overhead(gets: usize, setup: &Setup, table: &mut Table) {
    let origin = setup.origin;
    println!(
        "\n-- http overhead: {gets} GETs of /fast from a guest and directly -- ({})",
        loadavg()
    );
    let url = origin.url("/fast");
    let direct_before = direct(&url, gets);
    let server = Server::start(config(setup, 8));
    let client = server.client();
    // Warm-up: the component compiled and instantiated once, the door's connection open.
    let warm = run_fetch(&server, &format!("get {url}"));
    assert_eq!(warm, "200 ok", "warm-up GET");
    let _ = server.state.runtime.take_timings();
    let answer = run_fetch(&server, &format!("time {url} {gets}"));
    let words: Vec<&str> = answer.split_whitespace().collect();
    let (guest_p50, guest_p99) = match words.as_slice() {
        ["p50", p50, "p99", p99, "n", _] => (ns_ms(p50), ns_ms(p99)),
        _ => panic!("the guest answered {answer:?}"),
    };
    let timings = server.state.runtime.take_timings();
    let reads = door_reads(&server, gets);
    let exchanges: Vec<Duration> = (timings.journaled.iter())
        .filter(|(_, (func, _))| *func == "wasi:http.response")
        .map(|(_, (_, took))| *took)
        .collect();
    drop(client);
    server.shutdown();
    let direct_after = direct(&url, gets);
    println!("direct before: {}", summary(&direct_before));
    println!("direct after:  {}", summary(&direct_after));
    println!("guest: p50 {guest_p50:.3} ms, p99 {guest_p99:.3} ms (n = {gets})");
    println!("journal per exchange: {}", summary(&exchanges));
    let direct_p50 = pct_ms(&direct_before, 0.5).min(pct_ms(&direct_after, 0.5));
    let added = guest_p50 - direct_p50;
    table.latency(
        "GET /fast made directly (async reqwest, kept alive), before",
        &direct_before,
        None,
    );
    table.latency(
        "GET /fast made directly, after (control)",
        &direct_after,
        None,
    );
    table.row(
        "GET /fast from a guest (wstd, timed in the guest)",
        format!("p50 {guest_p50:.3} ms, p99 {guest_p99:.3} ms (n = {gets})"),
        "",
        None,
    );
    table.latency(
        "its journal (wasi:http.response: replay check + synced commit)",
        &exchanges,
        None,
    );
    for (what, samples) in &reads {
        println!("door's read {what}: {}", summary(samples));
        table.latency(
            &format!("the door's read per request: {what}"),
            samples,
            None,
        );
    }
    table.row(
        "host overhead of an allowed request: guest p50 − direct p50 (the faster direct run)",
        format!("{added:.3} ms"),
        "≤ 1 ms",
        Some(added <= 1.0),
    );
}

/// The store reads the door makes for each request before it is sent, each timed `n`
/// times from the bench on the server's runtime: the account's plan, its own allowlist,
/// and its month's usage (for the budgets).
fn door_reads(server: &Server, n: usize) -> Vec<(&'static str, Vec<Duration>)> {
    let state = &server.state;
    let time = |read: &dyn Fn() -> bool| -> Vec<Duration> {
        (0..n)
            .map(|_| {
                let started = Instant::now();
                assert!(read());
                started.elapsed()
            })
            .collect()
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64;
    vec![
        (
            "plan",
            time(&|| server.block_on(state.keys.plan(ACCOUNT)).is_ok()),
        ),
        (
            "account allowlist",
            time(&|| server.block_on(state.keys.egress(ACCOUNT)).is_ok()),
        ),
        (
            "month usage",
            time(&|| server.block_on(state.usage.month(ACCOUNT, now)).is_ok()),
        ),
    ]
}

/// Spawns a `fetch` agent on `task` without memory: an agent with memory asks the Mind
/// (which hangs) to extract memories after its run, and its record stays `running`.
fn spawn(client: &Client, task: &str) -> String {
    let body = json!({ "task": task, "name": "bench agent", "memory_mode": "off" });
    let reply = client.post("/api/v1/agents", &body);
    assert_eq!(reply.status, 201, "spawn: {}", reply.body);
    id_of(&reply)
}

/// Runs one `fetch` agent on `task` to completion: its answer.
fn run_fetch(server: &Server, task: &str) -> String {
    let id = spawn(&server.client(), task);
    let ended = wait_until(Duration::from_secs(600), || {
        server.record(&id).is_some_and(|r| r.status.is_terminal())
    });
    assert!(ended, "the fetch agent {id} did not end");
    let record = server.record(&id).expect("its record");
    assert_eq!(record.status.as_str(), "completed", "{:?}", record.error);
    record.final_result.unwrap_or_default()
}

fn ns_ms(ns: &str) -> f64 {
    ns.parse::<f64>()
        .unwrap_or_else(|_| panic!("{ns:?} is not nanoseconds"))
        / 1e6
}

/// `n` GETs of `url` made directly, one after another on one kept-alive connection, each
/// timed from the send to its body read (as the guest times its own).
fn direct(url: &str, n: usize) -> Vec<Duration> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    runtime.block_on(async {
        let get = || async {
            let started = Instant::now();
            let response = http.get(url).send().await.expect("direct GET");
            let body = response.text().await.expect("its body");
            assert_eq!(body, "ok");
            started.elapsed()
        };
        get().await; // the connection opened
        let mut took = Vec::with_capacity(n);
        for _ in 0..n {
            took.push(get().await);
        }
        took
    })
}

/// Part 2: `n` agents parked on a held response, then all answered.
fn in_flight(n: usize, setup: &Setup, table: &mut Table) {
    let origin = setup.origin;
    println!(
        "\n-- http in flight: {n} agents GET /slow, hibernating after 100 ms -- ({})",
        loadavg()
    );
    let mut config = config(setup, n);
    config.runtime.hibernate_after_ms = 100;
    config.runtime.max_parked_agents = u32::try_from(n).unwrap_or(u32::MAX).max(1);
    let server = Server::start(config);
    let client = server.client();
    // Warm-up: the component compiled, a few agents run, exchanges journaled.
    for i in 0..20 {
        let answer = run_fetch(
            &server,
            &format!("get {}", origin.url(&format!("/fast?{i}"))),
        );
        assert_eq!(answer, "200 ok");
    }
    std::thread::sleep(Duration::from_millis(500));
    let (rss_idle, mem_idle, smaps_idle) = (rss_kib(), Mem::read(), Smaps::read());
    let slow = origin.url("/slow");
    let started = Instant::now();
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        ids.push(spawn(&client, &format!("get {slow}")));
    }
    let spawned_in = started.elapsed().as_secs_f64();
    let all_parked = wait_until(Duration::from_secs(300), || {
        server.parked() as usize >= n && origin.0.stats().1 as usize >= n
    });
    std::thread::sleep(Duration::from_secs(2));
    let (parked, instances, (_, held)) = (server.parked(), server.instances(), origin.0.stats());
    let (rss, mem, smaps) = (rss_kib(), Mem::read(), Smaps::read());
    let per_agent = (rss as f64 - rss_idle as f64) / f64::from(parked.max(1));
    println!(
        "{n} spawned in {spawned_in:.1} s; all parked with their requests held: {all_parked}; parked {parked}, in an instance {instances}, held at the origin {held}; VmRSS {:.1} → {:.1} MiB; {per_agent:.1} KiB per parked agent",
        rss_idle as f64 / 1024.0,
        rss as f64 / 1024.0,
    );
    println!("{}", mem.per_agent(&mem_idle, parked));
    println!(
        "resident growth by mapping group (group: mappings idle → parked, KiB growth, KiB per agent):"
    );
    for (group, before, after, kib) in smaps.growth(&smaps_idle, 8) {
        println!(
            "  {group:<28} {before:>6} → {after:>6}  {kib:>+10} KiB  {:>+8.1} KiB/agent",
            kib as f64 / f64::from(parked.max(1))
        );
    }
    println!(
        "{}; open fds {}",
        harness::tcp_sockstat(),
        harness::open_fds()
    );
    let figure = format!(
        "{per_agent:.1} KiB (VmRSS {:.0} → {:.0} MiB; {parked} parked, {instances} in an instance, {held} held at the origin)",
        rss_idle as f64 / 1024.0,
        rss as f64 / 1024.0
    );
    table.row(
        "host RSS per agent parked on a slow HTTP response",
        figure.clone(),
        "≤ 16 KiB",
        Some(per_agent <= 16.0 && all_parked),
    );
    table.row(
        "host RSS per agent whose HTTP request is in flight (the same agents)",
        figure,
        "≤ 32 KiB",
        Some(per_agent <= 32.0 && all_parked),
    );
    origin.0.release();
    let released = Instant::now();
    let all_ended = wait_until(Duration::from_secs(900), || {
        server.parked() == 0 && server.instances() == 0
    }) && wait_until(Duration::from_secs(60), || {
        (ids.iter()).all(|id| server.record(id).is_some_and(|r| r.status.is_terminal()))
    });
    let took = released.elapsed().as_secs_f64();
    let completed = (ids.iter())
        .filter(|id| {
            server.record(id).is_some_and(|r| {
                r.status.as_str() == "completed" && r.final_result.as_deref() == Some("200 slow ok")
            })
        })
        .count();
    println!(
        "origin released: all ended {all_ended} in {took:.1} s; {completed} of {n} completed with the answer"
    );
    table.row(
        &format!("{n} agents woken by their HTTP responses → all ended"),
        format!(
            "{took:.1} s ({:.0} per second), {completed} of {n} completed",
            n as f64 / took
        ),
        "all complete",
        Some(all_ended && completed == n),
    );
    server.shutdown();
}
