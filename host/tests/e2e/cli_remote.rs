//! The author's and user's commands over the public API: `wasmind agent deploy` and
//! `wasmind agents spawn --follow`, the real binary against a real server, with the URL and
//! key in `WASMIND_URL` and `WASMIND_API_KEY`.

use serde_json::{Value, json};

use crate::{
    common::{
        Options, Server,
        fake_mind::{FakeMind, Reply},
        remote_cli as wasmind, server_with_keys,
    },
    guests::{DEFAULT_AGENT, PANICKER},
};

/// `wasmind agent deploy PATH --name NAME --version 1.0.0`; asserts success and returns
/// the stored component.
#[track_caller]
fn deploy(server: &Server, key: &str, path: &str, name: &str) -> Value {
    let args = [
        "agent",
        "deploy",
        path,
        "--name",
        name,
        "--version",
        "1.0.0",
    ];
    let (code, stdout, stderr) = wasmind(server, key, &args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn deploy_then_follow_a_run_to_its_result() {
    let mind = FakeMind::start([
        Reply::tool_call(
            "service_memory_put",
            json!({ "key": "launch_day", "value": "Friday" }),
        ),
        Reply::text("Noted: the launch is on Friday."),
    ]);
    let options = Options::hash_embedder().openai_mind(&mind.base_url());
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let stored = deploy(&server, &keys[0], DEFAULT_AGENT, "keeper");
    assert_eq!(stored["name"], "keeper", "{stored:#}");
    assert_eq!(stored["version"], "1.0.0");

    let args = [
        "agents",
        "spawn",
        "--agent",
        "keeper",
        "--name",
        "launch",
        "--follow",
        "--task",
        "Remember that the launch is on Friday",
    ];
    let (code, stdout, stderr) = wasmind(&server, &keys[0], &args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.last(),
        Some(&"Noted: the launch is on Friday."),
        "{stdout}"
    );
    let tool_use = lines
        .iter()
        .position(|l| *l == "[tool_use] service_memory_put");
    let finished = lines.iter().position(|l| l.starts_with("[info] finished"));
    assert!(
        tool_use.is_some() && tool_use < finished,
        "progress in order, each once: {stdout}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("[tool_use]")).count(),
        1,
        "{stdout}"
    );

    let (code, stdout, stderr) = wasmind(
        &server,
        &keys[0],
        &["agents", "spawn", "--task", "hello", "--agent", "keeper"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let spawned: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        spawned["agent"]["name"], "keeper",
        "without --follow: the record"
    );
}

#[test]
fn failures_say_what_went_wrong_in_the_exit_status() {
    let options = Options::hash_embedder();
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let key = &keys[0];
    deploy(&server, key, PANICKER, "panicker");

    let spawn = [
        "agents", "spawn", "--agent", "panicker", "--task", "panic", "--follow",
    ];
    let (code, stdout, stderr) = wasmind(&server, key, &spawn);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stderr.starts_with("guest_trap: "), "{stderr}");

    let again = [
        "agent",
        "deploy",
        PANICKER,
        "--name",
        "panicker",
        "--version",
        "1.0.0",
    ];
    let (code, _, stderr) = wasmind(&server, key, &again);
    assert_ne!(code, 0);
    assert!(stderr.contains("component_exists: "), "{stderr}");

    let (code, _, stderr) = wasmind(&server, "wm_not_a_key", &spawn);
    assert_ne!(code, 0);
    assert!(stderr.contains("invalid_api_key: "), "{stderr}");

    let (code, _, stderr) = wasmind(
        &server,
        key,
        &["agents", "spawn", "--task", "x", "--agent", "nope"],
    );
    assert_ne!(code, 0);
    assert!(stderr.contains("component_not_found: "), "{stderr}");
}
