//! Agents using the tools their account registered, on either backend: the default agent,
//! its Mind the fake one scripting the calls, offered an HTTP tool (an origin on 127.0.0.2)
//! and a remote MCP server's tools (rmcp's, inside the test), which the operator's config
//! allows. Each call shows in the agent's log as `tool_use` / `tool_result`; the secrets
//! show nowhere; another account's agent is offered none of them; a spawn's `tools` field
//! offers fewer; a kill -9 while a call is in flight makes it once more, with its key.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{
    agents::wait_terminal,
    common::{
        Client, Options,
        fake_mind::{FakeMind, Reply},
        mcp_origin::McpOrigin,
        origin::Origin,
        server_with_keys,
    },
    durable::Setup,
    tools::{BEARER, SECRET, config, nowhere_at_rest, weather},
};

/// The names of the tools the Mind was offered in its `n`th request.
fn offered(mind: &FakeMind, n: usize) -> Vec<String> {
    let request = &mind.requests()[n];
    (request["tools"].as_array().into_iter().flatten())
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// The agent's log events of `kind`: (message, data).
fn events(c: &Client, id: &str, kind: &str) -> Vec<(String, Value)> {
    let logs = c.get(&format!("/api/v1/agents/{id}/logs?limit=1000")).body;
    (logs["data"].as_array().unwrap().iter())
        .filter(|e| e["kind"] == kind)
        .map(|e| {
            (
                e["message"].as_str().unwrap().to_string(),
                e["data"].clone(),
            )
        })
        .collect()
}

fn spawn(c: &Client, body: &Value) -> String {
    let r = c.post("/api/v1/agents", body);
    assert_eq!(r.status, 201, "{:#}", r.body);
    r.body["agent_id"].as_str().unwrap().to_string()
}

#[test]
fn the_default_agent_calls_registered_tools_and_logs_each_call() {
    let (origin, mcp, canary) = (
        Origin::start("127.0.0.2"),
        McpOrigin::start("127.0.0.2"),
        Origin::start("127.0.0.1"),
    );
    let mind = FakeMind::start([
        Reply::tool_call("weather", json!({ "city": "Oslo" })),
        Reply::tool_call("mcp_calc_add", json!({ "a": 2, "b": 3 })),
        Reply::text("Oslo: got it; 2 + 3 = 5."),
        // The other account's agent.
        Reply::text("No tools here."),
    ]);
    let options = Options {
        config: Some(config(&[origin.port(), mcp.port()], canary.port(), 5)),
        ..Options::hash_embedder().openai_mind(&mind.base_url())
    };
    let (tmp, server, keys) = server_with_keys(&[("acme", "free"), ("other", "free")], &options);
    let (c, other) = (server.client(&keys[0]), server.client(&keys[1]));
    let r = c.post("/api/v1/tools", &weather(&origin.url("/weather")));
    assert_eq!(r.status, 201, "{:#}", r.body);
    let calc = json!({ "name": "calc", "kind": "mcp", "url": mcp.url(), "bearer": BEARER });
    assert_eq!(c.post("/api/v1/tools", &calc).status, 201);

    let id = spawn(
        &c,
        &json!({ "task": "The weather in Oslo, and 2 + 3?", "memory_mode": "explicit" }),
    );
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["final_result"], "Oslo: got it; 2 + 3 = 5.");
    assert!(done.get("tools").is_none(), "{done:#}");

    // Offered beside the memory tools; the results went back to the Mind.
    let names = offered(&mind, 0);
    assert_eq!(names.len(), 5 + 3, "{names:?}");
    for name in ["weather", "mcp_calc_add", "mcp_calc_fail"] {
        assert!(names.iter().any(|n| n == name), "{name}: {names:?}");
    }
    assert_eq!(mind.tool_messages(), ["got: {\"city\":\"Oslo\"}", "sum: 5"]);
    let seen = origin.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0]
            .headers
            .contains(&("x-api-key".into(), SECRET.into()))
    );
    assert!(seen[0].idempotency_key.is_some());
    assert!(canary.requests().is_empty());

    // Each call in the log stream: its use, then its result.
    let uses = events(&c, &id, "tool_use");
    let used: Vec<&str> = uses.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(used, ["weather", "mcp_calc_add"]);
    assert_eq!(uses[0].1["arguments"], json!({ "city": "Oslo" }));
    let results = events(&c, &id, "tool_result");
    assert_eq!(results[1].0, "sum: 5");
    assert_eq!(results[1].1["name"], "mcp_calc_add");
    // Counted as the run's outgoing HTTP.
    let usage = crate::egress::acme_console_usage(&server, &tmp.path().join("data"));
    assert_eq!(usage["http"]["requests"], 2, "{usage:#}");

    // Another account's agent is offered the memory tools alone.
    let theirs = spawn(
        &other,
        &json!({ "task": "Any tools?", "memory_mode": "explicit" }),
    );
    assert_eq!(wait_terminal(&other, &theirs)["status"], "completed");
    assert_eq!(offered(&mind, 3).len(), 5, "{:?}", offered(&mind, 3));

    // The secrets are in no answer, log, or file at rest (the journal included).
    let logs = c.get(&format!("/api/v1/agents/{id}/logs?limit=1000")).body;
    for shown in [&done, &logs] {
        for secret in [SECRET, BEARER] {
            assert!(!shown.to_string().contains(secret), "{shown:#}");
        }
    }
    assert!(!server.log().contains(SECRET) && !server.log().contains(BEARER));
    nowhere_at_rest(&tmp.path().join("data"), &[SECRET, BEARER]);
}

#[test]
fn a_spawn_s_tools_field_offers_only_the_tools_it_names() {
    let (origin, canary) = (Origin::start("127.0.0.2"), Origin::start("127.0.0.1"));
    let mind = FakeMind::start([
        // Not offered: the loop answers it without a call.
        Reply::tool_call("weather", json!({ "city": "Oslo" })),
        Reply::text("Could not."),
    ]);
    let options = Options {
        config: Some(config(&[origin.port()], canary.port(), 5)),
        ..Options::hash_embedder().openai_mind(&mind.base_url())
    };
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    assert_eq!(
        c.post("/api/v1/tools", &weather(&origin.url("/weather")))
            .status,
        201
    );
    for bad in [json!(["Not a name"]), json!(["a", "a"]), json!("weather")] {
        let body = json!({ "task": "t", "tools": bad });
        c.post("/api/v1/agents", &body)
            .assert_error(400, "invalid_tools");
    }

    let id = spawn(
        &c,
        &json!({ "task": "Weather?", "tools": ["forecast"], "memory_mode": "explicit" }),
    );
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["tools"], json!(["forecast"]));
    assert_eq!(offered(&mind, 0).len(), 5, "{:?}", offered(&mind, 0));
    assert!(mind.tool_messages()[0].starts_with("Unknown tool \"weather\""));
    assert!(origin.requests().is_empty());
}

/// Killed while its agent waits for a slow tool, the server resumes the agent after the
/// restart: the call made before is not made again, the one in flight is, once, with the
/// same `Idempotency-Key`, and the agent completes.
#[test]
fn a_tool_call_in_flight_at_a_kill_is_made_again_with_its_key() {
    let (origin, canary) = (Origin::start("127.0.0.2"), Origin::start("127.0.0.1"));
    let mind = FakeMind::start([
        Reply::tool_call("weather", json!({ "city": "Oslo" })),
        Reply::tool_call("slow", json!({ "city": "Bergen" })),
        Reply::text("Both answered."),
    ]);
    let setup = Setup::with(
        &mind,
        "free",
        Some(config(&[origin.port()], canary.port(), 5)),
    );
    let (mut server, c) = setup.start();
    let mut slow = weather(&origin.url("/slow"));
    slow["name"] = json!("slow");
    for tool in [weather(&origin.url("/weather")), slow] {
        assert_eq!(c.post("/api/v1/tools", &tool).status, 201);
    }
    let id = spawn(
        &c,
        &json!({ "task": "Weather twice", "memory_mode": "off" }),
    );
    assert!(origin.wait_for_requests(2, Duration::from_secs(60)));
    server.kill9();

    origin.release();
    let (_server, c) = setup.start();
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["final_result"], "Both answered.");
    crate::egress::sent_once_more(&origin, "/weather");
    assert_eq!(
        mind.tool_messages(),
        ["got: {\"city\":\"Oslo\"}", "slow answer"]
    );
}
