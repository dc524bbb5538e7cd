//! Tenants' own agent components end to end: upload (validated, precompiled, stored
//! content-addressed), list, get, delete, spawn by id, name or name@version, the plan's
//! limits, privacy between accounts, and persistence across a crash.

use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::{
    agents::{wait_for, wait_terminal},
    common::{
        Client, Options, Server,
        components::{post_component, post_component_as, upload},
        create_key,
        fake_mind::{FakeMind, Reply},
        server_with_keys,
    },
    guests::{DEFAULT_AGENT, NOTES_AGENT},
};

fn options() -> Options {
    Options::hash_embedder()
}

/// Spawns `agent`; asserts 201 and returns the body.
#[track_caller]
fn spawn_agent(c: &Client, agent: &str) -> Value {
    let r = c.post(
        "/api/v1/agents",
        &json!({ "task": "Remember that the offsite is in Porto", "agent": agent }),
    );
    assert_eq!(r.status, 201, "{:#}", r.body);
    r.body
}

/// Spawns `agent`, waits for its end; asserts it completed running `expected` (`component_id`,
/// `version`).
#[track_caller]
fn runs_to_completion(c: &Client, agent: &str, expected: &Value) {
    let spawned = spawn_agent(c, agent);
    assert_eq!(spawned["agent"], *expected, "{spawned:#}");
    let done = wait_terminal(c, spawned["agent_id"].as_str().unwrap());
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["agent"], *expected, "{done:#}");
}

fn agent_of(component: &Value) -> Value {
    json!({
        "component_id": component["component_id"],
        "name": component["name"],
        "version": component["version"],
    })
}

#[test]
fn upload_list_get_spawn_and_delete_within_the_account() {
    let (_tmp, server, keys) =
        server_with_keys(&[("acme", "free"), ("globex", "free")], &options());
    let (c, other) = (server.client(&keys[0]), server.client(&keys[1]));
    let bytes = std::fs::read(NOTES_AGENT).unwrap();

    let v1 = upload(&c, NOTES_AGENT, "notes_agent", "1.2.0");
    assert!(v1["component_id"].as_str().unwrap().starts_with("cmp_"));
    assert_eq!(v1["name"], "notes_agent");
    assert_eq!(v1["version"], "1.2.0");
    assert_eq!(v1["size"], bytes.len() as u64);
    assert_eq!(v1["sha256"], hex::encode(Sha256::digest(&bytes)));
    assert!(v1["created_at"].as_str().unwrap().ends_with('Z'), "{v1:#}");
    post_component(&c, bytes, "notes_agent", "1.2.0").assert_error(409, "component_exists");
    // Semver order, not upload or string order: 1.10.0 is the newest.
    let v10 = upload(&c, NOTES_AGENT, "notes_agent", "1.10.0");
    let v9 = upload(&c, NOTES_AGENT, "notes_agent", "1.9.0");

    let page = c.get("/api/v1/agents/components?limit=2").body;
    let ids = |page: &Value| -> Vec<Value> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["component_id"].clone())
            .collect()
    };
    assert_eq!(
        ids(&page),
        [v9["component_id"].clone(), v10["component_id"].clone()]
    );
    let cursor = page["next_cursor"].as_str().unwrap();
    let rest = c
        .get(&format!(
            "/api/v1/agents/components?limit=2&cursor={cursor}"
        ))
        .body;
    assert_eq!(
        (ids(&rest), &rest["next_cursor"]),
        (vec![v1["component_id"].clone()], &Value::Null)
    );
    let id = v1["component_id"].as_str().unwrap();
    assert_eq!(c.get(&format!("/api/v1/agents/components/{id}")).body, v1);

    runs_to_completion(&c, id, &agent_of(&v1));
    runs_to_completion(&c, "notes_agent", &agent_of(&v10));
    runs_to_completion(&c, "notes_agent@1.9.0", &agent_of(&v9));
    let default = spawn_agent(&c, "notes_agent@1.2.0");
    assert_eq!(default["agent"], agent_of(&v1));
    let builtin = c.post("/api/v1/agents", &json!({ "task": "hello" }));
    assert_eq!(builtin.status, 201, "{:#}", builtin.body);
    assert_eq!(builtin.body["agent"], Value::Null, "{:#}", builtin.body);
    let builtin = c.get(&format!(
        "/api/v1/agents/{}",
        builtin.body["agent_id"].as_str().unwrap()
    ));
    assert_eq!(builtin.body["agent"], Value::Null, "{:#}", builtin.body);
    c.post("/api/v1/agents", &json!({ "task": "t", "agent": "nobody" }))
        .assert_error(404, "component_not_found");
    c.post(
        "/api/v1/agents",
        &json!({ "task": "t", "agent": "notes_agent@9.9.9" }),
    )
    .assert_error(404, "component_not_found");
    c.post("/api/v1/agents", &json!({ "task": "t", "agent": 7 }))
        .assert_error(400, "invalid_agent");

    // Another account sees none of it, on every route.
    assert_eq!(
        other.get("/api/v1/agents/components").body["data"],
        json!([])
    );
    other
        .get(&format!("/api/v1/agents/components/{id}"))
        .assert_error(404, "component_not_found");
    other
        .delete(&format!("/api/v1/agents/components/{id}"))
        .assert_error(404, "component_not_found");
    for spec in [id, "notes_agent", "notes_agent@1.2.0"] {
        other
            .post("/api/v1/agents", &json!({ "task": "t", "agent": spec }))
            .assert_error(404, "component_not_found");
    }
    // The same bytes uploaded by the other account: the same answer as a first upload.
    let theirs = upload(&other, NOTES_AGENT, "notes_agent", "1.2.0");
    assert_eq!(theirs["sha256"], v1["sha256"]);
    assert_ne!(theirs["component_id"], v1["component_id"]);

    // Deleting: 200 with what was deleted, then gone for its account only.
    let deleted = c.delete(&format!("/api/v1/agents/components/{id}"));
    assert_eq!((deleted.status, &deleted.body), (200, &v1));
    c.get(&format!("/api/v1/agents/components/{id}"))
        .assert_error(404, "component_not_found");
    c.delete(&format!("/api/v1/agents/components/{id}"))
        .assert_error(404, "component_not_found");
    c.post("/api/v1/agents", &json!({ "task": "t", "agent": id }))
        .assert_error(404, "component_not_found");
    for v in [&v9, &v10] {
        let id = v["component_id"].as_str().unwrap();
        assert_eq!(
            c.delete(&format!("/api/v1/agents/components/{id}")).status,
            200
        );
    }
    // The shared bytes went with acme's last component, yet the other account's stays.
    runs_to_completion(
        &other,
        theirs["component_id"].as_str().unwrap(),
        &agent_of(&theirs),
    );
}

/// A component in the text format, compiled with `wat`.
fn component(text: &str) -> Vec<u8> {
    wat::parse_str(text).unwrap()
}

#[test]
fn uploads_that_cannot_run_are_refused_with_what_is_wrong() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options());
    let c = server.client(&keys[0]);
    let refused = |bytes: Vec<u8>, says: &str| {
        let r = post_component(&c, bytes, "bad", "1.0.0");
        r.assert_error(400, "invalid_component");
        let message = r.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{says:?} not in {message:?}");
    };
    refused(b"\0asm\x01\0\0\0".to_vec(), "core WebAssembly module");
    refused(
        b"definitely not wasm".to_vec(),
        "not a WebAssembly component",
    );
    refused(Vec::new(), "not a WebAssembly component");
    refused(
        component(r#"(component (import "evil:thing/x" (instance (export "f" (func)))))"#),
        "evil:thing/x",
    );
    refused(
        component(
            r#"(component (import "wasi:http/outgoing-handler@0.2.0" (instance (export "handle" (func)))))"#,
        ),
        "wasi:http/outgoing-handler@0.2.0",
    );
    refused(component("(component)"), "run");
    // A component header with a broken body does not compile: 400, not 500.
    let mut broken = component("(component)");
    broken.extend_from_slice(b"\x01\xff\xff\xff\xff");
    refused(broken, "does not compile");

    let bytes = std::fs::read(NOTES_AGENT).unwrap();
    post_component(&c, bytes.clone(), "Notes", "1.0.0").assert_error(400, "invalid_name");
    post_component(&c, bytes.clone(), "notes", "1.0").assert_error(400, "invalid_version");
    post_component(&c, bytes.clone(), "notes", "01.0.0").assert_error(400, "invalid_version");
    c.send(
        c.request(
            reqwest::Method::POST,
            "/api/v1/agents/components?version=1.0.0",
        )
        .body(bytes.clone()),
    )
    .assert_error(400, "invalid_query");
    post_component_as(&c, bytes.clone(), "notes", "1.0.0", Some("text/plain"))
        .assert_error(415, "unsupported_media_type");
    // Nothing was stored by any refusal; an upload without a Content-Type is accepted.
    assert_eq!(c.get("/api/v1/agents/components").body["data"], json!([]));
    let r = post_component_as(&c, bytes, "notes", "1.0.0", None);
    assert_eq!(r.status, 201, "{:#}", r.body);
}

#[test]
fn the_plan_bounds_component_size_and_count() {
    let notes = std::fs::metadata(NOTES_AGENT).unwrap().len();
    let config = format!(
        "[plans.free]\nspawns_per_minute = 5\nspawns_per_hour = 30\nconcurrent_agents = 2\n\
         memories = 100\nagent_hours_per_month = 10.0\ncomponent_max_bytes = {notes}\n\
         components = 2\n"
    );
    let options = Options {
        config: Some(config),
        ..options()
    };
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free"), ("big", "liftoff")], &options);
    let (c, big) = (server.client(&keys[0]), server.client(&keys[1]));
    let bytes = std::fs::read(NOTES_AGENT).unwrap();
    let mut over = bytes.clone();
    over.push(0);
    let r = post_component(&c, over.clone(), "notes", "1.0.0");
    r.assert_error(413, "payload_too_large");
    // The liftoff plan keeps its default (32 MiB), so the same bytes are fine there.
    let r = post_component(&big, over, "notes", "1.0.0");
    r.assert_error(400, "invalid_component");
    upload(&c, NOTES_AGENT, "notes", "1.0.0");
    upload(&c, NOTES_AGENT, "notes", "1.0.1");
    let r = post_component(&c, bytes, "notes", "1.0.2");
    r.assert_error(402, "component_quota_exceeded");
    assert_eq!(r.body["error"]["details"]["limit"], 2);
}

#[test]
fn a_running_agent_outlives_its_component_s_deletion() {
    let mind = FakeMind::start([Reply::text("1. Remember.").until_released()]);
    let options = options().openai_mind(&mind.base_url());
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    let component = upload(&c, NOTES_AGENT, "notes_agent", "1.0.0");
    let id = component["component_id"].as_str().unwrap();
    let spawned = spawn_agent(&c, id);
    let agent = spawned["agent_id"].as_str().unwrap();
    wait_for(&c, agent, Duration::from_secs(30), |a| {
        a["status"] == "running"
    });
    assert!(
        mind.wait_for_requests(1, Duration::from_secs(30)),
        "the agent asked the Mind"
    );
    assert_eq!(
        c.delete(&format!("/api/v1/agents/components/{id}")).status,
        200
    );
    mind.release();
    let done = wait_terminal(&c, agent);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["agent"], agent_of(&component));
}

#[test]
fn uploaded_components_survive_a_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let key = create_key(&dir, "acme", "free");
    let mut server = Server::start_with(&dir, &options());
    let c = server.client(&key);
    let notes = upload(&c, NOTES_AGENT, "notes_agent", "1.0.0");
    let other = upload(&c, DEFAULT_AGENT, "plain", "0.1.0");
    let gone = other["component_id"].as_str().unwrap();
    assert_eq!(
        c.delete(&format!("/api/v1/agents/components/{gone}"))
            .status,
        200
    );
    server.kill9();

    let server = Server::start_with(&dir, &options());
    let c = server.client(&key);
    let listed = c.get("/api/v1/agents/components").body;
    assert_eq!(listed["data"], json!([notes]));
    runs_to_completion(&c, "notes_agent", &agent_of(&notes));
    // The first spawn after the restart loaded the artifact; the next finds it linked.
    runs_to_completion(&c, "notes_agent@1.0.0", &agent_of(&notes));
    let metrics = c
        .request(reqwest::Method::GET, "/metrics")
        .send()
        .unwrap()
        .text()
        .unwrap();
    for from in ["artifact", "cache"] {
        let line = format!("wasmind_component_loads_total{{from=\"{from}\"}} 1");
        assert!(metrics.contains(&line), "{line} not in:\n{metrics}");
    }
    // Only the live component's bytes are kept.
    let kept: Vec<_> = std::fs::read_dir(dir.join("components"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        kept,
        [format!("{}.wasm", notes["sha256"].as_str().unwrap())]
    );
}
