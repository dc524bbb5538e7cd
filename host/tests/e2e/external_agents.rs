//! What the tests of agents made by a toolchain outside cargo share (`python_agents`,
//! `typescript_agents`): a component built once per content into `target/debug/e2e-LANG/`
//! (where the other backend's pass finds the same bytes, whose compiled artifact the shared
//! artifact cache then holds too), uploaded and spawned; and the three scenarios each
//! language runs — the notes agent followed to its result, killed with -9 mid-run and
//! completing after the restart with each write applied once (the journal does not care
//! which language made the calls), and `wasmind agent new --lang LANG`'s project from a
//! directory outside the checkout: its native tests, its build line, deploy, spawn. And
//! each language's fetch agent through the host's egress door.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::{
    agents::wait_terminal,
    common::{
        Client, Options, binary,
        components::upload,
        fake_mind::{FakeMind, Reply},
        origin::Origin,
        server_with_keys,
    },
    durable::Setup,
};

/// The plan the tests' accounts are on: a Python component (~18 MiB) or a JavaScript one
/// (~12 MiB) is over the free plan's `component_max_bytes` (8 MiB).
pub const PLAN: &str = "liftoff";

/// The workspace's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .into()
}

/// `~/.cache/wasmind/NAME` (under `XDG_CACHE_HOME` when set), or `$VAR` when set: where a
/// set-up step installs a toolchain.
pub fn cache_dir(var: &str, name: &str) -> PathBuf {
    std::env::var_os(var).map_or_else(
        || {
            let cache = std::env::var_os("XDG_CACHE_HOME").map_or_else(
                || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"),
                PathBuf::from,
            );
            cache.join("wasmind").join(name)
        },
        PathBuf::from,
    )
}

/// Panics, naming the set-up `step`, unless every one of `files` exists.
pub fn assert_installed(files: &[PathBuf], step: &str) {
    for file in files {
        assert!(
            file.exists(),
            "{} is missing: run scripts/setup --tests (step {step})",
            file.display()
        );
    }
}

/// Runs `command`; panics with its output unless it succeeds; returns its stdout.
#[track_caller]
pub fn run(command: &mut Command) -> String {
    let out = command.output().expect("starting the command");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "{command:?} failed:\n{stdout}\n{stderr}"
    );
    stdout.into_owned()
}

/// The files directly in `dir` whose name ends with `suffix`, sorted.
pub fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

/// The component `target/debug/e2e-LANG/HASH/NAME.wasm`, where HASH covers `toolchain`
/// (its version) and each of `sources` (name and bytes): when it is not there yet,
/// `build(dir, out)` makes it at `out` in that `dir`, and it is renamed into place whole.
pub fn built_once(
    lang: &str,
    name: &str,
    toolchain: &str,
    sources: &[PathBuf],
    build: impl FnOnce(&Path, &Path),
) -> PathBuf {
    let mut hash = Sha256::new();
    hash.update(toolchain);
    for file in sources {
        hash.update(file.file_name().unwrap().as_encoded_bytes());
        hash.update(std::fs::read(file).unwrap());
    }
    let digest: String = (hash.finalize().iter().take(8))
        .map(|b| format!("{b:02x}"))
        .collect();
    let dir = binary().with_file_name(format!("e2e-{lang}")).join(digest);
    let wasm = dir.join(format!("{name}.wasm"));
    if wasm.is_file() {
        return wasm;
    }
    std::fs::create_dir_all(&dir).unwrap();
    let partial = dir.join(format!("{name}.wasm.partial"));
    let began = Instant::now();
    build(&dir, &partial);
    std::fs::rename(&partial, &wasm).unwrap();
    eprintln!(
        "{lang}: built {} ({} bytes) in {:.1} s",
        wasm.display(),
        std::fs::metadata(&wasm).unwrap().len(),
        began.elapsed().as_secs_f64()
    );
    wasm
}

/// Uploads the component at `wasm` as `name` 0.1.0 (saying how long the server took to
/// compile it) and spawns it on `task`, its memory `explicit` (no extraction's Mind call
/// after the run); its agent id.
pub fn spawn_uploaded(c: &Client, wasm: &Path, name: &str, task: &str) -> String {
    let began = Instant::now();
    let component = upload(c, wasm.to_str().unwrap(), name, "0.1.0");
    eprintln!(
        "the server validated and compiled {name} in {:.1} s",
        began.elapsed().as_secs_f64()
    );
    let r = c.post(
        "/api/v1/agents",
        &json!({
            "task": task,
            "agent": component["component_id"],
            "memory_mode": "explicit",
        }),
    );
    assert_eq!(r.status, 201, "{:#}", r.body);
    r.body["agent_id"].as_str().unwrap().to_string()
}

/// The fetch agent of each language at `wasm` (its task a URL; it fetches it, remembers
/// the body under `fetched` in namespace `web` and answers `STATUS BODY`), through the
/// host's egress door: an allowed origin answers once, with an `Idempotency-Key`; an
/// address the door refuses fails the run with `refusal` in its error, its log has the
/// door's `egress` event, and nothing reaches it.
pub fn fetches_through_the_egress_door(wasm: &Path, refusal: &str) {
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
    // What the agent saw: its fetch failed, and its run failed with that.
    let error = done["error"]["message"].as_str().unwrap();
    assert!(error.contains(refusal), "{refusal:?} not in {error}");
}

/// The memories of `namespace`.
fn memories(c: &Client, namespace: &str) -> Vec<Value> {
    let listed = c
        .get(&format!("/api/v1/memory/list?namespace={namespace}"))
        .body;
    listed["data"].as_array().unwrap().clone()
}

/// The values of the versions of `key` in `namespace`, oldest first.
fn versions(c: &Client, namespace: &str, key: &str) -> Vec<Value> {
    let history = c
        .get(&format!(
            "/api/v1/memory/history?key={key}&namespace={namespace}"
        ))
        .body;
    let mut values: Vec<Value> = (history["data"].as_array().unwrap().iter())
        .map(|m| m["value"].clone())
        .collect();
    values.reverse();
    values
}

/// With the offline Mind, the notes agent `spawn` uploads and spawns plans, recalls,
/// works, files its note — as the Rust notes agent does.
pub fn notes_agent_runs_to_its_result(spawn: impl Fn(&Client, &str) -> String) {
    let (_tmp, server, keys) = server_with_keys(&[("acme", PLAN)], &Options::hash_embedder());
    let c = server.client(&keys[0]);
    let id = spawn(&c, "Remember that the team offsite is in Porto");
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    let progress: Vec<&str> = (done["progress"].as_array().unwrap().iter())
        .map(|p| p["message"].as_str().unwrap())
        .collect();
    assert_eq!(progress[0], "planning", "{done:#}");
    assert!(
        progress
            .iter()
            .any(|m| m.starts_with("filed note note_remember_that_the_team_offsite")),
        "{done:#}"
    );
    let notes = memories(&c, "notes");
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(notes[0]["value"].as_str().unwrap().contains("Porto"));
    assert_eq!(notes[0]["tags"], json!(["note"]));
}

/// The notes agent `spawn` uploads and spawns, killed while it waits in its Mind call
/// after its first write, the server restarted: it replays its recorded calls (its plan,
/// its search, its first write) and completes, each write applied once, each answered Mind
/// request sent once.
pub fn notes_agent_killed_mid_run_completes_writing_once(spawn: impl Fn(&Client, &str) -> String) {
    let mind = FakeMind::start([
        Reply::text("1. Note the day\n2. Correct it"),
        Reply::tool_call(
            "service_memory_put",
            json!({ "key": "launch_day", "value": "Friday" }),
        ),
        Reply::Hang,
        Reply::tool_call(
            "service_memory_put",
            json!({ "key": "launch_day", "value": "Saturday" }),
        ),
        Reply::text("The launch is on Saturday."),
    ]);
    let setup = Setup::with(&mind, PLAN, None);
    let (mut server, c) = setup.start();
    let id = spawn(&c, "When is the launch?");
    assert!(mind.wait_for_requests(3, Duration::from_secs(60)));
    assert_eq!(versions(&c, "default", "launch_day"), [json!("Friday")]);
    server.kill9();

    let (_server, c) = setup.start();
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["final_result"], "The launch is on Saturday.");
    let resumed = (done["progress"].as_array().unwrap().iter())
        .filter(|p| p["kind"] == "resumed")
        .count();
    assert_eq!(resumed, 1, "{done:#}");
    assert_eq!(
        versions(&c, "default", "launch_day"),
        [json!("Friday"), json!("Saturday")]
    );
    let notes = memories(&c, "notes");
    assert_eq!(notes.len(), 1, "{notes:#?}");
    let key = notes[0]["key"].as_str().unwrap();
    assert_eq!(versions(&c, "notes", key).len(), 1, "the note filed once");
    let requests = mind.requests();
    assert_eq!(requests.len(), 5, "the hung request sent again, no other");
    assert_eq!(requests[2], requests[3]);
}

/// The three scenarios' tests, in the module of a language: `$wasm` is its notes agent's
/// component (`fn() -> &'static Path`), uploaded as `$name`; `$new_project` makes the
/// [`NewProject`] its `agent new` test drives (`fn() -> NewProject<'static>`), for the
/// project `$project`.
macro_rules! scenarios {
    ($wasm:expr, $name:literal, $new_project:expr, $project:literal) => {
        fn spawn_notes_agent(c: &$crate::common::Client, task: &str) -> String {
            $crate::external_agents::spawn_uploaded(c, $wasm(), $name, task)
        }

        #[test]
        fn the_notes_agent_built_from_source_runs_to_its_result() {
            $crate::external_agents::notes_agent_runs_to_its_result(spawn_notes_agent);
        }

        #[test]
        fn killed_mid_run_it_completes_after_the_restart_writing_once() {
            $crate::external_agents::notes_agent_killed_mid_run_completes_writing_once(
                spawn_notes_agent,
            );
        }

        #[test]
        fn agent_new_tests_builds_deploys_and_spawns_from_outside_the_checkout() {
            $crate::external_agents::agent_new_tests_builds_deploys_and_spawns(
                $project,
                $new_project(),
            );
        }
    };
}
pub(crate) use scenarios;

/// How a language's `agent new` project is driven.
pub struct NewProject<'a> {
    /// `--lang`.
    pub lang: &'a str,
    /// Directories put first on the `PATH` after the binary's (the toolchain's).
    pub path: Vec<PathBuf>,
    /// The SDK `agent new` must say it uses (the checkout's, found from the binary).
    pub sdk: PathBuf,
    /// The project's native tests, and what their output says when both passed.
    pub test: &'a str,
    pub passed: &'a str,
    /// How the build line `agent new` prints starts.
    pub build: &'a str,
}

/// `wasmind agent new NAME --lang LANG` from a directory outside the checkout, with the
/// `wasmind` under test on the `PATH` and nothing telling it where the checkout is: it
/// finds the SDK from the binary's own place; the project's tests pass, the build line it
/// prints makes the component, which deploys and, spawned and followed, runs to completion
/// on a real server, its own tool called by the Mind.
pub fn agent_new_tests_builds_deploys_and_spawns(name: &str, p: NewProject) {
    let mind = FakeMind::start([
        Reply::tool_call("word_count", json!({ "text": "to be or not to be" })),
        Reply::text("It has 6 words."),
    ]);
    let options = Options::hash_embedder().openai_mind(&mind.base_url());
    let (_data, server, keys) = server_with_keys(&[("acme", PLAN)], &options);
    let outside = tempfile::tempdir().unwrap();
    let path = std::env::join_paths(
        [binary().parent().unwrap().to_path_buf()]
            .into_iter()
            .chain(p.path)
            .chain(std::env::split_paths(
                &std::env::var_os("PATH").unwrap_or_default(),
            )),
    )
    .unwrap();
    let sh = |script: &str, dir: &Path| {
        run(Command::new("bash")
            .args(["-euo", "pipefail", "-c", script])
            .current_dir(dir)
            .env("PATH", &path)
            .env("WASMIND_URL", &server.base)
            .env("WASMIND_API_KEY", &keys[0])
            .env_remove("WASMIND_HOME"))
    };

    let said = sh(
        &format!("wasmind agent new {name} --lang {}", p.lang),
        outside.path(),
    );
    let sdk = std::fs::canonicalize(&p.sdk).unwrap();
    assert!(
        said.contains(&format!(
            " at {} (the SDK of the wasmind home).",
            sdk.display()
        )),
        "{said}"
    );
    let project = outside.path().join(name);
    let tested = sh(p.test, &project);
    assert!(tested.contains(p.passed), "{tested}");
    let build = (said.lines().map(str::trim))
        .find(|l| l.starts_with(p.build))
        .unwrap_or_else(|| panic!("no build line in:\n{said}"));
    let began = Instant::now();
    sh(build, &project);
    eprintln!(
        "{}: built {name} in {:.1} s",
        p.lang,
        began.elapsed().as_secs_f64()
    );
    sh(
        &format!("wasmind agent deploy {name}.wasm --name {name} --version 0.1.0"),
        &project,
    );
    let followed = sh(
        &format!(
            "wasmind agents spawn --agent {name} --task 'Count the words of: to be or not to be' --follow"
        ),
        &project,
    );
    assert!(followed.contains("[tool_use] word_count\n"), "{followed}");
    assert_eq!(
        followed.lines().last(),
        Some("It has 6 words."),
        "{followed}"
    );
    assert_eq!(mind.tool_messages(), ["6"]);
}
