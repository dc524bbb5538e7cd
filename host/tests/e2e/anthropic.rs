//! The Anthropic provider end to end: the real binary with `WASMIND_MIND=anthropic`
//! against a fake Messages API, running the default agent.

use serde_json::{Value, json};

use crate::{
    agents::wait_terminal,
    common::{
        Options,
        fake_anthropic::{FakeAnthropic, Reply},
        fake_server::{INPUT_TOKENS, OUTPUT_TOKENS},
        server_with_keys,
    },
};

/// A `tool_use` of `service_memory_put` round-trips as a `tool_result` carrying the tool's
/// JSON result, the memory is stored, and the run completes with the final text; usage is
/// the sum the fake reported.
#[test]
fn default_agent_uses_memory_tools_over_messages() {
    let mind = FakeAnthropic::start([
        Reply::tool_call(
            "service_memory_put",
            json!({ "key": "favourite_tea", "value": "sencha, no sugar" }),
        ),
        Reply::text("Noted your tea."),
    ]);
    let options = Options {
        hash_embedder: true,
        ..Default::default()
    }
    .anthropic_mind(&mind.base_url());
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    // Named and `explicit`: no title or extraction requests, only the agent's own two.
    let spawned = c.post(
        "/api/v1/agents",
        &json!({ "task": "Remember that my favourite tea is sencha", "name": "tea", "memory_mode": "explicit" }),
    );
    assert_eq!(spawned.status, 201, "{:#}", spawned.body);
    let id = spawned.body["agent_id"].as_str().unwrap();
    let done = wait_terminal(&c, id);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["final_result"], "Noted your tea.");
    assert_eq!(done["model"], "fake-claude");
    assert_eq!(mind.request_count(), 2);
    assert_eq!(
        (
            &done["usage"]["input_tokens"],
            &done["usage"]["output_tokens"]
        ),
        (&json!(2 * INPUT_TOKENS), &json!(2 * OUTPUT_TOKENS))
    );

    let memory = c.get("/api/v1/memory?key=favourite_tea");
    assert_eq!(memory.status, 200, "{:#}", memory.body);
    assert_eq!(memory.body["value"], "sencha, no sugar");

    let results = mind.tool_results(1);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert_eq!(results[0]["tool_use_id"], "toolu_1");
    let put: Value = serde_json::from_str(results[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(put["memory_id"], memory.body["memory_id"], "{put:#}");
    assert_eq!(
        (&put["key"], &put["namespace"]),
        (&json!("favourite_tea"), &json!("default"))
    );

    let second = &mind.requests()[1];
    let turns = second["messages"].as_array().unwrap();
    assert_eq!(
        turns
            .iter()
            .map(|t| t["role"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["user", "assistant", "user"],
        "{second:#}"
    );
    assert_eq!(
        turns[1]["content"][0],
        json!({ "type": "tool_use", "id": "toolu_1", "name": "service_memory_put",
                "input": { "key": "favourite_tea", "value": "sencha, no sugar" } })
    );
    let first = &mind.requests()[0];
    assert!(
        first["system"].as_str().is_some_and(|s| !s.is_empty()),
        "{first:#}"
    );
    assert!(first["max_tokens"].as_u64().is_some_and(|n| n > 0));
    assert!(
        first["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "service_memory_put" && t["input_schema"]["type"] == "object"),
        "{first:#}"
    );
    assert_eq!(
        mind.header("x-api-key"),
        vec![Some("sk-ant-test".to_string()); 2]
    );
    assert_eq!(
        mind.header("anthropic-version"),
        vec![Some("2023-06-01".to_string()); 2]
    );
}
