//! `agent new --lang python`: a module `NAME.py` (a `ToolLoop` agent with one tool of its
//! own, exported with `export_agent`), its pytest tests (one of them the replay check), a
//! `pyproject.toml` whose pytest settings put the SDK on the path, a README and a
//! `.gitignore`; and the componentize-py line that builds the component.
//!
//! The project uses the Python SDK by path, as a Rust crate does (see [`LocalSdkProject`]).

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::{LocalSdkProject, Package, fill_templates, shell_word};

const AGENT_PY: &str = include_str!("../agent_template/python/agent.py.in");
const TEST_PY: &str = include_str!("../agent_template/python/test_agent.py.in");
const PYPROJECT: &str = include_str!("../agent_template/python/pyproject.toml.in");
const README: &str = include_str!("../agent_template/python/README.md.in");
const GITIGNORE: &str = include_str!("../agent_template/python/gitignore.in");
/// The SDK's project file: a new project uses an SDK of the same version.
const SDK_PYPROJECT: &str = include_str!("../../../../sdks/python/pyproject.toml");
/// The SDK, relative to a wasmind home.
const SDK_DIR: &str = "sdks/python";

/// What is read of a Python project file.
#[derive(serde::Deserialize)]
struct PyProject {
    project: Package,
}

/// Writes the project `name` into `dir` on the SDK at `sdk_path` (else the home's) and
/// says what to do next.
pub fn run(dir: &Path, name: &str, sdk_path: Option<&Path>) -> anyhow::Result<()> {
    let project = LocalSdkProject {
        lang: "Python",
        package: "wasmind-sdk",
        sdk: (SDK_DIR, "wasmind_sdk/__init__.py", "the Python SDK"),
        version: sdk_version()?,
        home: home_sdk,
        files,
        build: build_line,
        test: "pytest",
    };
    project.write(dir, name, sdk_path)
}

/// The project's files for the agent `name` on the SDK at `sdk`, built by `build`.
fn files(name: &str, sdk: &Path, build: &str) -> Vec<(String, String)> {
    let sdk = sdk.display().to_string();
    // A JSON string is a TOML basic string: the same quotes and escapes.
    let sdk_toml = serde_json::to_string(&sdk).expect("a string serializes");
    let templates = [
        (format!("{name}.py"), AGENT_PY),
        (format!("test_{name}.py"), TEST_PY),
        ("pyproject.toml".to_owned(), PYPROJECT),
        ("README.md".to_owned(), README),
        (".gitignore".to_owned(), GITIGNORE),
    ];
    let vars = [
        ("name", name),
        ("sdk_toml", &sdk_toml),
        ("sdk", &sdk),
        ("build", build),
    ];
    fill_templates(&templates, &vars)
}

/// The one command that builds `name.wasm` from the module `name` in the working
/// directory: componentize-py, with the WIT the SDK carries (the Rust SDK's, linked).
fn build_line(name: &str, sdk: &Path) -> String {
    let wit = shell_word(&sdk.join("wasmind_sdk/wit"));
    let sdk = shell_word(sdk);
    format!("componentize-py -d {wit} -w agent componentize {name} -p . -p {sdk} -o {name}.wasm")
}

/// The `sdks/python/` of the first home whose SDK is `wasmind-sdk` at `version`.
fn home_sdk(homes: &[PathBuf], version: &str) -> Option<PathBuf> {
    super::home_sdk(homes, SDK_DIR, "pyproject.toml", version, |text| {
        toml::from_str::<PyProject>(text).ok().map(|p| p.project)
    })
}

/// The SDK's version, from its project file.
fn sdk_version() -> anyhow::Result<String> {
    let pyproject: PyProject =
        toml::from_str(SDK_PYPROJECT).context("reading the Python SDK's pyproject.toml")?;
    Ok(pyproject.project.version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::agent_new::{tests::finds_the_first_home_s_sdk_of_the_version, write_project};

    #[test]
    fn writes_a_module_its_tests_and_a_pytest_path_to_the_sdk() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("my_agent");
        let sdk = Path::new("/opt/wasmind's sdk");
        let build = build_line("my_agent", sdk);
        write_project(&dir, "my_agent", &files("my_agent", sdk, &build)).unwrap();

        let module = std::fs::read_to_string(dir.join("my_agent.py")).unwrap();
        assert!(module.contains("WitWorld = export_agent(run)"), "{module}");
        let test = std::fs::read_to_string(dir.join("test_my_agent.py")).unwrap();
        assert!(test.contains("from my_agent import run"), "{test}");
        let pyproject: toml::Value =
            toml::from_str(&std::fs::read_to_string(dir.join("pyproject.toml")).unwrap()).unwrap();
        assert_eq!(
            pyproject["tool"]["pytest"]["ini_options"]["pythonpath"],
            toml::Value::Array(vec![".".into(), "/opt/wasmind's sdk".into()])
        );
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        assert!(readme.contains(&build), "{readme}");
        for text in [&module, &test, &readme] {
            assert!(!text.contains("{name}") && !text.contains("{sdk"), "{text}");
        }
        assert_eq!(
            build,
            "componentize-py -d '/opt/wasmind'\\''s sdk/wasmind_sdk/wit' -w agent componentize \
             my_agent -p . -p '/opt/wasmind'\\''s sdk' -o my_agent.wasm"
        );
    }

    #[test]
    fn the_sdk_is_the_first_home_s_of_this_version() {
        let text =
            |version: &str| format!("[project]\nname = \"wasmind-sdk\"\nversion = \"{version}\"\n");
        finds_the_first_home_s_sdk_of_the_version(SDK_DIR, "pyproject.toml", text, home_sdk);
        assert!(semver::Version::parse(&sdk_version().unwrap()).is_ok());
    }
}
