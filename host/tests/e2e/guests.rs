//! One test per guest component `wasmind-guests` built, named after it: a guest that
//! no test uses is a build error (`foreach_guest!` below).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{
    agents::{spawn, wait_for, wait_for_terminal_event, wait_terminal, with_runtime},
    common::{
        Options,
        fake_mind::{FakeMind, Reply},
        now_ms, server_with_keys,
    },
};

pub use wasmind_guests::*;

// The `hostile` guest's test runs beside the other sandbox tests, `reach`'s beside the other
// durability tests, `fetch`'s and `web_digest`'s beside the other egress tests.
use crate::{
    durable::reach,
    egress::{fetch, web_digest},
    hostile::hostile,
};

macro_rules! assert_test_exists {
    ($name:ident) => {
        #[allow(unused_imports)]
        use self::$name as _;
    };
}
wasmind_guests::foreach_guest!(assert_test_exists);

/// The default agent over the OpenAI protocol: memory tool calls round-trip, a failing
/// tool call is fed back as `Service Memory failed: …`, and the run completes.
#[test]
fn default_agent() {
    let mind = FakeMind::start([
        Reply::tool_call(
            "service_memory_put",
            json!({ "key": "favourite_food", "value": "pizza with mushrooms", "tags": ["food"] }),
        ),
        Reply::tool_call(
            "service_memory_put",
            json!({ "key": "Not A Key", "value": "x" }),
        ),
        Reply::tool_call("service_memory_search", json!({ "query": "pizza" })),
        Reply::text("All saved."),
    ]);
    let options = Options {
        hash_embedder: true,
        ..Default::default()
    }
    .openai_mind(&mind.base_url());
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    let id = spawn(&c, "Please remember my favourite food");
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["final_result"], "All saved.");
    assert_eq!(done["model"], "fake-gpt");
    assert!(
        done["usage"]["input_tokens"].as_u64().unwrap() > 0,
        "{done:#}"
    );
    assert_eq!(
        c.get("/api/v1/memory?key=favourite_food").body["value"],
        "pizza with mushrooms"
    );

    let results = mind.tool_messages();
    assert_eq!(results.len(), 3, "{results:#?}");
    let put: Value = serde_json::from_str(&results[0]).unwrap();
    assert!(put["memory_id"].as_str().unwrap().starts_with("mem_"));
    assert_eq!(
        (put["key"].clone(), put["namespace"].clone()),
        (json!("favourite_food"), json!("default"))
    );
    assert!(
        results[1].starts_with("Service Memory failed:"),
        "{}",
        results[1]
    );
    let found: Value = serde_json::from_str(&results[2]).unwrap();
    assert_eq!(found["results"][0]["key"], "favourite_food");
    // The task is the user message; the system prompt explains the tools.
    let first = &mind.requests()[0];
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for name in [
        "service_memory_put",
        "service_memory_get",
        "service_memory_list",
        "service_memory_delete",
        "service_memory_search",
    ] {
        assert!(tools.contains(&name), "{tools:?}");
    }
    assert_eq!(first["messages"][0]["role"], "system");
    assert!(
        first["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "user" && m["content"] == "Please remember my favourite food")
    );
    assert_eq!(mind.authorizations()[0].as_deref(), Some("Bearer sk-test"));
    let logs = c.get(&format!("/api/v1/agents/{id}/logs")).body;
    let kinds: Vec<&str> = logs["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    for kind in ["tool_use", "tool_result", "thinking", "terminal"] {
        assert!(kinds.contains(&kind), "{kinds:?}");
    }
}

/// Stop while the Mind is slow: stopped at once, final_result null, a second stop
/// unchanged, and the late answer changes nothing.
#[test]
fn stop_while_the_mind_is_slow() {
    let mind = FakeMind::start([Reply::Hang]);
    let options = Options {
        hash_embedder: true,
        ..Default::default()
    }
    .openai_mind(&mind.base_url());
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    let id = spawn(&c, "think slowly");
    assert!(mind.wait_for_requests(1, Duration::from_secs(20)));
    let stop_at = Instant::now();
    assert_eq!(
        c.delete(&format!("/api/v1/agents/{id}")).body,
        json!({ "agent_id": id, "status": "stopped" })
    );
    // The pending Mind call returns at once, so the agent ends well inside the grace.
    wait_for_terminal_event(
        &c,
        &id,
        stop_at,
        Duration::from_secs(5),
        "agent waited out its grace",
    );
    mind.release();
    std::thread::sleep(Duration::from_millis(300));
    let after = c.get(&format!("/api/v1/agents/{id}")).body;
    assert_eq!(
        (after["status"].clone(), after["final_result"].clone()),
        (json!("stopped"), json!(null))
    );
    assert_eq!(
        c.delete(&format!("/api/v1/agents/{id}")).body["status"],
        "stopped"
    );
}

/// A provider that keeps failing: retried (1 s, 2 s, 4 s), then the agent fails with
/// `mind_unavailable` — the API itself never answers 5xx for it.
#[test]
fn an_unavailable_mind_fails_the_agent_not_the_api() {
    let mind = FakeMind::start((0..4).map(|_| Reply::status(503)));
    let options = Options {
        hash_embedder: true,
        ..Default::default()
    }
    .openai_mind(&mind.base_url());
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    let id = spawn(&c, "anything");
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "failed", "{done:#}");
    assert_eq!(done["error"]["code"], "mind_unavailable");
    assert_eq!(mind.request_count(), 4, "one call and three retries");
}

/// The notes agent searches memory first, plans, and writes a note of its result.
#[test]
fn notes_agent() {
    let (_tmp, server, keys) = server_with_keys(
        &[("acme", "free")],
        &with_runtime(&format!("component = {NOTES_AGENT:?}")),
    );
    let c = server.client(&keys[0]);
    let id = spawn(&c, "Remember that the team offsite is in Porto");
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    let listed = c.get("/api/v1/memory/list").body;
    let memories = listed["data"].as_array().unwrap();
    assert!(
        memories.len() >= 2,
        "the agent's put and its note: {listed:#}"
    );
    assert!(
        memories
            .iter()
            .any(|m| m["value"].as_str().unwrap().contains("Porto"))
    );
}

/// The `ts` of a progress entry or log event.
fn ts(event: &Value) -> u64 {
    event["ts"]
        .as_u64()
        .unwrap_or_else(|| panic!("no ts: {event:#}"))
}

#[test]
fn spin() {
    let (_tmp, server, keys) = server_with_keys(
        &[("acme", "free")],
        &with_runtime(&format!("component = {:?}\nstop_grace_secs = 1.0", SPIN)),
    );
    let c = server.client(&keys[0]);
    let id = spawn(&c, "spin");
    let running = wait_for(&c, &id, Duration::from_secs(20), |a| {
        a["progress"].as_array().is_some_and(|p| !p.is_empty())
    });
    assert_eq!(running["progress"][0]["message"], "spinning");
    let (stop_at, stop_ms) = (Instant::now(), now_ms());
    let r = c.delete(&format!("/api/v1/agents/{id}"));
    assert_eq!(r.body["status"], "stopped");
    assert_eq!(
        c.get(&format!("/api/v1/agents/{id}")).body["status"],
        "stopped",
        "stopped at once"
    );
    // The terminal event is written once the store is dropped: after the grace, not
    // before it, and not long after.
    let terminal = wait_for_terminal_event(
        &c,
        &id,
        stop_at,
        Duration::from_secs(4),
        "spinning guest outlived its grace",
    );
    assert!(
        ts(&terminal) >= stop_ms + 1_000,
        "store dropped {} ms after the stop, inside its 1 s grace",
        ts(&terminal).saturating_sub(stop_ms)
    );
    let done = c.get(&format!("/api/v1/agents/{id}")).body;
    assert_eq!(
        (done["status"].clone(), done["final_result"].clone()),
        (json!("stopped"), json!(null))
    );
    assert_eq!(
        c.delete(&format!("/api/v1/agents/{id}")).body["status"],
        "stopped",
        "second stop unchanged"
    );
}

#[test]
fn hog() {
    let (_tmp, server, keys) = server_with_keys(
        &[("acme", "lightyear")],
        &with_runtime(&format!("component = {:?}\nmemory_limit_mib = 16", HOG)),
    );
    let c = server.client(&keys[0]);
    let id = spawn(&c, "eat memory");
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "failed", "{done:#}");
    assert_eq!(done["error"]["code"], "memory_limit_exceeded", "{done:#}");
    assert_eq!(
        c.get("/api/v1/memory/namespaces").status,
        200,
        "host unaffected"
    );
}

#[test]
fn panicker() {
    let (_tmp, server, keys) = server_with_keys(
        &[("acme", "lightyear")],
        &with_runtime(&format!("component = {:?}", PANICKER)),
    );
    let c = server.client(&keys[0]);
    let ids: Vec<String> = (0..3).map(|i| spawn(&c, &format!("panic {i}"))).collect();
    for id in ids {
        let done = wait_terminal(&c, &id);
        assert_eq!(done["status"], "failed");
        assert_eq!(done["error"]["code"], "guest_trap");
        assert!(
            done["error"]["message"]
                .as_str()
                .unwrap()
                .contains("panicked"),
            "{done:#}"
        );
        assert_eq!(done["final_result"], json!(null));
    }
    assert_eq!(c.get("/api/v1/agents").status, 200);
}

/// A guest that ignores the stop keeps running through the grace (its store is not dropped
/// early: its progress goes on until the grace is nearly over) and not beyond it (the store
/// is dropped, and nothing more arrives).
#[test]
fn linger() {
    const GRACE_MS: u64 = 2_000;
    let (_tmp, server, keys) = server_with_keys(
        &[("acme", "free")],
        &with_runtime(&format!("component = {LINGER:?}\nstop_grace_secs = 2.0")),
    );
    let c = server.client(&keys[0]);
    let id = spawn(&c, "linger");
    let running = wait_for(&c, &id, Duration::from_secs(20), |a| {
        a["progress"].as_array().is_some_and(|p| !p.is_empty())
    });
    assert_eq!(running["progress"][0]["message"], "lingering");
    let (stop_at, stop_ms) = (Instant::now(), now_ms());
    assert_eq!(
        c.delete(&format!("/api/v1/agents/{id}")).body["status"],
        "stopped"
    );
    let terminal = wait_for_terminal_event(
        &c,
        &id,
        stop_at,
        Duration::from_millis(GRACE_MS + 3_000),
        "lingering guest outlived its grace",
    );
    let working = |record: &Value| -> Vec<u64> {
        record["progress"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["message"].as_str().unwrap().starts_with("still working"))
            .map(ts)
            .collect()
    };
    let after_stop = working(&c.get(&format!("/api/v1/agents/{id}")).body);
    let last = *after_stop
        .iter()
        .max()
        .expect("the guest did no work after the stop: dropped at once");
    // It ticks every 100 ms; 500 ms of slack for a loaded machine.
    assert!(
        last + 500 >= stop_ms + GRACE_MS,
        "last work {} ms after the stop: dropped before its {GRACE_MS} ms grace",
        last.saturating_sub(stop_ms)
    );
    assert!(
        ts(&terminal) >= stop_ms + GRACE_MS,
        "store dropped {} ms after the stop, inside its {GRACE_MS} ms grace",
        ts(&terminal).saturating_sub(stop_ms)
    );
    assert!(
        last <= ts(&terminal),
        "work recorded after the store was dropped"
    );
    // Absence takes a wait: half a second past the drop (five ticks), still nothing new.
    let quiet_until = ts(&terminal) + 500;
    while now_ms() < quiet_until {
        std::thread::sleep(Duration::from_millis(50));
    }
    let later = c.get(&format!("/api/v1/agents/{id}")).body;
    assert_eq!(
        working(&later),
        after_stop,
        "the guest ran on after its drop"
    );
    assert_eq!(
        (later["status"].clone(), later["final_result"].clone()),
        (json!("stopped"), json!(null))
    );
}
