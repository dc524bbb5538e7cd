//! An agent's author's path, as the README walks it ("Your own agent"): the SDK packages on
//! its own; the README's lines, run as written from outside the checkout, make a crate with
//! `wasmind agent new` whose `cargo test` passes natively and which builds to a component;
//! deployed (`wasmind agent deploy`) and followed (`wasmind agents spawn --follow`), that
//! component runs to completion on a real server, its own tool called by the Mind.
//!
//! The nested cargo runs offline (every crate they need is in the local cache after the
//! workspace's build) and keep their builds under `target/authoring`, so later runs reuse
//! them.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::json;

use crate::common::{
    Options, binary,
    fake_mind::{FakeMind, Reply},
    server_with_keys,
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

/// `command` as an author's shell would run it: with the set-up's pinned toolchain (which
/// has the wasm32-wasip2 target; outside the checkout no rust-toolchain.toml names it), and
/// without what the workspace's own build set in this test's environment (flags, a target,
/// the clippy wrapper `scripts/test` builds with).
fn as_an_author(command: &mut Command) -> &mut Command {
    command.env("RUSTUP_TOOLCHAIN", toolchain());
    for name in [
        "RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
    ] {
        command.env_remove(name);
    }
    command
}

/// `cargo ARGS` in `dir`, offline, as an author would, with a target dir under
/// `target/authoring/<target>`; panics with its output unless it succeeds.
#[track_caller]
fn cargo(dir: &Path, target: &str, args: &[&str]) -> String {
    let out = as_an_author(&mut Command::new("cargo"))
        .args(args)
        .arg("--offline")
        .current_dir(dir)
        .env(
            "CARGO_TARGET_DIR",
            repo().join("target/authoring").join(target),
        )
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

/// The README's lines for an agent of one's own: its `sh` block that makes `my_agent`.
fn readme_own_agent_lines() -> String {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    readme
        .split("```sh\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .find(|block| block.contains("wasmind agent new my_agent"))
        .expect("README.md has no sh block running `wasmind agent new my_agent`")
        .to_owned()
}

/// The README's lines, run as written by bash from a directory outside the checkout, with
/// the `wasmind` under test on the `PATH` and nothing telling it where the checkout is:
/// `agent new` finds the SDK from the binary's own place, so `cargo test` and the wasm
/// build work offline; the component deploys and runs to completion, its own tool called.
/// The reader's own values are put in: the server's address and the key ("your key").
#[test]
fn the_readme_s_own_agent_lines_work_from_outside_the_checkout() {
    let mind = FakeMind::start([
        Reply::tool_call("word_count", json!({ "text": "to be or not to be" })),
        Reply::text("It has 6 words."),
    ]);
    let options = Options::hash_embedder().openai_mind(&mind.base_url());
    let (_data, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let lines = readme_own_agent_lines();
    let script = lines
        .replace("http://127.0.0.1:8080", &server.base)
        .replace("wm_…", &keys[0]);
    assert!(
        script.contains(&server.base) && script.contains(&keys[0]),
        "the README's lines no longer set WASMIND_URL and WASMIND_API_KEY:\n{lines}"
    );

    let outside = tempfile::tempdir().unwrap();
    let bin_dir = binary().parent().unwrap().to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(bin_dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let out = as_an_author(&mut Command::new("bash"))
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(outside.path())
        .env("PATH", path)
        .env_remove("WASMIND_HOME")
        .env_remove("WASMIND_URL")
        .env_remove("WASMIND_API_KEY")
        // The crates cargo already holds.
        .env("CARGO_NET_OFFLINE", "true")
        // Intermediate artifacts kept across runs; the crate's own `target/` still holds
        // the component where the README's deploy line looks for it.
        .env(
            "CARGO_BUILD_BUILD_DIR",
            repo().join("target/authoring/readme"),
        )
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("running bash");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{script}\n{stdout}\n{stderr}");

    let sdk = std::fs::canonicalize(repo().join("guest-sdk")).unwrap();
    let said = format!(
        "It depends on wasmind-sdk at {} (the SDK of the wasmind home).",
        sdk.display()
    );
    assert!(stdout.contains(&said), "{stdout}");
    assert!(
        outside.path().join("my_agent/Cargo.toml").is_file(),
        "{stdout}"
    );
    assert!(
        stdout.contains("counts_words_and_remembers ... ok"),
        "{stdout}"
    );
    assert!(stdout.contains("[tool_use] word_count\n"), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("It has 6 words."), "{stdout}");
    let c = server.client(&keys[0]);
    let agents = c.get("/api/v1/agents").body;
    assert_eq!(agents["data"][0]["agent"]["name"], "my_agent", "{agents:#}");
    assert_eq!(mind.tool_messages(), ["6"]);
}
