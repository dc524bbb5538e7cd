//! Several nodes over one PostgreSQL (a real one each test starts): every node serves
//! every account; agents are leased by the node running them, stops reach that node, and
//! a lost node's agents are resumed by another node from their journals, each run ending
//! once, while the others serve on.

use std::{
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use crate::{
    agents::{spawn, wait_for, wait_for_terminal_event},
    common::{
        Client, Options, Server, binary,
        fake_embedder::{self, FakeEmbedder},
        fake_mind::{FakeMind, Reply},
        poll_until,
        postgres::Postgres,
    },
    guests::SPIN,
};

/// Nodes sharing one database, each with its own data dir (its node id, its compiled
/// components' cache).
struct Nodes {
    tmp: tempfile::TempDir,
    config: PathBuf,
    nodes: Vec<Server>,
}

impl Nodes {
    /// `n` nodes on `url`, their agents the spinning guest, with `extra` TOML appended.
    fn start(url: &str, n: usize, extra: &str) -> Nodes {
        Nodes::start_each(url, &vec![""; n], extra)
    }

    /// One node per entry of `runtime`, which is added to that node's `[runtime]` table.
    fn start_each(url: &str, runtime: &[&str], extra: &str) -> Nodes {
        let spin = format!("component = {SPIN:?}\n");
        let runtime: Vec<String> = runtime.iter().map(|r| format!("{spin}{r}")).collect();
        Nodes::launch(url, &runtime, extra, &Options::hash_embedder())
    }

    /// `n` nodes on `url`, their agents the default one, speaking to `mind`.
    fn start_default(url: &str, n: usize, extra: &str, mind: &FakeMind) -> Nodes {
        let options = Options::hash_embedder().openai_mind(&mind.base_url());
        Nodes::launch(url, &vec![String::new(); n], extra, &options)
    }

    fn launch(url: &str, runtime: &[String], extra: &str, options: &Options) -> Nodes {
        let tmp = tempfile::tempdir().unwrap();
        let text = |runtime: &str| {
            format!(
                "[storage]\nbackend = \"postgres\"\ndatabase_url = \"{url}\"\n\
                 [runtime]\nstop_grace_secs = 1.0\n{runtime}\n{extra}"
            )
        };
        let config = tmp.path().join("cluster.toml");
        std::fs::write(&config, text("")).unwrap();
        let nodes = runtime
            .iter()
            .enumerate()
            .map(|(i, runtime)| {
                let options = Options {
                    config: Some(text(runtime)),
                    ..options.clone()
                };
                Server::start_with(&tmp.path().join(format!("node-{i}")), &options)
            })
            .collect();
        Nodes { tmp, config, nodes }
    }

    /// Agents live on node `node`, as its `/metrics` counts them.
    fn live(&self, node: usize) -> u32 {
        let text = reqwest::blocking::get(format!("{}/metrics", self.nodes[node].base))
            .unwrap()
            .text()
            .unwrap();
        let line = text.lines().find(|l| l.starts_with("wasmind_agents_live "));
        let value = line.and_then(|l| l.split_whitespace().nth(1));
        value.map_or(0, |v| v.parse::<f64>().unwrap() as u32)
    }

    /// `wasmind ARGS --config CONFIG` (the operator's CLI on the shared database).
    fn cli(&self, args: &[&str]) -> String {
        let out = std::process::Command::new(binary())
            .args(args)
            .arg("--config")
            .arg(&self.config)
            .current_dir(self.tmp.path())
            .output()
            .expect("running wasmind");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "wasmind {args:?}: {stderr}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn key(&self, account: &str, plan: &str) -> String {
        self.cli(&["keys", "create", "--account", account, "--plan", plan])
    }

    fn client(&self, node: usize, key: &str) -> Client {
        self.nodes[node].client(key)
    }
}

#[test]
fn every_node_serves_every_account_and_stops_reach_the_owner() {
    let pg = Postgres::start();
    // Heartbeats far apart: a stop reaches its agent's node by notice, not by heartbeat.
    let nodes = Nodes::start(
        &pg.database("three"),
        3,
        "[cluster]\nheartbeat_secs = 60\nlease_secs = 180\n",
    );
    let key = nodes.key("acme", "free");
    let (a, b, c) = (
        nodes.client(0, &key),
        nodes.client(1, &key),
        nodes.client(2, &key),
    );
    assert_eq!(
        b.get("/api/v1/agents").status,
        200,
        "a new key works at once"
    );

    let put = a.post(
        "/api/v1/memory",
        &json!({ "key": "colour", "value": "the front door is painted teal" }),
    );
    assert_eq!(put.status, 201, "{:#}", put.body);
    let found = c.post("/api/v1/memory/search", &json!({ "query": "door teal" }));
    assert_eq!(found.status, 200, "{:#}", found.body);
    assert_eq!(
        found.body["results"][0]["key"], "colour",
        "{:#}",
        found.body
    );

    let id = spawn(&b, "spin");
    wait_for(&c, &id, Duration::from_secs(30), |r| {
        r["status"] == "running"
    });
    let since = Instant::now();
    let stopped = a.delete(&format!("/api/v1/agents/{id}"));
    assert_eq!(stopped.body, json!({ "agent_id": id, "status": "stopped" }));
    // Node b writes the terminal event once its instance is gone: after the 1 s grace,
    // long before its next heartbeat.
    let event = wait_for_terminal_event(
        &c,
        &id,
        since,
        Duration::from_secs(30),
        "the stop never reached node b's instance",
    );
    assert_eq!(event["data"]["status"], "stopped");

    nodes.cli(&["keys", "revoke", &key]);
    for client in [&a, &b, &c] {
        client
            .get("/api/v1/agents")
            .assert_error(401, "invalid_api_key");
    }
}

#[test]
fn spawns_spread_over_nodes_stay_within_the_limits_exactly() {
    let pg = Postgres::start();
    let nodes = Nodes::start(
        &pg.database("limits"),
        3,
        "[plans.free]\nspawns_per_minute = 7\nspawns_per_hour = 100\nconcurrent_agents = 5\n\
         memories = 100\nagent_hours_per_month = 10.0\n",
    );
    let key = nodes.key("acme", "free");
    let bases: Vec<String> = nodes.nodes.iter().map(|n| n.base.clone()).collect();
    let key = Arc::new(key);
    let burst = |n: usize| -> Vec<(u16, String, Option<String>)> {
        let threads: Vec<_> = (0..n)
            .map(|i| {
                let (base, key) = (bases[i % 3].clone(), key.clone());
                std::thread::spawn(move || {
                    let r = Client::new(&base, Some(&key))
                        .post("/api/v1/agents", &json!({ "task": format!("spin {i}") }));
                    let id = r.body["agent_id"].as_str().map(str::to_owned);
                    (r.status, r.code().to_owned(), id)
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    };
    let first = burst(15);
    let admitted: Vec<_> = first.iter().filter_map(|r| r.2.clone()).collect();
    assert_eq!(admitted.len(), 5, "the concurrency cap: {first:?}");
    assert!(
        first
            .iter()
            .filter(|r| r.0 != 201)
            .all(|r| r.0 == 429 && r.1 == "concurrent_limit_reached"),
        "{first:?}"
    );
    let c = nodes.client(0, &key);
    for id in &admitted {
        c.delete(&format!("/api/v1/agents/{id}"));
    }
    let second = burst(6);
    let admitted = second.iter().filter(|r| r.0 == 201).count();
    assert_eq!(admitted, 2, "7 per minute in all: {second:?}");
    assert!(
        second
            .iter()
            .filter(|r| r.0 != 201)
            .all(|r| r.0 == 429 && r.1 == "rate_limited"),
        "{second:?}"
    );
}

#[test]
fn a_spawn_at_a_full_node_runs_at_a_node_with_room() {
    let pg = Postgres::start();
    let one_each = ["max_agents = 1", "max_agents = 1"];
    let nodes = Nodes::start_each(&pg.database("handoff"), &one_each, "");
    let key = nodes.key("acme", "lightyear");
    let (a, b) = (nodes.client(0, &key), nodes.client(1, &key));
    let here = spawn(&a, "spin here");
    wait_for(&b, &here, Duration::from_secs(30), |r| {
        r["status"] == "running"
    });
    // Node a is full: node b claims the spawn and runs it.
    let there = spawn(&a, "spin there");
    wait_for(&a, &there, Duration::from_secs(30), |r| {
        r["status"] == "running"
    });
    assert_eq!((nodes.live(0), nodes.live(1)), (1, 1));

    // Every node full: refused as on one machine, and no agent is left behind.
    let full = a.post("/api/v1/agents", &json!({ "task": "no room anywhere" }));
    full.assert_error(503, "temporarily_unavailable");
    let listed = a.get("/api/v1/agents").body;
    assert_eq!(listed["data"].as_array().unwrap().len(), 2, "{listed:#}");

    // A stop at the node that took the spawn reaches the node running it; its place
    // frees, and the next spawn at node a runs at node b again.
    let since = Instant::now();
    a.delete(&format!("/api/v1/agents/{there}"));
    let event = wait_for_terminal_event(&a, &there, since, Duration::from_secs(30), "not stopped");
    assert_eq!(event["data"]["status"], "stopped");
    let deadline = Instant::now() + Duration::from_secs(10);
    while nodes.live(1) > 0 {
        assert!(
            Instant::now() < deadline,
            "node b never let its instance go"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let again = spawn(&a, "spin there again");
    wait_for(&b, &again, Duration::from_secs(30), |r| {
        r["status"] == "running"
    });
    assert_eq!((nodes.live(0), nodes.live(1)), (1, 1));

    // Offered while both are full, taken by node b when its place frees during the
    // offer's wait: the stopped agent's grace (1 s) ends inside the 2 s the offer waits.
    a.delete(&format!("/api/v1/agents/{again}"));
    let later = spawn(&a, "spin once a place frees");
    wait_for(&b, &later, Duration::from_secs(30), |r| {
        r["status"] == "running"
    });
    assert_eq!((nodes.live(0), nodes.live(1)), (1, 1));
}

/// Lease 3 s, heartbeat 1 s.
const SHORT_LEASES: &str = "[cluster]\nheartbeat_secs = 1\nlease_secs = 3\n";

/// The agent's `resumed` progress entries.
fn resumed(agent: &Value) -> Vec<String> {
    let progress = agent["progress"].as_array().unwrap().iter();
    let resumed = progress.filter(|p| p["kind"] == "resumed");
    resumed
        .map(|p| p["message"].as_str().unwrap().to_owned())
        .collect()
}

/// The agent's terminal log events, as seen from `c`.
fn terminal_events(c: &Client, id: &str) -> usize {
    let logs = c.get(&format!("/api/v1/agents/{id}/logs")).body;
    let events = logs["data"].as_array().unwrap().iter();
    events.filter(|e| e["kind"] == "terminal").count()
}

#[test]
fn a_killed_nodes_agents_resume_on_another_node_and_the_others_serve_on() {
    let pg = Postgres::start();
    let mut nodes = Nodes::start(&pg.database("kill"), 3, SHORT_LEASES);
    let key = nodes.key("acme", "lightyear");
    let (a, b) = (nodes.client(0, &key), nodes.client(1, &key));
    let id = spawn(&b, "spin");
    wait_for(&a, &id, Duration::from_secs(30), |r| {
        r["status"] == "running"
    });
    nodes.nodes[1].kill9();
    let killed = Instant::now();
    let taken = wait_for(&a, &id, Duration::from_secs(30), |r| !resumed(r).is_empty());
    let took = killed.elapsed();
    assert_eq!(taken["status"], "running", "{taken:#}");
    let message = &resumed(&taken)[0];
    assert!(message.contains("was lost"), "{message}");
    // Lease 3 s + a heartbeat 1 s, and slack for a loaded machine.
    assert!(took < Duration::from_secs(10), "resumed after {took:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while nodes.live(0) + nodes.live(2) != 1 {
        assert!(Instant::now() < deadline, "no node runs the agent again");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(terminal_events(&a, &id), 0);

    let c = nodes.client(2, &key);
    let again = spawn(&c, "spin again");
    wait_for(&a, &again, Duration::from_secs(30), |r| {
        r["status"] == "running"
    });
    let put = a.post(
        "/api/v1/memory",
        &json!({ "key": "k", "value": "still here" }),
    );
    assert_eq!(put.status, 201);
}

#[test]
fn a_killed_nodes_agents_complete_on_another_node_each_once() {
    let pg = Postgres::start();
    let mind = FakeMind::start([]);
    let mut nodes = Nodes::start_default(&pg.database("complete"), 3, SHORT_LEASES, &mind);
    let key = nodes.key("acme", "lightyear");
    let (a, b) = (nodes.client(0, &key), nodes.client(1, &key));
    // Each agent writes its memory, then waits in its second Mind call when node b dies.
    let ids: Vec<String> = (1..=4)
        .map(|i| {
            let put = json!({ "key": format!("k{i}"), "value": format!("v{i}") });
            mind.push(Reply::tool_call("service_memory_put", put));
            mind.push(Reply::Hang);
            // Explicit: no extraction's Mind calls after the run.
            let task = json!({ "task": format!("task {i}"), "memory_mode": "explicit" });
            let spawned = b.post("/api/v1/agents", &task);
            assert_eq!(spawned.status, 201, "{:#}", spawned.body);
            let id = spawned.body["agent_id"].as_str().unwrap().to_owned();
            assert!(mind.wait_for_requests(2 * i, Duration::from_secs(30)));
            id
        })
        .collect();
    nodes.nodes[1].kill9();
    // Another node resumes each: the write replayed, the call in flight made again.
    for (i, id) in (1..).zip(&ids) {
        let done = wait_for(&a, id, Duration::from_secs(60), |r| {
            r["status"] == "completed"
        });
        let resumed = resumed(&done);
        assert_eq!(resumed.len(), 1, "{done:#}");
        assert!(resumed[0].contains("was lost"), "{}", resumed[0]);
        // Its terminal event is appended just after the record turns terminal.
        let within = Duration::from_secs(10);
        wait_for_terminal_event(&a, id, Instant::now(), within, "no terminal event");
        assert_eq!(terminal_events(&a, id), 1, "{id} ended once");
        let history = a.get(&format!("/api/v1/memory/history?key=k{i}")).body;
        let versions = history["data"].as_array().unwrap();
        assert_eq!(versions.len(), 1, "k{i} written once: {history:#}");
        assert_eq!(versions[0]["value"], format!("v{i}"));
    }
    // Each recorded request was sent once, each one in flight at the kill twice.
    assert_eq!(mind.requests().len(), 3 * ids.len());
}

#[test]
fn a_paused_node_past_its_lease_stops_its_stale_instance_itself() {
    let pg = Postgres::start();
    let nodes = Nodes::start(&pg.database("pause"), 2, SHORT_LEASES);
    let key = nodes.key("acme", "lightyear");
    let (a, b) = (nodes.client(0, &key), nodes.client(1, &key));
    let id = spawn(&b, "spin");
    wait_for(&a, &id, Duration::from_secs(30), |r| {
        r["status"] == "running"
    });
    nodes.nodes[1].signal("STOP");
    let taken = wait_for(&a, &id, Duration::from_secs(30), |r| !resumed(r).is_empty());
    assert_eq!(taken["status"], "running", "{taken:#}");
    nodes.nodes[1].signal("CONT");
    let since = Instant::now();
    while !nodes.nodes[1].log().contains("claim is stale") {
        assert!(
            since.elapsed() < Duration::from_secs(20),
            "node b never noticed: {}",
            nodes.nodes[1].log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Its instance is gone, node a's runs on, and nothing node b wrote late changed the
    // record.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!((nodes.live(0), nodes.live(1)), (1, 0));
    let seen = b.get(&format!("/api/v1/agents/{id}")).body;
    assert_eq!(seen["status"], "running", "{seen:#}");
    assert_eq!(resumed(&seen).len(), 1);
    assert_eq!(terminal_events(&b, &id), 0);
    // A stop reaches node a's instance; the run ends once.
    b.delete(&format!("/api/v1/agents/{id}"));
    let event = wait_for_terminal_event(&b, &id, since, Duration::from_secs(30), "not stopped");
    assert_eq!(event["data"]["status"], "stopped");
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(terminal_events(&b, &id), 1);
}

/// A node whose claim on an agent goes stale while the agent's memory put is under way —
/// another node's claim, made here by hand (the epoch bumped, as a claim does), while the
/// put waits for its embedding — has the put refused in the write's own transaction, and
/// sends the Mind no further request. Heartbeats far apart: the node learns of the new
/// claim only from its own refused writes.
#[test]
fn a_stale_nodes_agent_put_is_refused_and_its_mind_call_not_sent() {
    let pg = Postgres::start();
    let put = json!({ "key": "late", "value": "written by a stale node" });
    let mind = FakeMind::start([Reply::tool_call("service_memory_put", put)]);
    let embedder = FakeEmbedder::start([]);
    let extra = format!(
        "[cluster]\nheartbeat_secs = 60\nlease_secs = 180\n{}",
        fake_embedder::config(&embedder)
    );
    let options = Options::default().openai_mind(&mind.base_url());
    let nodes = Nodes::launch(&pg.database("fence"), &[String::new()], &extra, &options);
    let key = nodes.key("acme", "lightyear");
    let a = nodes.client(0, &key);

    embedder.push(Reply::text("").until_released());
    let task = json!({ "task": "remember this", "memory_mode": "explicit" });
    let spawned = a.post("/api/v1/agents", &task);
    assert_eq!(spawned.status, 201, "{:#}", spawned.body);
    let id = spawned.body["agent_id"].as_str().unwrap();
    assert!(
        embedder.wait_for_requests(1, Duration::from_secs(30)),
        "the put never embedded"
    );
    pg.psql(
        "fence",
        &format!("UPDATE agents SET epoch = epoch + 1 WHERE agent_id = '{id}'"),
    );
    embedder.release();

    let node = &nodes.nodes[0];
    poll_until(
        Duration::from_secs(30),
        "the stale run's end",
        || match node.log().contains("its end is another node's") {
            true => Ok(()),
            false => Err(node.log()),
        },
    );
    let log = node.log();
    assert!(
        log.contains("a stale run's memory write was refused"),
        "{log}"
    );
    a.get("/api/v1/memory?key=late")
        .assert_error(404, "not_found");
    assert_eq!(
        mind.request_count(),
        1,
        "no request after the claim went stale"
    );
}

#[test]
fn nodes_ride_out_a_postgres_restart_and_lose_no_acknowledged_write() {
    let pg = Postgres::start();
    let nodes = Nodes::start(&pg.database("restart"), 2, "");
    let key = Arc::new(nodes.key("acme", "lightyear"));
    let bases: Vec<String> = nodes.nodes.iter().map(|n| n.base.clone()).collect();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (base, key, done) = (bases[w % 2].clone(), key.clone(), done.clone());
            std::thread::spawn(move || {
                let c = Client::new(&base, Some(&key));
                let (mut acked, mut refused) = (Vec::new(), Vec::new());
                for i in 0.. {
                    if done.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let k = format!("w{w}_{i}");
                    let body = json!({ "key": k, "value": format!("value {w} {i}") });
                    let r = c.post("/api/v1/memory", &body);
                    match r.status {
                        201 => acked.push(k),
                        _ => refused.push(format!("{} {}", r.status, r.body)),
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                (acked, refused)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    pg.restart();
    std::thread::sleep(Duration::from_secs(4));
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let (mut acked, mut refused) = (Vec::new(), Vec::new());
    for writer in writers {
        let (a, r) = writer.join().unwrap();
        acked.extend(a);
        refused.extend(r);
    }
    assert!(
        acked.len() > 50,
        "writes went on: {} acknowledged",
        acked.len()
    );
    // Refusals while the database was away are 5xx errors the client may retry.
    assert!(
        refused.iter().all(|r| r.starts_with('5')),
        "{:?}",
        &refused[..refused.len().min(5)]
    );
    for (n, base) in bases.iter().enumerate() {
        let c = Client::new(base, Some(&key));
        for k in &acked {
            let got = c.get(&format!("/api/v1/memory?key={k}"));
            assert_eq!(
                got.status, 200,
                "node {n} lost acknowledged {k}: {:#}",
                got.body
            );
        }
    }
    // Agents too: the listeners and pools came back by themselves.
    let c = Client::new(&bases[1], Some(&key));
    let id = spawn(&c, "after the restart");
    wait_for(&c, &id, Duration::from_secs(30), |r| {
        r["status"] == "running"
    });
}
