//! The `journal` phase: what journaling costs a default agent (`runtime::journal`).
//!
//! Runs `n` default agents with the offline Mind to completion, one at a time (so no run
//! waits on another's CPU), and reads the supervisor's samples: for each journaled host
//! call the time its journal took (the replay check, keeping its entry, and storing it:
//! a synced commit for a Mind call or memory write, nothing for a read until the next
//! synced one), and for each run the sum of those against its time from `running` to its
//! store's drop. The WASI clock and random reads are journaled too (kept in memory), but
//! not sampled. Also each run's own time (`running` → store dropped), the wall time of a
//! default agent's run. Targets (issue 23): p50 ≤ 50 µs per host call on the embedded backend, and
//! ≤ 5 % of a default agent's run with the offline Mind.

use std::{collections::HashMap, time::Duration};

use super::{Table, id_of, wait_until};
use crate::{
    fake_mind::FakeMind,
    harness::{self, Server, ServerOptions, pct_ms, summary},
};

pub fn run(n: usize, grace: f64, mind: &FakeMind, table: &mut Table) {
    println!("\n== journal: {n} default agents with the offline Mind, one at a time ==");
    let mut config = harness::config(
        &mind.base_url(),
        &ServerOptions {
            max_agents: None,
            stop_grace_secs: grace,
            component: None,
        },
    );
    config.mind = wasmind::mind::MindConfig::default();
    let server = Server::start(config);
    let client = server.client();
    let _ = server.state.runtime.take_timings();
    let mut calls: HashMap<&'static str, Vec<Duration>> = HashMap::new();
    let mut per_agent: HashMap<String, Duration> = HashMap::new();
    let (mut running, mut dropped) = (HashMap::new(), HashMap::new());
    for i in 0..n {
        let (reply, _, _) = client.spawn(&format!("Remember that report {i} is due on Friday"));
        assert_eq!(reply.status, 201, "spawn {i}: {}", reply.body);
        let id = id_of(&reply);
        let ended = wait_until(Duration::from_secs(60), || {
            server.record(&id).is_some_and(|r| r.status.is_terminal())
        });
        assert!(ended, "agent {id} did not end");
        let record = server.record(&id).expect("its record");
        assert_eq!(record.status.as_str(), "completed", "{:?}", record.error);
        // Its store is dropped just before its record turns terminal.
        let t = server.state.runtime.take_timings();
        running.extend(t.running);
        dropped.extend(t.dropped);
        for (agent, (func, took)) in t.journaled {
            calls.entry(func).or_default().push(took);
            *per_agent.entry(agent).or_default() += took;
        }
    }
    let all: Vec<Duration> = calls.values().flatten().copied().collect();
    let mut funcs: Vec<_> = calls.iter().collect();
    funcs.sort_by_key(|(func, _)| *func);
    for (func, samples) in funcs {
        println!("  {func:<28} {}", summary(samples));
    }
    let runs: Vec<Duration> = (running.iter())
        .filter_map(|(id, began)| Some(dropped.get(id)?.saturating_duration_since(*began)))
        .collect();
    table.latency(
        "a default agent's run with the offline Mind, `running` → store dropped",
        &runs,
        None,
    );
    let shares: Vec<f64> = (per_agent.iter())
        .filter_map(|(id, journal)| {
            let run = dropped
                .get(id)?
                .saturating_duration_since(*running.get(id)?);
            Some(journal.as_secs_f64() / run.as_secs_f64())
        })
        .collect();
    let mut sorted = shares.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN);
    let p90 = sorted
        .get(sorted.len() * 9 / 10)
        .copied()
        .unwrap_or(f64::NAN);
    println!(
        "journal per host call {}; share of a run: median {:.1} %, p90 {:.1} % ({} runs, {:.1} calls each)",
        summary(&all),
        median * 100.0,
        p90 * 100.0,
        shares.len(),
        all.len() as f64 / n.max(1) as f64
    );
    let p50_us = pct_ms(&all, 0.5) * 1000.0;
    table.row(
        "journal overhead per host call (embedded backend)",
        format!(
            "p50 {p50_us:.1} µs, p99 {:.1} µs (n = {})",
            pct_ms(&all, 0.99) * 1000.0,
            all.len()
        ),
        "p50 ≤ 50 µs",
        Some(p50_us <= 50.0),
    );
    table.row(
        "journal share of a default agent's run (offline Mind)",
        format!(
            "median {:.1} %, p90 {:.1} % ({} runs)",
            median * 100.0,
            p90 * 100.0,
            shares.len()
        ),
        "≤ 5 %",
        Some(median <= 0.05),
    );
    server.shutdown();
}
