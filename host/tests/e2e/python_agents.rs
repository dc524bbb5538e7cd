//! Agents written in Python: the Python notes agent (`examples/notes-agent-py`, on the SDK
//! of `sdks/python`) built from source by componentize-py in the test run, uploaded,
//! spawned and followed to its result; killed with -9 mid-run, it completes after the
//! restart with each memory write applied once (the journal does not care which language
//! made the calls); and `wasmind agent new --lang python`'s project, from a directory
//! outside the checkout: its pytest, its build line, deploy, spawn.
//!
//! componentize-py comes from the venv `scripts/setup-tests.d/45-python-agents` makes; a test
//! fails when it is missing. A build takes ~15 s of CPU and the host's compilation of the
//! ~18 MiB component far longer in this debug build, so the example is built once per
//! content (the SDK's and the example's sources, the WIT, componentize-py's version) into
//! `target/debug/e2e-python/`, where the other backend's pass finds it: the same bytes,
//! whose compiled artifact the shared artifact cache then holds too.

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
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
        server_with_keys,
    },
    durable::Setup,
};

/// The plan the tests' accounts are on: a Python component (~18 MiB) is over the free
/// plan's `component_max_bytes` (8 MiB).
const PLAN: &str = "liftoff";

/// The workspace's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .into()
}

/// The venv of `scripts/setup-tests.d/45-python-agents`, holding componentize-py and pytest.
fn venv() -> PathBuf {
    let venv = std::env::var_os("WASMIND_PY_AGENTS_VENV").map_or_else(
        || {
            let cache = std::env::var_os("XDG_CACHE_HOME").map_or_else(
                || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"),
                PathBuf::from,
            );
            cache.join("wasmind/python-agents-venv")
        },
        PathBuf::from,
    );
    for tool in ["bin/componentize-py", "bin/python"] {
        assert!(
            venv.join(tool).exists(),
            "{} is missing: run scripts/setup --tests (step 45-python-agents installs componentize-py \
             and pytest)",
            venv.join(tool).display()
        );
    }
    venv
}

/// Runs `command`; panics with its output unless it succeeds; returns its stdout.
#[track_caller]
fn run(command: &mut Command) -> String {
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

/// The `.py` files directly in `dir`, sorted.
fn python_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    files.sort();
    files
}

/// The Python notes agent's component, built by componentize-py from a copy of its
/// sources and the SDK's (componentize-py writes `__pycache__` beside what it reads, and
/// `examples/` is watched by the host's build script), once per content.
fn notes_agent_py() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let componentize = venv().join("bin/componentize-py");
        let version = run(Command::new(&componentize).arg("--version"));
        let wit = repo().join("guest-sdk/wit");
        let sdk = python_files(&repo().join("sdks/python/wasmind_sdk"));
        let example = repo().join("examples/notes-agent-py/notes_agent.py");
        let mut hash = Sha256::new();
        hash.update(&version);
        for file in sdk.iter().chain([&example, &wit.join("agent.wit")]) {
            hash.update(file.file_name().unwrap().as_encoded_bytes());
            hash.update(std::fs::read(file).unwrap());
        }
        let digest: String = (hash.finalize().iter().take(8))
            .map(|b| format!("{b:02x}"))
            .collect();
        let dir = binary().with_file_name("e2e-python").join(digest);
        let wasm = dir.join("notes_agent.wasm");
        if wasm.is_file() {
            return wasm;
        }
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("wasmind_sdk")).unwrap();
        for file in &sdk {
            std::fs::copy(
                file,
                src.join("wasmind_sdk").join(file.file_name().unwrap()),
            )
            .unwrap();
        }
        std::fs::copy(&example, src.join("notes_agent.py")).unwrap();
        let began = Instant::now();
        let partial = dir.join("notes_agent.wasm.partial");
        run(Command::new(&componentize)
            .arg("-d")
            .arg(&wit)
            .args(["-w", "agent", "componentize", "notes_agent", "-p"])
            .arg(&src)
            .arg("-o")
            .arg(&partial));
        std::fs::rename(&partial, &wasm).unwrap();
        eprintln!(
            "componentize-py built {} ({} bytes) in {:.1} s",
            wasm.display(),
            std::fs::metadata(&wasm).unwrap().len(),
            began.elapsed().as_secs_f64()
        );
        wasm
    })
}

/// Uploads the Python notes agent (saying how long the server took to compile it) and
/// spawns it on `task`, its memory `explicit` (no extraction's Mind call after the run);
/// its agent id.
fn spawn_notes_agent_py(c: &Client, task: &str) -> String {
    let path = notes_agent_py().to_str().unwrap();
    let began = Instant::now();
    let component = upload(c, path, "notes_agent_py", "0.1.0");
    eprintln!(
        "the server validated and compiled it in {:.1} s",
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

/// With the offline Mind: it plans, recalls, works, files its note — as the Rust notes
/// agent does.
#[test]
fn the_python_notes_agent_built_from_source_runs_to_its_result() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", PLAN)], &Options::hash_embedder());
    let c = server.client(&keys[0]);
    let id = spawn_notes_agent_py(&c, "Remember that the team offsite is in Porto");
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

/// Killed while it waits in its Mind call after its first write, the server restarted:
/// the agent replays its recorded calls (its plan, its search, its first write) and
/// completes, each write applied once, each answered Mind request sent once.
#[test]
fn a_python_agent_killed_mid_run_completes_after_the_restart_writing_once() {
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
    let id = spawn_notes_agent_py(&c, "When is the launch?");
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

/// `wasmind agent new --lang python` from a directory outside the checkout, with the
/// `wasmind` under test on the `PATH` and nothing telling it where the checkout is: it
/// finds the SDK from the binary's own place; the project's pytest passes, the build line
/// it prints makes the component, which deploys and, spawned and followed, runs to
/// completion on a real server, its own tool called by the Mind.
#[test]
fn agent_new_lang_python_tests_builds_deploys_and_spawns_from_outside_the_checkout() {
    let mind = FakeMind::start([
        Reply::tool_call("word_count", json!({ "text": "to be or not to be" })),
        Reply::text("It has 6 words."),
    ]);
    let options = Options::hash_embedder().openai_mind(&mind.base_url());
    let (_data, server, keys) = server_with_keys(&[("acme", PLAN)], &options);
    let outside = tempfile::tempdir().unwrap();
    let path = std::env::join_paths(
        [binary().parent().unwrap().to_path_buf(), venv().join("bin")]
            .into_iter()
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
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
        "wasmind agent new my_py_agent --lang python",
        outside.path(),
    );
    let sdk = std::fs::canonicalize(repo().join("sdks/python")).unwrap();
    assert!(
        said.contains(&format!(
            "It uses wasmind-sdk at {} (the SDK of the wasmind home).",
            sdk.display()
        )),
        "{said}"
    );
    let project = outside.path().join("my_py_agent");
    let tested = sh("python -m pytest -p no:cacheprovider", &project);
    assert!(tested.contains("2 passed"), "{tested}");
    let build = (said.lines().map(str::trim))
        .find(|l| l.starts_with("componentize-py "))
        .unwrap_or_else(|| panic!("no build line in:\n{said}"));
    let began = Instant::now();
    sh(build, &project);
    eprintln!(
        "componentize-py built my_py_agent in {:.1} s",
        began.elapsed().as_secs_f64()
    );
    sh(
        "wasmind agent deploy my_py_agent.wasm --name my_py_agent --version 0.1.0",
        &project,
    );
    let followed = sh(
        "wasmind agents spawn --agent my_py_agent --task 'Count the words of: to be or not to be' --follow",
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
