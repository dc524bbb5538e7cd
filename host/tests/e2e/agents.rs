//! Agents end to end: the real binary, real wasm guests in wasmtime, the offline Mind.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Client, Options, Server, create_key, server_with_keys};

/// Polls the agent until `done` holds (or panics after `within`).
#[track_caller]
pub fn wait_for(c: &Client, id: &str, within: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let r = c.get(&format!("/api/v1/agents/{id}"));
        assert_eq!(r.status, 200, "{:#}", r.body);
        if done(&r.body) {
            return r.body;
        }
        assert!(
            start.elapsed() < within,
            "agent never got there: {:#}",
            r.body
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for a terminal status.
#[track_caller]
pub fn wait_terminal(c: &Client, id: &str) -> Value {
    wait_for(c, id, Duration::from_secs(60), |a| {
        matches!(
            a["status"].as_str(),
            Some("completed" | "stopped" | "failed")
        )
    })
}

/// Waits for the host's `terminal` log event, which it writes once the agent's store is
/// dropped, and returns it; panics with `why` unless it comes within `within` of `since`.
#[track_caller]
pub fn wait_for_terminal_event(
    c: &Client,
    id: &str,
    since: Instant,
    within: Duration,
    why: &str,
) -> Value {
    loop {
        let logs = c.get(&format!("/api/v1/agents/{id}/logs")).body;
        if let Some(event) = logs["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["kind"] == "terminal")
        {
            return event.clone();
        }
        assert!(since.elapsed() < within, "{why}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Spawns; asserts 201; returns the agent id.
#[track_caller]
pub fn spawn(c: &Client, task: &str) -> String {
    let r = c.post("/api/v1/agents", &json!({ "task": task }));
    assert_eq!(r.status, 201, "{:#}", r.body);
    r.body["agent_id"].as_str().unwrap().to_string()
}

fn offline() -> Options {
    Options {
        hash_embedder: true,
        ..Default::default()
    }
}

pub fn with_runtime(extra: &str) -> Options {
    Options {
        config: Some(format!("[runtime]\n{extra}\n")),
        hash_embedder: true,
        ..Default::default()
    }
}

#[test]
fn spawn_follow_and_remember_with_the_offline_mind() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &offline());
    let c = server.client(&keys[0]);
    let r = c.post(
        "/api/v1/agents",
        &json!({ "task": "Remember that the launch is on Friday at noon" }),
    );
    assert_eq!(r.status, 201, "{:#}", r.body);
    let body = r.body.as_object().unwrap();
    let mut fields: Vec<&str> = body.keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "agent",
            "agent_id",
            "container",
            "created_at",
            "model",
            "name",
            "status",
            "task"
        ]
    );
    assert!(r.body["agent_id"].as_str().unwrap().starts_with("ag_"));
    assert_eq!(r.body["status"], "spawning");
    assert_eq!(
        r.body["container"],
        json!({ "region": "iad", "status": "starting" })
    );
    assert_eq!(r.body["model"], "wasmind-offline");
    assert!(r.body["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        r.body["name"],
        "Remember that the launch is on Friday at noon"
    );
    let id = r.body["agent_id"].as_str().unwrap();

    let done = wait_terminal(&c, id);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert!(
        done["final_result"].as_str().unwrap().contains("launch"),
        "{done:#}"
    );
    assert_eq!(done["error"], json!(null));
    let kinds: Vec<&str> = done["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"info") && kinds.contains(&"tool_use"),
        "{kinds:?}"
    );
    assert!(done["progress"][0]["ts"].as_u64().is_some());

    // The agent's put is visible through the memory API.
    let listed = c.get("/api/v1/memory/list").body;
    let values: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["value"].as_str().unwrap())
        .collect();
    assert!(
        values.iter().any(|v| v.contains("Friday at noon")),
        "{listed:#}"
    );

    // Logs: thinking/tool_use/tool_result events, then terminal (appended just after the
    // record turns terminal, so it may be a moment behind the status).
    let deadline = Instant::now() + Duration::from_secs(10);
    let logs = loop {
        let logs = c.get(&format!("/api/v1/agents/{id}/logs")).body;
        let last = logs["data"].as_array().unwrap().last().cloned();
        if last.is_some_and(|e| e["kind"] == "terminal") || Instant::now() > deadline {
            break logs;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let events = logs["data"].as_array().unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert!(
        kinds.contains(&"tool_use") && kinds.contains(&"tool_result"),
        "{kinds:?}"
    );
    assert_eq!(kinds.last(), Some(&"terminal"));
    assert!(
        events
            .windows(2)
            .all(|w| w[0]["seq"].as_u64() < w[1]["seq"].as_u64())
    );
    let page = c.get(&format!("/api/v1/agents/{id}/logs?limit=1")).body;
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    let next = page["next_cursor"].as_str().unwrap();
    let rest = c
        .get(&format!("/api/v1/agents/{id}/logs?cursor={next}"))
        .body;
    assert_eq!(rest["data"].as_array().unwrap().len(), events.len() - 1);

    // A second agent recalls it.
    let id2 = spawn(&c, "What do you remember about the launch?");
    let done = wait_terminal(&c, &id2);
    assert!(
        done["final_result"].as_str().unwrap().contains("Friday"),
        "{done:#}"
    );

    // Stop of a terminal agent: 200, unchanged.
    let r = c.delete(&format!("/api/v1/agents/{id}"));
    assert_eq!(
        (r.status, r.body),
        (200, json!({ "agent_id": id, "status": "completed" }))
    );
}

#[test]
fn spawn_validation_and_listing() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", "lightyear")], &offline());
    let c = server.client(&keys[0]);
    c.post("/api/v1/agents", &json!({}))
        .assert_error(400, "invalid_task");
    c.post("/api/v1/agents", &json!({ "task": "" }))
        .assert_error(400, "invalid_task");
    c.post("/api/v1/agents", &json!({ "task": 7 }))
        .assert_error(400, "invalid_task");
    c.post("/api/v1/agents", &json!({ "task": "x".repeat(4_001) }))
        .assert_error(400, "invalid_task");
    let r = c.post(
        "/api/v1/agents",
        &json!({ "task": "hello", "region": "fra" }),
    );
    r.assert_error(400, "invalid_region");
    assert!(r.body["error"]["message"].as_str().unwrap().contains("iad"));
    assert_eq!(
        c.post(
            "/api/v1/agents",
            &json!({ "task": "x".repeat(4_000), "region": "iad", "name": "Big" })
        )
        .status,
        201
    );

    let ids: Vec<String> = (0..4)
        .map(|i| spawn(&c, &format!("task number {i}")))
        .collect();
    let page = c.get("/api/v1/agents?limit=2").body;
    let got: Vec<&str> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent_id"].as_str().unwrap())
        .collect();
    assert_eq!(got, [ids[3].as_str(), ids[2].as_str()], "newest first");
    for field in [
        "agent_id",
        "name",
        "status",
        "task",
        "created_at",
        "updated_at",
        "final_result",
        "progress",
        "error",
        "model",
    ] {
        assert!(
            page["data"][0].get(field).is_some(),
            "list item lacks {field}"
        );
    }
    let next = page["next_cursor"].as_str().unwrap();
    let page2 = c.get(&format!("/api/v1/agents?limit=2&cursor={next}")).body;
    assert_eq!(page2["data"][0]["agent_id"], ids[1].as_str());
    let all = c.get("/api/v1/agents?limit=100").body;
    assert_eq!(all["data"].as_array().unwrap().len(), 5);
    assert_eq!(all["next_cursor"], json!(null));
    assert_eq!(
        c.get("/api/v1/agents?limit=1000").status,
        200,
        "capped, not refused"
    );
    c.get("/api/v1/agents?cursor=bogus")
        .assert_error(400, "invalid_query");
    c.get("/api/v1/agents/ag_nope")
        .assert_error(404, "agent_not_found");
    c.delete("/api/v1/agents/ag_nope")
        .assert_error(404, "agent_not_found");
    c.get("/api/v1/agents/ag_nope/logs")
        .assert_error(404, "agent_not_found");
}

#[test]
fn rate_limits_per_key_with_retry_after() {
    let config = "[plans.free]\nspawns_per_minute = 2\nspawns_per_hour = 3\nconcurrent_agents = 10\nmemories = 100\nagent_hours_per_month = 10.0\n";
    let options = Options {
        config: Some(config.into()),
        hash_embedder: true,
        ..Default::default()
    };
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free"), ("acme", "free")], &options);
    let (k1, k2) = (server.client(&keys[0]), server.client(&keys[1]));
    spawn(&k1, "one");
    spawn(&k1, "two");
    let r = k1.post("/api/v1/agents", &json!({ "task": "three" }));
    r.assert_error(429, "rate_limited");
    let retry: u64 = r
        .retry_after
        .as_deref()
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    assert_eq!(
        r.body["error"]["details"],
        json!({ "plan": "free", "window": "minute", "limitPerMinute": 2, "limitPerHour": 3 })
    );
    // Rejected spawns don't count, and each key has its own buckets.
    spawn(&k2, "other key");
    spawn(&k2, "other key again");
    k2.post("/api/v1/agents", &json!({ "task": "x" }))
        .assert_error(429, "rate_limited");
    // Validation failures don't count either.
    k1.post("/api/v1/agents", &json!({ "task": "" }))
        .assert_error(400, "invalid_task");
}

#[test]
fn concurrency_cap_and_its_release_on_stop() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let key = create_key(&dir, "acme", "free");
    let config = format!(
        "[plans.free]\nspawns_per_minute = 30\nspawns_per_hour = 100\nconcurrent_agents = 1\nmemories = 100\nagent_hours_per_month = 10.0\n\
         [runtime]\ncomponent = {:?}\nstop_grace_secs = 1.0\n",
        crate::guests::SPIN
    );
    let server = Server::start_with(
        &dir,
        &Options {
            config: Some(config),
            hash_embedder: true,
            ..Default::default()
        },
    );
    let c = server.client(&key);
    let id = spawn(&c, "spin");
    wait_for(&c, &id, Duration::from_secs(20), |a| {
        a["status"] == "running"
    });
    let r = c.post("/api/v1/agents", &json!({ "task": "second" }));
    r.assert_error(429, "concurrent_limit_reached");
    assert_eq!(
        r.body["error"]["details"],
        json!({ "plan": "free", "currentConcurrent": 1, "maxConcurrent": 1 })
    );
    let stopped = c.delete(&format!("/api/v1/agents/{id}"));
    assert_eq!(stopped.body, json!({ "agent_id": id, "status": "stopped" }));
    // The slot is free when the stop is answered, though the agent runs on through its
    // grace.
    spawn(&c, "after stop");
}

/// A stop answered `stopped` frees its slot at once: on a two-slot plan, stopping the
/// oldest agent and spawning another never meets `concurrent_limit_reached`, while every
/// stopped spinner is still in its grace.
#[test]
fn stop_then_spawn_never_meets_the_concurrency_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let key = create_key(&dir, "acme", "free");
    let config = format!(
        "[plans.free]\nspawns_per_minute = 30\nspawns_per_hour = 100\nconcurrent_agents = 2\nmemories = 100\nagent_hours_per_month = 10.0\n\
         [runtime]\ncomponent = {:?}\nstop_grace_secs = 20.0\n",
        crate::guests::SPIN
    );
    let server = Server::start_with(
        &dir,
        &Options {
            config: Some(config),
            hash_embedder: true,
            ..Default::default()
        },
    );
    let c = server.client(&key);
    let mut live = std::collections::VecDeque::from([spawn(&c, "spin 0"), spawn(&c, "spin 1")]);
    c.post("/api/v1/agents", &json!({ "task": "third" }))
        .assert_error(429, "concurrent_limit_reached");
    for round in 2..8 {
        let oldest = live.pop_front().unwrap();
        let stopped = c.delete(&format!("/api/v1/agents/{oldest}"));
        assert_eq!(stopped.body["status"], "stopped");
        let r = c.post(
            "/api/v1/agents",
            &json!({ "task": format!("spin {round}") }),
        );
        assert_eq!(r.status, 201, "round {round}: {:#}", r.body);
        live.push_back(r.body["agent_id"].as_str().unwrap().to_string());
    }
    // The count is still the plan's: two running, the stopped ones not among them.
    let r = c.post("/api/v1/agents", &json!({ "task": "one too many" }));
    r.assert_error(429, "concurrent_limit_reached");
    assert_eq!(r.body["error"]["details"]["currentConcurrent"], 2);
}

/// An agent read as ended has left its account's count: on a one-slot plan, spawning as
/// soon as the last agent reads terminal never meets `concurrent_limit_reached`, though its
/// task still writes its last log event and ends its journal then.
#[test]
fn an_ended_agent_s_slot_is_free_when_its_record_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let key = create_key(&dir, "acme", "free");
    let config = "[plans.free]\nspawns_per_minute = 30\nspawns_per_hour = 100\nconcurrent_agents = 1\nmemories = 100\nagent_hours_per_month = 10.0\n";
    let options = Options {
        config: Some(config.into()),
        hash_embedder: true,
        ..Default::default()
    };
    let server = Server::start_with(&dir, &options);
    let c = server.client(&key);
    let ended = |a: &Value| matches!(a["status"].as_str(), Some("completed" | "failed"));
    for round in 0..20 {
        let id = spawn(&c, &format!("round {round}"));
        // Read without a pause, so the next spawn comes as soon as the record says ended.
        let start = Instant::now();
        while !ended(&c.get(&format!("/api/v1/agents/{id}")).body) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "round {round} never ended"
            );
        }
    }
}

#[test]
fn agents_and_logs_are_private_to_their_account() {
    let (_tmp, server, keys) =
        server_with_keys(&[("alice", "free"), ("mallory", "free")], &offline());
    let (a, b) = (server.client(&keys[0]), server.client(&keys[1]));
    let id = spawn(&a, "Remember that the vault code is 1234");
    wait_terminal(&a, &id);
    b.get(&format!("/api/v1/agents/{id}"))
        .assert_error(404, "agent_not_found");
    b.get(&format!("/api/v1/agents/{id}/logs"))
        .assert_error(404, "agent_not_found");
    b.delete(&format!("/api/v1/agents/{id}"))
        .assert_error(404, "agent_not_found");
    assert_eq!(b.get("/api/v1/agents").body["data"], json!([]));
    // B's agent cannot recall A's memories.
    let bid = spawn(&b, "What do you remember about the vault code?");
    let done = wait_terminal(&b, &bid);
    assert!(
        !done["final_result"].as_str().unwrap().contains("1234"),
        "{done:#}"
    );
    assert_eq!(
        a.get(&format!("/api/v1/agents/{id}")).body["status"],
        "completed"
    );
}

/// A restart resumes the agents the killed server had alive, on either backend (their
/// journals replayed: see `durable`).
#[test]
fn a_restart_resumes_live_agents() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let key = create_key(&dir, "acme", "free");
    let options = with_runtime(&format!("component = {:?}", crate::guests::SPIN));
    let mut server = Server::start_with(&dir, &options);
    let c = server.client(&key);
    let id = spawn(&c, "spin until the host dies");
    wait_for(&c, &id, Duration::from_secs(20), |a| {
        a["status"] == "running"
    });
    server.kill9();
    let server = Server::start_with(&dir, &options);
    let c = server.client(&key);
    let after = c.get(&format!("/api/v1/agents/{id}")).body;
    assert_eq!(after["status"], "running", "{after:#}");
    let kinds: Vec<&str> = (after["progress"].as_array().unwrap().iter())
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"resumed"), "{after:#}");
    // Its progress report was replayed, or made again if the kill lost it: once either way.
    let resumed = wait_for(&c, &id, Duration::from_secs(20), |a| {
        a["progress"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["message"] == "spinning")
    });
    let spinning = (resumed["progress"].as_array().unwrap().iter())
        .filter(|p| p["message"] == "spinning")
        .count();
    assert_eq!(spinning, 1, "{resumed:#}");
    let stopped = c.delete(&format!("/api/v1/agents/{id}"));
    assert_eq!(stopped.body["status"], "stopped", "{:#}", stopped.body);
}
