//! `agent new --lang typescript`: an ES module `NAME.js` (a `ToolLoop` agent with one tool
//! of its own, typed through the SDK's JSDoc: `// @ts-check` makes an editor's TypeScript
//! check it), its tests for `node --test` (one of them the replay check), a `package.json`
//! depending on the SDK by path (`file:`, so `npm install --offline` links it without a
//! registry), a README and a `.gitignore`; and the line that builds the component (the
//! SDK's `bin/build.js`: rolldown bundles, componentize-js makes the component).
//!
//! As the Python project, it uses the SDK by path (see [`LocalSdkProject`]).

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::{LocalSdkProject, Package, fill_templates, shell_word};

const AGENT_JS: &str = include_str!("../agent_template/typescript/agent.js.in");
const TEST_JS: &str = include_str!("../agent_template/typescript/agent.test.js.in");
const PACKAGE_JSON: &str = include_str!("../agent_template/typescript/package.json.in");
const README: &str = include_str!("../agent_template/typescript/README.md.in");
const GITIGNORE: &str = include_str!("../agent_template/typescript/gitignore.in");
/// The SDK's package file: a new project uses an SDK of the same version.
const SDK_PACKAGE: &str = include_str!("../../../../sdks/typescript/package.json");
/// The SDK, relative to a wasmind home.
const SDK_DIR: &str = "sdks/typescript";

/// Writes the project `name` into `dir` on the SDK at `sdk_path` (else the home's) and
/// says what to do next.
pub fn run(dir: &Path, name: &str, sdk_path: Option<&Path>) -> anyhow::Result<()> {
    let project = LocalSdkProject {
        lang: "TypeScript",
        package: "@wasmind/agent-sdk",
        sdk: (SDK_DIR, "bin/build.js", "the TypeScript SDK"),
        version: sdk_version()?,
        home: home_sdk,
        files,
        build: build_line,
        test: "npm install --offline && node --test",
    };
    project.write(dir, name, sdk_path)
}

/// The project's files for the agent `name` on the SDK at `sdk`, built by `build`.
fn files(name: &str, sdk: &Path, build: &str) -> Vec<(String, String)> {
    let sdk = sdk.display().to_string();
    let json = |text: &str| serde_json::to_string(text).expect("a string serializes");
    let (sdk_json, build_json) = (json(&format!("file:{sdk}")), json(build));
    let templates = [
        (format!("{name}.js"), AGENT_JS),
        (format!("{name}.test.js"), TEST_JS),
        ("package.json".to_owned(), PACKAGE_JSON),
        ("README.md".to_owned(), README),
        (".gitignore".to_owned(), GITIGNORE),
    ];
    let vars = [
        ("name", name),
        ("sdk_json", &sdk_json),
        ("build_json", &build_json),
        ("sdk", &sdk),
        ("build", build),
    ];
    fill_templates(&templates, &vars)
}

/// The one command that builds `name.wasm` from the module `name.js` in the working
/// directory: the SDK's build, with the WIT the SDK carries (the Rust SDK's, linked).
fn build_line(name: &str, sdk: &Path) -> String {
    let build = shell_word(&sdk.join("bin/build.js"));
    format!("node {build} {name}.js -o {name}.wasm")
}

/// The `sdks/typescript/` of the first home whose SDK is `@wasmind/agent-sdk` at `version`.
fn home_sdk(homes: &[PathBuf], version: &str) -> Option<PathBuf> {
    super::home_sdk(homes, SDK_DIR, "package.json", version, |text| {
        serde_json::from_str(text).ok()
    })
}

/// The SDK's version, from its package file.
fn sdk_version() -> anyhow::Result<String> {
    let package: Package =
        serde_json::from_str(SDK_PACKAGE).context("reading the TypeScript SDK's package.json")?;
    Ok(package.version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::agent_new::{tests::finds_the_first_home_s_sdk_of_the_version, write_project};

    #[test]
    fn writes_a_module_its_tests_and_a_package_on_the_sdk_by_path() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("my_agent");
        let sdk = Path::new("/opt/wasmind's sdk");
        let build = build_line("my_agent", sdk);
        write_project(&dir, "my_agent", &files("my_agent", sdk, &build)).unwrap();

        let module = std::fs::read_to_string(dir.join("my_agent.js")).unwrap();
        assert!(
            module.contains("export function run(ctx, task)"),
            "{module}"
        );
        let test = std::fs::read_to_string(dir.join("my_agent.test.js")).unwrap();
        assert!(test.contains("from './my_agent.js'"), "{test}");
        let package: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("package.json")).unwrap())
                .unwrap();
        assert_eq!(
            package["dependencies"]["@wasmind/agent-sdk"],
            "file:/opt/wasmind's sdk"
        );
        assert_eq!(package["scripts"]["build"], build.as_str());
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        assert!(readme.contains(&build), "{readme}");
        for text in [&module, &test, &readme] {
            assert!(!text.contains("{name}") && !text.contains("{sdk"), "{text}");
        }
        assert_eq!(
            build,
            "node '/opt/wasmind'\\''s sdk/bin/build.js' my_agent.js -o my_agent.wasm"
        );
    }

    #[test]
    fn the_sdk_is_the_first_home_s_of_this_version() {
        let text =
            |version: &str| format!(r#"{{"name": "@wasmind/agent-sdk", "version": "{version}"}}"#);
        finds_the_first_home_s_sdk_of_the_version(SDK_DIR, "package.json", text, home_sdk);
        assert!(semver::Version::parse(&sdk_version().unwrap()).is_ok());
    }
}
