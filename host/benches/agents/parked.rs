//! The `parked` phase: default agents hibernated in a hanging Mind call (`runtime::park`).
//!
//! Spawns `n` default agents one after another on a server whose agents hibernate after
//! 100 ms of waiting; the fake Mind hangs every completion, so each parks in its first Mind
//! call (at most `[mind] max_connections` of them with a request at the provider, the rest
//! queued for a connection). Measures the host's resident memory per parked agent beyond
//! the idle server's (the journal and records on disk not counted, their pages in the
//! process's cache counted), and how many hold an instance meanwhile; then releases the
//! Mind and times until every parked agent has woken, replayed and ended. Target (issue
//! 23): 100,000 parked at ≤ 16 KiB each at the default `vm.max_map_count`.

use std::time::{Duration, Instant};

use super::{Table, id_of, wait_until};
use crate::{
    fake_mind::FakeMind,
    harness::{self, Server, ServerOptions, loadavg, rss_kib},
};

pub fn run(n: usize, grace: f64, mind: &FakeMind, table: &mut Table) {
    println!(
        "\n== parked: {n} default agents hibernated in a hanging Mind call == ({})",
        loadavg()
    );
    let mut config = harness::config(
        &mind.base_url(),
        &ServerOptions {
            max_agents: None,
            stop_grace_secs: grace,
            component: None,
        },
    );
    config.runtime.hibernate_after_ms = 100;
    config.runtime.max_parked_agents = u32::try_from(n).unwrap_or(u32::MAX);
    let server = Server::start(config);
    let client = server.client();
    std::thread::sleep(Duration::from_millis(500));
    let rss_idle = rss_kib();
    let started = Instant::now();
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let (reply, _, _) =
            client.spawn(&format!("Bench task {i}: summarize the quarterly report"));
        assert_eq!(reply.status, 201, "spawn {i}: {}", reply.body);
        ids.push(id_of(&reply));
        if (i + 1) % 10_000 == 0 {
            println!(
                "  {} spawned in {:.1} s; parked {}, in an instance {}; VmRSS {:.0} MiB; {}",
                i + 1,
                started.elapsed().as_secs_f64(),
                server.parked(),
                server.instances(),
                rss_kib() as f64 / 1024.0,
                loadavg()
            );
        }
    }
    let all_parked = wait_until(Duration::from_secs(300), || {
        server.parked() as usize >= ids.len()
    });
    std::thread::sleep(Duration::from_secs(2));
    let (parked, instances) = (server.parked(), server.instances());
    let rss_parked = rss_kib();
    let per_agent = (rss_parked as f64 - rss_idle as f64) / f64::from(parked.max(1));
    println!(
        "{} spawned in {:.1} s; all parked: {all_parked}; parked {parked}, in an instance {instances}; VmRSS {:.1} → {:.1} MiB; {per_agent:.1} KiB per parked agent",
        ids.len(),
        started.elapsed().as_secs_f64(),
        rss_idle as f64 / 1024.0,
        rss_parked as f64 / 1024.0,
    );
    table.row(
        &format!("host RSS per parked agent ({parked} parked, {instances} in an instance)"),
        format!(
            "{per_agent:.1} KiB (VmRSS {:.0} → {:.0} MiB)",
            rss_idle as f64 / 1024.0,
            rss_parked as f64 / 1024.0
        ),
        "≤ 16 KiB",
        Some(per_agent <= 16.0),
    );
    // The answers come: every parked agent wakes, replays and ends (the Mind answers at
    // once from now on, so this phase runs after those that need it to hang).
    mind.release();
    let woken = Instant::now();
    let all_ended = wait_until(Duration::from_secs(900), || {
        server.parked() == 0 && server.instances() == 0
    });
    let took = woken.elapsed().as_secs_f64();
    println!("Mind released: all ended {all_ended} in {took:.1} s");
    table.row(
        &format!("{parked} parked agents woken by their answers → all ended"),
        format!("{took:.1} s ({:.0} per second)", f64::from(parked) / took),
        "all end",
        Some(all_ended),
    );
    server.shutdown();
}
