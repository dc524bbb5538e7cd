//! Memory writing modes (§4.4), automatic extraction and titles, end to end: the real
//! binary and default agent, with the offline Mind or the fake OpenAI server.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{
    agents::{wait_for, wait_terminal},
    common::{
        Client, Options,
        fake_mind::{DEFAULT_TITLE, FakeMind, INPUT_TOKENS, Reply},
        server_with_keys,
    },
};

const REMEMBER: &str = "remember that the office wifi password is hunter2. thanks";

fn offline() -> Options {
    Options {
        hash_embedder: true,
        ..Default::default()
    }
}

/// Spawns with `extra` fields; asserts 201; returns the agent id.
fn spawn_with(c: &Client, task: &str, extra: &Value) -> String {
    let mut body = json!({ "task": task });
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let r = c.post("/api/v1/agents", &body);
    assert_eq!(r.status, 201, "{:#}", r.body);
    r.body["agent_id"].as_str().unwrap().to_string()
}

fn events(c: &Client, id: &str, kind: &str) -> Vec<Value> {
    let logs = c.get(&format!("/api/v1/agents/{id}/logs")).body;
    logs["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == kind)
        .cloned()
        .collect()
}

fn memories(c: &Client) -> Vec<Value> {
    c.get("/api/v1/memory/list?limit=200").body["data"]
        .as_array()
        .unwrap()
        .clone()
}

fn source(m: &Value) -> &str {
    m["source"].as_str().unwrap_or_default()
}

#[test]
fn auto_mode_extracts_memories_that_search_finds_and_titles_the_agent() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &offline());
    let c = server.client(&keys[0]);
    let id = spawn_with(&c, REMEMBER, &json!({}));
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["memory_mode"], "auto");

    let extracted = events(&c, &id, "extraction");
    assert_eq!(extracted.len(), 1, "{extracted:#?}");
    let written = &extracted[0]["data"];
    assert!(written["memory_id"].as_str().unwrap().starts_with("mem_"));
    assert_eq!(written["namespace"], "agent_runs");
    assert!(
        done["progress"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["message"] == "automatic extraction remembered 1 memories"),
        "{done:#}"
    );

    let found = c.post(
        "/api/v1/memory/search",
        &json!({ "query": "office wifi password", "mode": "keyword", "namespace": "agent_runs" }),
    );
    assert_eq!(found.status, 200, "{:#}", found.body);
    let hit = &found.body["results"][0];
    assert_eq!(hit["key"], written["key"], "{:#}", found.body);
    assert_eq!(source(hit), "auto_extracted", "{hit:#}");
    // Provenance names the door and the agent (issue 26).
    let by = &hit["provenance"];
    assert_eq!(
        (&by["door"], &by["agent_id"], &by["key_id"]),
        (&json!("auto_extraction"), &json!(id), &Value::Null),
        "{hit:#}"
    );
    assert!(
        hit["value"].as_str().unwrap().contains("hunter2"),
        "{hit:#}"
    );
    // The agent's own tool write is there too, as a manual memory.
    let all = memories(&c);
    assert_eq!(all.len(), 2, "{all:#?}");
    assert_eq!(all.iter().filter(|m| source(m) == "manual").count(), 1);
    let tool = all.iter().find(|m| source(m) == "manual").unwrap();
    let by = &tool["provenance"];
    assert_eq!(
        (&by["door"], &by["agent_id"]),
        (&json!("agent_tool"), &json!(id)),
        "{tool:#}"
    );
    // The journal step of the put call (every run is journaled, on both backends).
    assert!(by["step"].as_u64().is_some_and(|s| s >= 1), "{tool:#}");

    // No name given: the provisional name (the task's first words) gives way to a title.
    let titled = wait_for(&c, &id, Duration::from_secs(10), |a| {
        a["name"] == "Remember that the office wifi password is hunter2"
    });
    assert!(titled["usage"]["output_tokens"].as_u64().unwrap() > 0);
}

#[test]
fn explicit_mode_writes_only_what_the_agent_put_and_off_mode_gives_no_memory() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &offline());
    let c = server.client(&keys[0]);

    let explicit = spawn_with(
        &c,
        REMEMBER,
        &json!({ "memory_mode": "explicit", "name": "wifi" }),
    );
    let done = wait_terminal(&c, &explicit);
    assert_eq!(
        (
            done["status"].as_str(),
            done["memory_mode"].as_str(),
            done["name"].as_str()
        ),
        (Some("completed"), Some("explicit"), Some("wifi"))
    );
    assert!(events(&c, &explicit, "extraction").is_empty());
    let all = memories(&c);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(source(&all[0]), "manual");

    let off = spawn_with(
        &c,
        "remember that the printer is on floor 3",
        &json!({ "memory_mode": "off" }),
    );
    let done = wait_terminal(&c, &off);
    assert_eq!(done["status"], "completed", "{done:#}");
    let results = events(&c, &off, "tool_result");
    assert!(
        results
            .iter()
            .any(|e| e["message"] == "Service Memory failed: memory channel is not configured."),
        "{results:#?}"
    );
    assert!(events(&c, &off, "extraction").is_empty());
    assert_eq!(memories(&c).len(), 1, "nothing was written in off mode");

    let bad = c.post(
        "/api/v1/agents",
        &json!({ "task": "x", "memory_mode": "sometimes" }),
    );
    bad.assert_error(400, "invalid_memory_mode");
    assert!(
        bad.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"explicit\"")
    );
}

#[test]
fn invalid_and_over_quota_proposals_are_logged_not_fatal() {
    let mind = FakeMind::start([
        Reply::text("Noted."),
        Reply::tool_call(
            "save_memories",
            json!({ "memories": [
                { "key": "first_fact", "value": "The deploy window is Tuesday.", "tags": ["ops"], "importance": 7 },
                { "key": "Bad Key", "value": "rejected for its key" },
                { "key": "second_fact", "value": "Staging runs on port 8443." },
                { "key": "third_fact", "value": "Over the quota." }
            ] }),
        ),
    ]);
    let options = Options {
        config: Some(
            "[plans.free]\nspawns_per_minute = 5\nspawns_per_hour = 30\nconcurrent_agents = 5\n\
             memories = 2\nagent_hours_per_month = 10.0\n"
                .into(),
        ),
        ..offline()
    }
    .openai_mind(&mind.base_url());
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    let id = spawn_with(&c, "Note the ops facts", &json!({ "memory_mode": "both" }));
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["final_result"], "Noted.");

    let messages: Vec<String> = events(&c, &id, "extraction")
        .iter()
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert!(
        messages[0].starts_with("remembered \"first_fact\""),
        "{messages:#?}"
    );
    assert!(
        messages[1].starts_with("proposal rejected: "),
        "{messages:#?}"
    );
    assert!(
        messages[2].starts_with("remembered \"second_fact\""),
        "{messages:#?}"
    );
    assert!(
        messages[3].starts_with("extraction stopped: memory quota exceeded"),
        "{messages:#?}"
    );
    let first = c.get("/api/v1/memory?key=first_fact").body;
    assert_eq!(
        (source(&first), first["importance"].as_f64()),
        ("auto_extracted", Some(7.0))
    );

    // `both`: the Mind was told to save as it works; extraction read the run.
    let requests = mind.requests();
    let agent_call = requests
        .iter()
        .find(|r| r["tools"].as_array().is_some_and(|t| t.len() == 5))
        .expect("the agent's Mind call");
    assert!(
        agent_call["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("with the service_memory_put tool"),
        "{agent_call:#}"
    );
    let extraction = requests
        .iter()
        .find(|r| r["tools"][0]["function"]["name"] == "save_memories")
        .expect("the extraction request");
    let run = extraction["messages"][1]["content"].as_str().unwrap();
    assert!(
        run.contains("Task: Note the ops facts") && run.contains("Final answer: Noted."),
        "{run}"
    );

    // The title comes from the Mind; the record counts the tokens of all three calls.
    let titled = wait_for(&c, &id, Duration::from_secs(10), |a| {
        a["name"] == DEFAULT_TITLE
    });
    assert_eq!(
        titled["usage"]["input_tokens"],
        3 * INPUT_TOKENS,
        "{titled:#}"
    );
}
