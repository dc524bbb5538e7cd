//! Agents written in Python: the Python notes agent (`examples/notes-agent-py`, on the SDK
//! of `sdks/python`) built from source by componentize-py in the test run, uploaded,
//! spawned and followed to its result; killed with -9 mid-run, it completes after the
//! restart with each memory write applied once; and `wasmind agent new --lang python`'s
//! project, from a directory outside the checkout: its pytest, its build line, deploy,
//! spawn (the scenarios of [`crate::external_agents`]). And an agent's `ctx.fetch` through
//! the egress door (`python_agents/fetch_agent.py`).
//!
//! componentize-py comes from the venv `scripts/setup-tests.d/45-python-agents` makes; a test
//! fails when it is missing. A build takes ~15 s of CPU and the host's compilation of the
//! ~18 MiB component far longer in this debug build, so the example is built once per
//! content (the SDK's and the example's sources, the WIT, componentize-py's version).

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

use crate::external_agents::{
    NewProject, assert_installed, built_once, cache_dir, fetches_through_the_egress_door,
    files_ending, repo, run, scenarios,
};

/// The venv of `scripts/setup-tests.d/45-python-agents`, holding componentize-py and pytest.
fn venv() -> PathBuf {
    let venv = cache_dir("WASMIND_PY_AGENTS_VENV", "python-agents-venv");
    let tools = [venv.join("bin/componentize-py"), venv.join("bin/python")];
    assert_installed(
        &tools,
        "45-python-agents installs componentize-py and pytest",
    );
    venv
}

/// The component of the agent module `module` (its `WitWorld`), built by componentize-py
/// from a copy of its source and the SDK's (componentize-py writes `__pycache__` beside
/// what it reads, and `examples/` holds the guests `guests/build.rs` builds) with the SDK's
/// WIT, once per content.
fn built(name: &str, module: &Path) -> PathBuf {
    let componentize = venv().join("bin/componentize-py");
    let version = run(Command::new(&componentize).arg("--version"));
    let wit = repo().join("sdks/python/wasmind_sdk/wit");
    let sdk = files_ending(&repo().join("sdks/python/wasmind_sdk"), ".py");
    let sources: Vec<PathBuf> = (sdk.iter().cloned())
        .chain([module.to_path_buf(), wit.join("python.wit")])
        .chain(files_ending(&wit.join("deps"), ".wit"))
        .collect();
    built_once("python", name, &version, &sources, |dir, out| {
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("wasmind_sdk")).unwrap();
        for file in &sdk {
            let copy = src.join("wasmind_sdk").join(file.file_name().unwrap());
            std::fs::copy(file, copy).unwrap();
        }
        std::fs::copy(module, src.join(format!("{name}.py"))).unwrap();
        run(Command::new(&componentize)
            .arg("-d")
            .arg(&wit)
            .args(["-w", "agent", "componentize", name, "-p"])
            .arg(&src)
            .arg("-o")
            .arg(out));
    })
}

/// The Python notes agent's component.
fn notes_agent_py() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        built(
            "notes_agent",
            &repo().join("examples/notes-agent-py/notes_agent.py"),
        )
    })
}

/// How `agent new --lang python`'s project is tested and built.
fn new_project() -> NewProject<'static> {
    NewProject {
        lang: "python",
        path: vec![venv().join("bin")],
        sdk: repo().join("sdks/python"),
        test: "python -m pytest -p no:cacheprovider",
        passed: "2 passed",
        build: "componentize-py ",
    }
}

scenarios!(notes_agent_py, "notes_agent_py", new_project, "my_py_agent");

/// An agent that calls `ctx.fetch` (`python_agents/fetch_agent.py`): the SDK sends it over
/// `wasi:http`, which the Python world imports, so it passes the host's egress door as a
/// Rust guest's request does; a refused one raises `FetchError` with the door's code.
#[test]
fn an_agent_fetches_through_the_egress_door() {
    let wasm = built(
        "fetch_agent",
        &repo().join("host/tests/e2e/python_agents/fetch_agent.py"),
    );
    fetches_through_the_egress_door(&wasm, "http_request_denied");
}
