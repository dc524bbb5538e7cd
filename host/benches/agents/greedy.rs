//! The `greedy` phase: guests that would make the host hold their journal (issue 41).
//!
//! Runs the `hostile` test guest's `random 67108864` (64 MiB of random in one WASI call)
//! and `clock 10000000` (ten million clock reads), one at a time on an otherwise idle
//! server with the default `[runtime] max_journal_bytes`, sampling the process's RSS every
//! 10 ms while each runs. Target: each raises the host's RSS by ≤ 8 MiB over the idle
//! server's, and ends with its documented error (`random_limit_exceeded`,
//! `journal_limit_exceeded`).

use std::time::{Duration, Instant};

use serde_json::json;

use super::{Table, id_of, wait_until};
use crate::{
    fake_mind::FakeMind,
    guests,
    harness::{self, Server, ServerOptions, rss_kib},
};

/// The guest's tasks, and the failure each must end with.
const GREEDY: [(&str, &str); 2] = [
    ("random 67108864", "random_limit_exceeded"),
    ("clock 10000000", "journal_limit_exceeded"),
];

/// Most the host's RSS may rise while one runs.
const TARGET_KIB: u64 = 8 << 10;

pub fn run(grace: f64, mind: &FakeMind, table: &mut Table) {
    println!("\n== greedy: guests that would make the host hold their journal ==");
    let server = Server::start(harness::config(
        &mind.base_url(),
        &ServerOptions {
            max_agents: None,
            stop_grace_secs: grace,
            component: None,
        },
    ));
    let client = server.client();
    let hostile = client.upload(&guests::hostile(), "hostile");
    // Explicit memory: no extraction after the run asks the (hanging) fake Mind.
    let spawn = |task: &str| {
        let body = json!({ "task": task, "name": "greedy", "agent": hostile,
                           "memory_mode": "explicit" });
        let reply = client.post("/api/v1/agents", &body);
        assert_eq!(reply.status, 201, "{}", reply.body);
        id_of(&reply)
    };
    // A first run of the guest, so its code, instance pool and fiber stack are warm.
    let id = spawn("work 1");
    let warm = wait_until(Duration::from_secs(60), || {
        server.record(&id).is_some_and(|r| r.status.is_terminal())
    });
    assert!(warm, "the warm-up run did not end");
    for (task, failure) in GREEDY {
        std::thread::sleep(Duration::from_millis(500));
        let idle = rss_kib();
        let began = Instant::now();
        let id = spawn(task);
        let mut peak = idle;
        while !server.record(&id).is_some_and(|r| r.status.is_terminal()) {
            peak = peak.max(rss_kib());
            assert!(
                began.elapsed() < Duration::from_secs(600),
                "{task} did not end"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let took = began.elapsed();
        let after = rss_kib();
        let record = server.record(&id).expect("its record");
        let code = record.error.as_ref().map(|e| e.code.clone());
        println!(
            "  {task}: ended {:?} in {:.2} s; RSS idle {idle} KiB, peak {peak} KiB, after {after} KiB",
            code,
            took.as_secs_f64()
        );
        let rise = peak.saturating_sub(idle);
        table.row(
            &format!("host RSS rise while a guest runs `{task}`"),
            format!(
                "{:.1} MiB (ended {})",
                rise as f64 / 1024.0,
                code.as_deref().unwrap_or("-")
            ),
            "≤ 8 MiB, its documented error",
            Some(rise <= TARGET_KIB && code.as_deref() == Some(failure)),
        );
    }
    server.shutdown();
}
