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

use crate::external_agents::{
    NewProject, assert_installed, built_once, fetches_through_the_egress_door, files_ending, repo,
    run, scenarios,
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
/// does; a refused one rejects its promise with a `NetworkError`.
#[test]
fn an_async_agent_fetches_through_the_egress_door() {
    let wasm = built(
        "fetch_agent",
        &repo().join("host/tests/e2e/typescript_agents/fetch_agent.js"),
    );
    fetches_through_the_egress_door(&wasm, "NetworkError");
}
