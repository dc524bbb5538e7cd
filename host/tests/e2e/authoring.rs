//! An agent's author's path, as the README walks it: the SDK packages on its own;
//! `wasmind agent new` writes a crate whose `cargo test` passes natively and which builds to
//! a component; deployed (`wasmind agent deploy`) and followed (`wasmind agents spawn
//! --follow`), that component runs to completion on a real server, its own tool called by
//! the Mind.
//!
//! The nested cargo runs offline (every crate they need is in the local cache after the
//! workspace's build) and build into `target/authoring`, so later runs reuse the build.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::json;

use crate::common::{
    Options, cli,
    fake_mind::{FakeMind, Reply},
    remote_cli, server_with_keys,
};

/// The workspace's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .into()
}

/// The workspace's pinned toolchain (which has the wasm32-wasip2 target the set-up
/// installs), from its `rust-toolchain.toml`.
fn toolchain() -> String {
    let text = std::fs::read_to_string(repo().join("rust-toolchain.toml")).unwrap();
    let pinned: toml::Value = toml::from_str(&text).unwrap();
    pinned["toolchain"]["channel"].as_str().unwrap().to_string()
}

/// `cargo ARGS` in `dir`, offline, with the pinned toolchain and a target dir under
/// `target/authoring/<target>`; panics with its output unless it succeeds.
#[track_caller]
fn cargo(dir: &Path, target: &str, args: &[&str]) -> String {
    let out = Command::new("cargo")
        .args(args)
        .arg("--offline")
        .current_dir(dir)
        .env("RUSTUP_TOOLCHAIN", toolchain())
        .env(
            "CARGO_TARGET_DIR",
            repo().join("target/authoring").join(target),
        )
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .output()
        .expect("running cargo");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "cargo {args:?} failed:\n{stdout}\n{stderr}"
    );
    format!("{stdout}{stderr}")
}

#[test]
fn the_sdk_packages_with_its_wit_and_licence() {
    let repo = repo();
    let crates = ["-p", "wasmind-rules", "-p", "wasmind-sdk"];
    cargo(
        &repo,
        "package",
        &[&["package", "--allow-dirty"][..], &crates].concat(),
    );
    let listed = cargo(
        &repo,
        "package",
        &["package", "--list", "--allow-dirty", "-p", "wasmind-sdk"],
    );
    for file in ["wit/agent.wit", "LICENSE", "README.md", "src/lib.rs"] {
        assert!(
            listed.lines().any(|l| l == file),
            "{file} not packaged:\n{listed}"
        );
    }
}

#[test]
fn a_new_agent_tests_builds_uploads_and_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my_agent");
    let sdk = repo().join("guest-sdk");
    let (ok, stdout, stderr) = cli(&[
        "agent",
        "new",
        "my_agent",
        "--path",
        dir.to_str().unwrap(),
        "--sdk-path",
        sdk.to_str().unwrap(),
    ]);
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("cargo test"), "{stdout}");

    let tested = cargo(&dir, "agent", &["test"]);
    assert!(
        tested.contains("counts_words_and_remembers ... ok"),
        "{tested}"
    );
    cargo(
        &dir,
        "agent",
        &["build", "--release", "--target", "wasm32-wasip2"],
    );
    let wasm = repo().join("target/authoring/agent/wasm32-wasip2/release/my_agent.wasm");

    let mind = FakeMind::start([
        Reply::tool_call("word_count", json!({ "text": "to be or not to be" })),
        Reply::text("It has 6 words."),
    ]);
    let options = Options::hash_embedder().openai_mind(&mind.base_url());
    let (_data, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let deploy = [
        "agent",
        "deploy",
        wasm.to_str().unwrap(),
        "--name",
        "my_agent",
        "--version",
        "0.1.0",
    ];
    let (code, stdout, stderr) = remote_cli(&server, &keys[0], &deploy);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let spawn = [
        "agents",
        "spawn",
        "--agent",
        "my_agent",
        "--follow",
        "--task",
        "Count the words of: to be or not to be",
    ];
    let (code, stdout, stderr) = remote_cli(&server, &keys[0], &spawn);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("[tool_use] word_count\n"), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("It has 6 words."), "{stdout}");
    let c = server.client(&keys[0]);
    let agents = c.get("/api/v1/agents").body;
    assert_eq!(agents["data"][0]["agent"]["name"], "my_agent", "{agents:#}");
    assert_eq!(mind.tool_messages(), ["6"]);
}
