//! `agent new --lang python`: a module `NAME.py` (a `ToolLoop` agent with one tool of its
//! own, exported with `export_agent`), its pytest tests (one of them the replay check), a
//! `pyproject.toml` whose pytest settings put the SDK on the path, a README and a
//! `.gitignore`; and the componentize-py line that builds the component.
//!
//! The project uses the Python SDK by path, as a Rust crate does, so it tests and builds
//! offline: the one `--sdk-path` names, else the wasmind home's `sdks/python/` of this
//! binary's SDK version. The Python SDK is on no registry, so there is no fallback: without
//! either, `agent new` says how to name one.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::{BUILT_FROM, Package, write_project};

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
    let (sdk, why) = match sdk_path {
        Some(path) => {
            let path = std::fs::canonicalize(path)
                .with_context(|| format!("the SDK path {} does not exist", path.display()))?;
            if !path.join("wasmind_sdk/__init__.py").is_file() {
                bail!(
                    "{} has no wasmind_sdk/__init__.py: not the Python SDK (sdks/python of a \
                     wasmind checkout)",
                    path.display()
                );
            }
            (path, "--sdk-path")
        }
        None => {
            let homes = crate::home::homes(SDK_DIR, Some(Path::new(BUILT_FROM)));
            let sdk = home_sdk(&homes, &sdk_version()?).with_context(|| {
                format!(
                    "no wasmind home holds the Python SDK ({SDK_DIR}/) of version {}; set \
                     WASMIND_HOME to a checkout, or name the SDK with --sdk-path",
                    sdk_version().unwrap_or_default()
                )
            })?;
            (sdk, "the SDK of the wasmind home")
        }
    };
    let build = build_line(name, &sdk);
    write_project(dir, name, &files(name, &sdk, &build))?;
    println!(
        "Created Python agent {name} in {dir}.\nIt uses wasmind-sdk at {sdk} ({why}).\n  cd {dir} && pytest\n  {build}\n  wasmind agent deploy {name}.wasm --name {name} --version 0.1.0",
        dir = dir.display(),
        sdk = sdk.display(),
    );
    Ok(())
}

/// The project's files for the agent `name` on the SDK at `sdk`, built by `build`.
fn files(name: &str, sdk: &Path, build: &str) -> Vec<(String, String)> {
    let sdk_text = sdk.display().to_string();
    // A JSON string is a TOML basic string: the same quotes and escapes.
    let sdk_toml = serde_json::to_string(&sdk_text).expect("a string serializes");
    let fill = |template: &str| {
        template
            .replace("{name}", name)
            .replace("{sdk_toml}", &sdk_toml)
            .replace("{sdk}", &sdk_text)
            .replace("{build}", build)
    };
    vec![
        (format!("{name}.py"), fill(AGENT_PY)),
        (format!("test_{name}.py"), fill(TEST_PY)),
        ("pyproject.toml".to_owned(), fill(PYPROJECT)),
        ("README.md".to_owned(), fill(README)),
        (".gitignore".to_owned(), fill(GITIGNORE)),
    ]
}

/// The one command that builds `name.wasm` from the module `name` in the working
/// directory: componentize-py, with the WIT the SDK carries (the Rust SDK's, linked).
fn build_line(name: &str, sdk: &Path) -> String {
    let wit = shell_word(&sdk.join("wasmind_sdk/wit"));
    let sdk = shell_word(sdk);
    format!("componentize-py -d {wit} -w agent componentize {name} -p . -p {sdk} -o {name}.wasm")
}

/// `path` as one shell word: as it is when it holds nothing a shell would read, else in
/// single quotes.
fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+".contains(c);
    if text.chars().all(plain) {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The `sdks/python/` of the first home whose SDK is `wasmind-sdk` at `version`.
fn home_sdk(homes: &[PathBuf], version: &str) -> Option<PathBuf> {
    super::home_sdk(homes, SDK_DIR, "pyproject.toml", version, |p: PyProject| {
        p.project
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
        let home_with = |version: &str| {
            let home = tempfile::tempdir().unwrap();
            let sdk = home.path().join(SDK_DIR);
            std::fs::create_dir_all(&sdk).unwrap();
            let text = format!("[project]\nname = \"wasmind-sdk\"\nversion = \"{version}\"\n");
            std::fs::write(sdk.join("pyproject.toml"), text).unwrap();
            home
        };
        let (empty, other, right) = (
            tempfile::tempdir().unwrap(),
            home_with("9.9.9"),
            home_with("0.1.0"),
        );
        let homes: Vec<PathBuf> = [&empty, &other, &right]
            .iter()
            .map(|h| h.path().to_path_buf())
            .collect();
        let expected = std::fs::canonicalize(right.path().join(SDK_DIR)).unwrap();
        assert_eq!(home_sdk(&homes, "0.1.0"), Some(expected));
        assert_eq!(home_sdk(&homes[..2], "0.1.0"), None);
        assert!(semver::Version::parse(&sdk_version().unwrap()).is_ok());
    }
}
