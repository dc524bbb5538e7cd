//! Agents written in JavaScript / TypeScript: the notes agent of `examples/notes-agent-ts`
//! (on `@wasmind/agent-sdk`, `sdks/typescript`) built from source by the SDK's build
//! (rolldown, then componentize-js) in the test run, uploaded, spawned and followed to its
//! result; killed with -9 mid-run, it completes after the restart with each memory write
//! applied once; and `wasmind agent new --lang typescript`'s project, from a directory
//! outside the checkout: its `node --test`, its build line, deploy, spawn (the scenarios of
//! [`crate::external_agents`]). And an async agent's `fetch` through the egress door
//! (`typescript_agents/fetch_agent.js`).
//!
//! componentize-js comes from `sdks/typescript/node_modules`, which
//! `scripts/setup-tests.d/47-typescript-agents` installs; a test fails when it is missing.
//! A build takes ~20 s of CPU, so the example is built once per content (the SDK's and the
//! example's sources, the WIT, the lock file pinning componentize-js).

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

use serde_json::{Value, json};

use crate::{
    agents::wait_terminal,
    common::{Options, components::upload, origin::Origin, server_with_keys},
    external_agents::{
        NewProject, PLAN, assert_installed, built_once, files_ending, repo, run, scenarios,
    },
};

/// The SDK, its toolchain installed.
fn sdk() -> PathBuf {
    let sdk = repo().join("sdks/typescript");
    let toolchain = [
        sdk.join("node_modules/@bytecodealliance/componentize-js/package.json"),
        sdk.join("node_modules/rolldown/package.json"),
    ];
    assert_installed(&toolchain, "47-typescript-agents installs componentize-js");
    sdk
}

/// The component of the agent module `module` (its `run(ctx, task)`), built by the SDK's
/// `bin/build.js` (which reads the sources where they are and writes only its output),
/// once per content.
fn built(name: &str, module: &Path) -> PathBuf {
    let sdk = sdk();
    let lock = std::fs::read_to_string(sdk.join("package-lock.json")).unwrap();
    let sources: Vec<PathBuf> = files_ending(&sdk.join("src"), ".js")
        .into_iter()
        .chain([
            sdk.join("bin/build.js"),
            module.to_path_buf(),
            repo().join("guest-sdk/wit/agent.wit"),
        ])
        .collect();
    built_once("typescript", name, &lock, &sources, |_, out| {
        run(Command::new("node")
            .arg(sdk.join("bin/build.js"))
            .arg(module)
            .arg("-o")
            .arg(out));
    })
}

/// The notes agent's component.
fn notes_agent_ts() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        built(
            "notes_agent",
            &repo().join("examples/notes-agent-ts/notes_agent.js"),
        )
    })
}

/// How `agent new --lang typescript`'s project is tested (the SDK linked first) and built.
fn new_project() -> NewProject<'static> {
    NewProject {
        lang: "typescript",
        path: Vec::new(),
        sdk: sdk(),
        test: "npm install --offline --no-audit --no-fund --loglevel=error && node --test",
        passed: "# pass 2",
        build: "node ",
    }
}

scenarios!(notes_agent_ts, "notes_agent_ts", new_project, "my_ts_agent");

/// An agent that `await`s `fetch` (`typescript_agents/fetch_agent.js`): componentize-js's
/// fetch is `wasi:http`, so it passes the host's egress door as a Rust guest's request
/// does. An allowed origin answers, and the agent remembers the answer; an address the
/// door refuses fails the run with the refusal's words, and nothing reaches it.
#[test]
fn an_async_agent_fetches_through_the_egress_door() {
    let (origin, canary) = (Origin::start("127.0.0.2"), Origin::start("127.0.0.1"));
    // Both on the allowlist: the canary's address (loopback) is refused by the address
    // check; the origin's range is listed.
    let config = format!(
        "[egress]\nallow_ranges = [\"127.0.0.2/32\"]\nallow = [\n\
         {{ host = \"127.0.0.2\", ports = [{}], schemes = [\"http\"] }},\n\
         {{ host = \"127.0.0.1\", ports = [{}], schemes = [\"http\"] }},\n]\n",
        origin.port(),
        canary.port()
    );
    let options = Options {
        config: Some(config),
        ..Options::hash_embedder()
    };
    let (_tmp, server, keys) = server_with_keys(&[("acme", PLAN)], &options);
    let c = server.client(&keys[0]);
    let wasm = built(
        "fetch_agent",
        &repo().join("host/tests/e2e/typescript_agents/fetch_agent.js"),
    );
    let agent = upload(&c, wasm.to_str().unwrap(), "fetch_agent", "0.1.0");
    let spawn = |task: &str| {
        let body =
            json!({ "task": task, "agent": agent["component_id"], "memory_mode": "explicit" });
        let r = c.post("/api/v1/agents", &body);
        assert_eq!(r.status, 201, "{:#}", r.body);
        let id = r.body["agent_id"].as_str().unwrap().to_string();
        (wait_terminal(&c, &id), id)
    };

    let (done, _) = spawn(&origin.url("/hello"));
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["final_result"], "200 hello /hello");
    let kept = c.get("/api/v1/memory?key=fetched&namespace=web");
    assert_eq!(kept.body["value"], "hello /hello", "{:#}", kept.body);
    let seen = origin.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].idempotency_key.is_some(), "{seen:?}");

    let (done, id) = spawn(&canary.url("/secret"));
    assert_eq!(done["status"], "failed", "{done:#}");
    assert!(canary.requests().is_empty(), "a refused request was sent");
    // The door's refusal, in the agent's log: the rule and the URL.
    let logs = c.get(&format!("/api/v1/agents/{id}/logs?limit=1000")).body;
    let refused: Vec<&Value> = (logs["data"].as_array().unwrap().iter())
        .filter(|e| e["kind"] == "egress")
        .collect();
    assert_eq!(refused.len(), 1, "{logs:#}");
    assert_eq!(refused[0]["data"]["url"], canary.url("/secret"), "{logs:#}");
    assert_eq!(refused[0]["data"]["rule"], "address", "{logs:#}");
    // What the agent saw: fetch's promise rejected, and its run failed with that.
    let error = done["error"]["message"].as_str().unwrap();
    assert!(error.contains("NetworkError"), "{error}");
}
