//! `/mcp` and the `wasmind mcp` stdio bridge, driven by the official MCP Python SDK (`mcp`,
//! installed by `scripts/setup-tests.d/40-mcp-python`): a real client nobody on this project wrote.
//! The script is `mcp/client.py`; a test fails when its venv is missing.

use std::{
    io::Write,
    path::PathBuf,
    process::{Command, Stdio},
    time::Duration,
};

use serde_json::{Value, json};

use crate::common::{Client, Options, Server, binary, cli, create_key, poll_until};

/// The venv's python, as `scripts/setup-tests.d/40-mcp-python` made it.
fn python() -> PathBuf {
    let venv = std::env::var_os("WASMIND_MCP_VENV").map_or_else(
        || {
            let cache = std::env::var_os("XDG_CACHE_HOME").map_or_else(
                || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"),
                PathBuf::from,
            );
            cache.join("wasmind/mcp-venv")
        },
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup (step 40-mcp-python installs the MCP Python SDK)",
        python.display()
    );
    python
}

/// How the client reaches the server.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Via {
    Http,
    Stdio,
}

/// One MCP session: `initialize`, then `steps`; the script's JSON report.
pub(crate) fn session(via: Via, server: &Server, key: &str, steps: &Value) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/mcp/client.py");
    let url = format!("{}/mcp", server.base);
    let mut cmd = Command::new(python());
    cmd.arg(script);
    match via {
        Via::Http => cmd.args(["http", &url, key]),
        Via::Stdio => cmd.args(["stdio", binary().to_str().unwrap(), &url, key]),
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running the MCP client");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(steps.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|_| {
        panic!(
            "the MCP client printed no report: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The results of a session that must succeed.
#[track_caller]
pub(crate) fn results(report: &Value) -> Vec<Value> {
    assert!(report.get("error").is_none(), "{report:#}");
    assert_eq!(report["server"]["serverInfo"]["name"], "wasmind");
    report["results"].as_array().unwrap().clone()
}

pub(crate) fn call(name: &str, arguments: &Value) -> Value {
    json!({ "op": "call", "name": name, "arguments": arguments })
}

/// A tool call's text.
fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap()
}

/// A successful tool call's result object (its text is the same JSON).
#[track_caller]
pub(crate) fn ok(result: &Value) -> Value {
    assert_ne!(result["isError"], true, "{result:#}");
    let parsed: Value = serde_json::from_str(text(result)).unwrap();
    assert_eq!(parsed, result["structuredContent"]);
    parsed
}

/// The §4.4 contract of the memory tools' inputs: names, required members, every member with
/// the bounds and defaults of §2.1, §4.4 and §8.
fn assert_memory_contract(tools: &[Value]) {
    let schema = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no tool {name}"))["inputSchema"]
            .clone()
    };
    let members = |s: &Value| {
        let mut m: Vec<String> = s["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        m.sort();
        m
    };
    let put = schema("service_memory_put");
    assert_eq!(put["required"], json!(["key", "value"]));
    assert_eq!(
        members(&put),
        [
            "expires_in_days",
            "importance",
            "key",
            "namespace",
            "observed_at",
            "tags",
            "value"
        ]
    );
    assert_eq!(put["properties"]["observed_at"]["type"], "integer");
    assert_eq!(put["properties"]["value"]["maxLength"], 5000);
    assert_eq!(put["properties"]["namespace"]["default"], "default");
    assert_eq!(put["properties"]["tags"]["maxItems"], 20);
    assert_eq!(put["properties"]["tags"]["items"]["maxLength"], 50);
    let importance = &put["properties"]["importance"];
    assert_eq!(
        (
            &importance["minimum"],
            &importance["maximum"],
            &importance["default"]
        ),
        (&json!(1), &json!(10), &json!(5))
    );
    for name in ["service_memory_get", "service_memory_delete"] {
        let s = schema(name);
        assert_eq!(s["required"], json!(["key"]), "{name}");
        assert_eq!(members(&s), ["key", "namespace"], "{name}");
        assert_eq!(s["properties"]["namespace"]["default"], "default", "{name}");
    }
    let search = schema("service_memory_search");
    assert_eq!(search["required"], json!(["query"]));
    assert_eq!(
        members(&search),
        ["limit", "mode", "namespace", "query", "tags"]
    );
    let limit = &search["properties"]["limit"];
    assert_eq!(
        (&limit["default"], &limit["maximum"]),
        (&json!(10), &json!(50))
    );
    assert_eq!(
        search["properties"]["mode"]["enum"],
        json!(["hybrid", "semantic", "keyword"])
    );
    assert_eq!(search["properties"]["mode"]["default"], "hybrid");
    let list = schema("service_memory_list");
    assert!(list.get("required").is_none());
    assert_eq!(members(&list), ["limit", "namespace", "tags"]);
    let limit = &list["properties"]["limit"];
    assert_eq!(
        (&limit["default"], &limit["maximum"]),
        (&json!(50), &json!(200))
    );
}

/// Free plan with room to spawn, and a hash embedder for a quick start.
fn options() -> Options {
    Options {
        hash_embedder: true,
        config: Some(
            "[plans.free]\nspawns_per_minute = 1\nspawns_per_hour = 30\nconcurrent_agents = 5\n\
             memories = 100\nagent_hours_per_month = 10.0\n"
                .into(),
        ),
        ..Default::default()
    }
}

/// When the first memory's fact was stated (epoch ms): 2023-11-14.
const STATED_AT: u64 = 1_700_000_000_000;

/// Everything the issue asks of one transport: tools and their schemas, put → search → get,
/// the exact failure text, isolation between accounts, a spawn whose result REST reads, a
/// rate-limited spawn as a tool error saying when to retry, and refused keys.
fn memory_and_agents(via: Via) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let acme = create_key(&dir, "acme", "free");
    let other = create_key(&dir, "other", "free");
    let revokee = create_key(&dir, "revokee", "free");
    let server = Server::start_with(&dir, &options());

    let steps = json!([
        { "op": "tools" },
        call("service_memory_put", &json!({"key": "favourite_food", "value": "pizza with mushrooms", "tags": ["food"], "observed_at": STATED_AT})),
        call("service_memory_search", &json!({"query": "pizza mushrooms"})),
        call("service_memory_get", &json!({"key": "favourite_food"})),
        call("service_memory_put", &json!({"key": "Not Snake", "value": "x"})),
        call("service_memory_put", &json!({"key": "big", "value": "x".repeat(5001)})),
        call("service_memory_list", &json!({})),
        call("agent_spawn", &json!({"task": "Say hello", "memory_mode": "off"})),
        call("agent_spawn", &json!({"task": "Say hello again"})),
        call("tool_register", &json!({
            "name": "weather", "kind": "http", "description": "The weather",
            "parameters": {"type": "object"}, "endpoint": {"url": "https://api.example.com/w"},
            "secret_header": {"name": "X-Api-Key", "value": "sk-mcp-secret-7"},
        })),
        call("tool_list", &json!({})),
        call("tool_call", &json!({"name": "weather", "arguments": {}})),
    ]);
    let r = results(&session(via, &server, &acme, &steps));

    let tools = r[0]["tools"].as_array().unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "agent_get",
            "agent_list",
            "agent_spawn",
            "agent_stop",
            "service_memory_delete",
            "service_memory_get",
            "service_memory_list",
            "service_memory_put",
            "service_memory_search",
            "tool_call",
            "tool_delete",
            "tool_list",
            "tool_refresh",
            "tool_register",
        ]
    );
    assert_memory_contract(tools);
    // Tools: registered, listed, the secret in neither; a call the egress policy refuses
    // (no allowlist here) is a tool error naming the code.
    assert_eq!(ok(&r[9])["has_secret"], true, "{}", r[9]);
    assert_eq!(ok(&r[10])["data"][0]["name"], "weather", "{}", r[10]);
    assert!(
        !r[9].to_string().contains("sk-mcp-secret-7")
            && !r[10].to_string().contains("sk-mcp-secret-7")
    );
    assert_eq!(r[11]["isError"], true);
    assert!(text(&r[11]).starts_with("tool_denied: "), "{}", r[11]);

    let put = ok(&r[1]);
    assert!(
        put["memory_id"].as_str().unwrap().starts_with("mem_"),
        "{put}"
    );
    assert_eq!(
        (&put["key"], &put["namespace"]),
        (&json!("favourite_food"), &json!("default"))
    );
    // When the fact was stated, as the tool call said, shows in the memory's history.
    let rest = Client::new(&server.base, Some(&acme));
    let history = rest.get("/api/v1/memory/history?key=favourite_food").body;
    assert_eq!(history["data"][0]["observed_at"], STATED_AT, "{history}");
    let found = ok(&r[2]);
    assert_eq!(found["results"][0]["key"], "favourite_food", "{found}");
    assert!(found["results"][0]["breakdown"]["timeDecay"].is_number());
    let got = ok(&r[3]);
    assert_eq!(
        (&got["found"], &got["value"]),
        (&json!(true), &json!("pizza with mushrooms"))
    );
    assert_eq!(got["access_count"], 1);

    assert_eq!(r[4]["isError"], true);
    assert_eq!(
        text(&r[4]),
        "Service Memory failed: key \"Not Snake\" must be snake_case: a lowercase letter, then lowercase letters, digits or underscores"
    );
    assert_eq!(
        text(&r[5]),
        "Service Memory failed: value is 5001 characters; the limit is 5000"
    );
    assert_eq!(ok(&r[6])["count"], 1);

    // The spawn: through MCP; its result read through REST.
    let spawned = ok(&r[7]);
    assert_eq!(spawned["status"], "spawning");
    let id = spawned["agent_id"].as_str().unwrap().to_string();
    let done = poll_until(Duration::from_secs(60), "the agent completes", || {
        let a = rest.get(&format!("/api/v1/agents/{id}")).body;
        match a["status"].as_str() {
            Some("completed") => Ok(a),
            _ => Err(a.to_string()),
        }
    });
    assert!(
        done["final_result"].as_str().is_some_and(|s| !s.is_empty()),
        "{done:#}"
    );
    // The plan admits one spawn a minute: the second is a tool error saying when to retry.
    assert_eq!(r[8]["isError"], true);
    let refusal = text(&r[8]);
    assert!(refusal.starts_with("rate_limited: "), "{refusal}");
    let secs = &r[8]["structuredContent"]["error"]["retry_after_secs"];
    assert!(
        secs.as_u64().is_some_and(|s| (1..=60).contains(&s)),
        "{:#}",
        r[8]
    );
    assert!(
        refusal.ends_with(&format!("(retry after {secs} seconds)")),
        "{refusal}"
    );

    // The agent tools read back what was spawned.
    let r = results(&session(
        via,
        &server,
        &acme,
        &json!([
            call("agent_get", &json!({"agent_id": id})),
            call("agent_list", &json!({"limit": 5})),
            call("agent_stop", &json!({"agent_id": id})),
        ]),
    ));
    let got = ok(&r[0]);
    assert_eq!(
        (&got["status"], &got["final_result"]),
        (&json!("completed"), &done["final_result"])
    );
    assert_eq!(ok(&r[1])["data"][0]["agent_id"], id.as_str());
    assert_eq!(ok(&r[2]), json!({"agent_id": id, "status": "completed"}));

    // Another account's session sees none of acme's memories or agents.
    let r = results(&session(
        via,
        &server,
        &other,
        &json!([
            call("service_memory_get", &json!({"key": "favourite_food"})),
            call(
                "service_memory_search",
                &json!({"query": "pizza mushrooms"})
            ),
            call("service_memory_list", &json!({})),
            call("agent_get", &json!({"agent_id": id})),
        ]),
    ));
    assert_eq!(ok(&r[0]), json!({"found": false}));
    assert_eq!(ok(&r[1]), json!({"results": []}));
    assert_eq!(ok(&r[2])["count"], 0);
    assert_eq!(r[3]["isError"], true);
    assert!(text(&r[3]).starts_with("agent_not_found: "), "{:#}", r[3]);

    refused_keys(via, &server, &dir, &revokee);
}

/// An unknown key, then a revoked one (revoked through the running server's admin socket, so
/// from its next request on), are refused with 401: the client reports an error, never an
/// empty result.
fn refused_keys(via: Via, server: &Server, dir: &std::path::Path, revokee: &str) {
    let steps = json!([call("service_memory_list", &json!({}))]);
    assert_eq!(results(&session(via, server, revokee, &steps)).len(), 1);
    let assert_refused = |server: &Server, key: &str| {
        let report = session(via, server, key, &steps);
        assert!(report.get("error").is_some(), "{report:#}");
        match via {
            Via::Http => assert_eq!(report["http_statuses"], json!([401]), "{report:#}"),
            Via::Stdio => assert!(
                report["error"]
                    .as_str()
                    .unwrap()
                    .contains("401 invalid_api_key: the server refused the API key"),
                "{report:#}"
            ),
        }
    };
    assert_refused(server, "wm_0000");
    let (ok, _, stderr) = cli(&[
        "keys",
        "revoke",
        "--data-dir",
        dir.to_str().unwrap(),
        revokee,
    ]);
    assert!(ok, "{stderr}");
    assert_refused(server, revokee);
}

#[test]
fn mcp_over_streamable_http() {
    memory_and_agents(Via::Http);
}

#[test]
fn mcp_through_the_stdio_bridge() {
    memory_and_agents(Via::Stdio);
}

/// `/mcp` answers 401 with the spec's envelope and `WWW-Authenticate: Bearer` before any
/// MCP processing, whatever the body.
#[test]
fn mcp_without_a_key_is_401_with_a_bearer_challenge() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start_with(&tmp.path().join("data"), &options());
    let r = reqwest::blocking::Client::new()
        .post(format!("{}/mcp", server.base))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .send()
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    let body: Value = r.json().unwrap();
    assert_eq!(body["error"]["code"], "invalid_api_key", "{body}");
}

/// A request to `/mcp` with `key`, in `session` when given, that accepts either kind of
/// answer (JSON or an event stream).
fn mcp_request(
    server: &Server,
    method: reqwest::Method,
    key: &str,
    session: Option<&str>,
) -> reqwest::blocking::RequestBuilder {
    let request = reqwest::blocking::Client::new()
        .request(method, format!("{}/mcp", server.base))
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream");
    match session {
        Some(id) => request.header("mcp-session-id", id),
        None => request,
    }
}

/// A raw session's `initialize` request.
fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "e2e", "version": "1"}}})
}

/// The notification that completes a raw session's handshake.
fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

/// A session belongs to the key that opened it: the same session id with another key —
/// of the same account or another — is answered as an unknown session (404), while its
/// own key goes on using it.
#[test]
fn an_mcp_session_is_refused_with_another_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let opener = create_key(&dir, "acme", "free");
    let sibling = create_key(&dir, "acme", "free");
    let stranger = create_key(&dir, "mallory", "free");
    let server = Server::start_with(&dir, &options());
    let post = |key: &str, session: Option<&str>, body: &Value| {
        let request = mcp_request(&server, reqwest::Method::POST, key, session);
        request.json(body).send().unwrap()
    };
    let opened = post(&opener, None, &initialize());
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    for key in [&sibling, &stranger] {
        let refused = post(key, Some(&session), &initialized());
        assert_eq!(refused.status(), 404, "{key}");
    }
    assert_eq!(post(&opener, Some(&session), &initialized()).status(), 202);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    assert_eq!(post(&stranger, Some(&session), &list).status(), 404);
    assert_eq!(post(&opener, Some(&session), &list).status(), 200);
}

/// MCP sessions and their event streams are bounded per account: the plan's
/// `mcp_sessions` open at once (a third `initialize` is 429 `session_limit_reached`, for
/// every key of the account), and each event stream (`GET /mcp`) holds a place among the
/// plan's `event_streams`, the console's streams' bound. An ended session frees both.
#[test]
fn mcp_sessions_and_their_streams_stop_at_the_plans_bounds() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let opener = create_key(&dir, "acme", "free");
    let sibling = create_key(&dir, "acme", "free");
    let stranger = create_key(&dir, "mallory", "free");
    let options = Options {
        hash_embedder: true,
        config: Some(
            "[plans.free]\nspawns_per_minute = 1\nspawns_per_hour = 30\nconcurrent_agents = 5\n\
             memories = 100\nagent_hours_per_month = 10.0\nmcp_sessions = 2\nevent_streams = 1\n"
                .into(),
        ),
        ..Default::default()
    };
    let server = Server::start_with(&dir, &options);
    let request =
        |method, key: &str, session: Option<&str>| mcp_request(&server, method, key, session);
    let open = |key: &str| {
        let opened = request(reqwest::Method::POST, key, None)
            .json(&initialize())
            .send()
            .unwrap();
        let status = opened.status().as_u16();
        let retry_after = opened
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_owned());
        match opened.headers().get("mcp-session-id") {
            Some(id) => {
                let id = id.to_str().unwrap().to_owned();
                let ready = request(reqwest::Method::POST, key, Some(&id)).json(&initialized());
                assert_eq!(ready.send().unwrap().status(), 202);
                (status, Ok(id))
            }
            None => (status, Err((retry_after, opened.json::<Value>().unwrap()))),
        }
    };

    let (_, first) = open(&opener);
    let (_, second) = open(&sibling);
    let (first, second) = (first.unwrap(), second.unwrap());
    for key in [&opener, &sibling] {
        let (status, refused) = open(key);
        let (retry_after, body) = refused.unwrap_err();
        assert_eq!((status, retry_after.as_deref()), (429, Some("5")), "{body}");
        assert_eq!(body["error"]["code"], "session_limit_reached", "{body}");
        assert_eq!(
            body["error"]["details"],
            json!({ "plan": "free", "currentSessions": 2, "maxSessions": 2 })
        );
    }
    let (status, theirs) = open(&stranger);
    assert_eq!(
        status, 200,
        "another account's sessions are its own: {theirs:?}"
    );

    // One event stream holds the account's one place; the other session's is refused.
    let stream = request(reqwest::Method::GET, &opener, Some(&first))
        .send()
        .unwrap();
    assert_eq!(stream.status(), 200);
    let refused = request(reqwest::Method::GET, &sibling, Some(&second))
        .send()
        .unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "5");
    let body: Value = refused.json().unwrap();
    assert_eq!(body["error"]["code"], "stream_limit_reached", "{body}");
    assert_eq!(
        body["error"]["details"],
        json!({ "plan": "free", "currentStreams": 1, "maxStreams": 1 })
    );

    // Ending the first session ends its stream: a session and a stream are free again.
    let ended = request(reqwest::Method::DELETE, &opener, Some(&first))
        .send()
        .unwrap();
    assert!(ended.status().is_success(), "{}", ended.status());
    drop(stream);
    poll_until(
        Duration::from_secs(10),
        "the ended session's stream place",
        || {
            let again = request(reqwest::Method::GET, &sibling, Some(&second))
                .send()
                .unwrap();
            match again.status().as_u16() {
                200 => Ok(()),
                other => Err(format!("{other}")),
            }
        },
    );
    let (status, third) = open(&opener);
    assert_eq!(status, 200, "{third:?}");
}
