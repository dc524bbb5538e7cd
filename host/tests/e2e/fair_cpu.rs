//! Fair CPU between accounts (docs/api.md, "Fair CPU"): a plan's CPU budget ends a run
//! `cpu_limit_exceeded` with its CPU time on the record and in the month's usage; and an
//! account's one CPU-bound agent is not held back by another account's four — it finishes
//! while they all still run (shared per agent, all five would end together).

use serde_json::Value;

use crate::{
    agents::wait_terminal,
    common::{Client, Options, cli, components::upload, server_with_keys},
    guests::{HOSTILE, SPIN},
};

/// A free plan with a CPU budget of one second a run; two guest threads whatever the
/// machine, so the five workers below always compete.
const CONFIG: &str = "[plans.free]
spawns_per_minute = 30
spawns_per_hour = 100
concurrent_agents = 10
memories = 100
agent_hours_per_month = 10.0
cpu_seconds_per_run = 1.0

[runtime]
guest_threads = 2
max_run_secs = 120
stop_grace_secs = 1.0
";

fn options() -> Options {
    Options {
        config: Some(CONFIG.into()),
        hash_embedder: true,
        ..Options::default()
    }
}

fn spawn_component(c: &Client, component: &Value, task: &str) -> String {
    let r = c.post(
        "/api/v1/agents",
        &serde_json::json!({ "task": task, "agent": component["component_id"] }),
    );
    assert_eq!(r.status, 201, "{:#}", r.body);
    r.body["agent_id"].as_str().unwrap().to_string()
}

#[test]
fn a_cpu_budget_ends_the_run_and_its_cpu_time_is_counted() {
    let (tmp, server, keys) = server_with_keys(&[("capped", "free")], &options());
    let c = server.client(&keys[0]);
    let spin = upload(&c, SPIN, "spin", "1.0.0");
    let id = spawn_component(&c, &spin, "spin");
    let record = wait_terminal(&c, &id);
    assert_eq!(record["status"], "failed", "{record:#}");
    assert_eq!(record["error"]["code"], "cpu_limit_exceeded", "{record:#}");
    let message = record["error"]["message"].as_str().unwrap();
    assert!(message.contains("1 CPU seconds"), "{message}");
    let cpu = record["usage"]["cpu_seconds"].as_f64().unwrap();
    assert!((1.0..3.0).contains(&cpu), "cpu_seconds {cpu}");

    // The month's usage has it, through the running server.
    let dir = tmp.path().join("data");
    let (ok, out, err) = cli(&["usage", "--data-dir", dir.to_str().unwrap()]);
    assert!(ok, "{err}");
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    let column = header.iter().position(|h| *h == "CPU_SECONDS").unwrap();
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(row[0], "capped");
    let month_cpu: f64 = row[column].parse().unwrap();
    assert!(
        (month_cpu - cpu).abs() < 0.002,
        "month {month_cpu} vs run {cpu}"
    );
}

#[test]
fn accounts_share_the_cpu_equally_however_many_agents_they_run() {
    let (_tmp, server, keys) =
        server_with_keys(&[("busy", "lightyear"), ("quiet", "lightyear")], &options());
    let (busy, quiet) = (server.client(&keys[0]), server.client(&keys[1]));
    let task = "work 100";
    let busy_guest = upload(&busy, HOSTILE, "hostile", "1.0.0");
    let quiet_guest = upload(&quiet, HOSTILE, "hostile", "1.0.0");
    let crowd: Vec<String> = (0..4)
        .map(|_| spawn_component(&busy, &busy_guest, task))
        .collect();
    let alone = spawn_component(&quiet, &quiet_guest, task);

    let record = wait_terminal(&quiet, &alone);
    assert_eq!(record["status"], "completed", "{record:#}");
    assert_eq!(record["final_result"], "worked 100");
    for id in &crowd {
        let r = busy.get(&format!("/api/v1/agents/{id}"));
        assert_eq!(
            r.body["status"], "running",
            "the crowd still runs when the lone agent is done: {:#}",
            r.body
        );
        let worked = r.body["progress"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["message"].as_str().unwrap().starts_with("work "))
            .count();
        assert!(
            worked > 0,
            "every agent of the crowd progressed: {:#}",
            r.body
        );
    }
    for id in &crowd {
        assert_eq!(busy.delete(&format!("/api/v1/agents/{id}")).status, 200);
    }
}
