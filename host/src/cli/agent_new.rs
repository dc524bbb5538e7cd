//! `wasmind agent new NAME [--lang rust|python|typescript]`: writes a ready agent project — a
//! `ToolLoop` agent with one tool of its own, a native test against the SDK's test doubles,
//! and the lines that build, deploy and run it. The templates are embedded in the binary,
//! so it works anywhere.
//!
//! A Rust crate depends on the SDK of the wasmind home (`crate::home`) by path when there
//! is one of the binary's own SDK version — the SDK is not on the registry yet, and a path
//! builds offline — else on the SDK's version from the registry; it says which. A Python
//! project: see [`python`]; a JavaScript / TypeScript one: see [`typescript`].

mod python;
mod typescript;

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

const CARGO_TOML: &str = include_str!("agent_template/Cargo.toml.in");
const LIB_RS: &str = include_str!("agent_template/lib.rs.in");
const README: &str = include_str!("agent_template/README.md.in");
const GITIGNORE: &str = include_str!("agent_template/gitignore.in");
/// The SDK's manifest: the version a new crate depends on is the SDK's own.
const SDK_MANIFEST: &str = include_str!("../../../guest-sdk/Cargo.toml");
/// The SDK's crate, relative to a wasmind home.
const SDK_DIR: &str = "guest-sdk";
/// The checkout this binary was built from: the last home looked in for the SDK (so a
/// binary `cargo install`ed from a checkout still finds it).
const BUILT_FROM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
/// Longest crate name accepted (cargo accepts more; a component's name should be short).
const MAX_NAME_CHARS: usize = 64;

/// `wasmind agent new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The project's name, snake_case (e.g. `my_agent`); also the component's file name
    /// (and, in Python, the agent's module).
    pub name: String,
    /// Where to create the project; default: `./NAME`. Must not exist yet.
    #[arg(long)]
    pub path: Option<PathBuf>,
    /// The agent's language.
    #[arg(long, value_enum, default_value_t = Lang::Rust)]
    pub lang: Lang,
    /// Depend on the SDK at this path (e.g. while working on the SDK itself); default: the
    /// wasmind home's `guest-sdk/` (Python: `sdks/python/`, TypeScript:
    /// `sdks/typescript/`), else for Rust the SDK's
    /// version from the registry.
    #[arg(long)]
    pub sdk_path: Option<PathBuf>,
}

/// The languages `agent new` writes an agent in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    /// A crate on `wasmind-sdk` (guest-sdk/), built with cargo for wasm32-wasip2.
    Rust,
    /// A module on the Python `wasmind-sdk` (sdks/python/), tested with pytest and built
    /// with componentize-py.
    Python,
    /// An ES module on `@wasmind/agent-sdk` (sdks/typescript/), tested with `node --test`
    /// and built with the SDK's build (rolldown, then componentize-js).
    Typescript,
}

/// Writes the project and says what to do next.
pub fn run(args: &NewArgs) -> anyhow::Result<()> {
    let dir = args
        .path
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    match args.lang {
        Lang::Python => return python::run(&dir, &args.name, args.sdk_path.as_deref()),
        Lang::Typescript => return typescript::run(&dir, &args.name, args.sdk_path.as_deref()),
        Lang::Rust => {}
    }
    let sdk = match &args.sdk_path {
        Some(path) => {
            let path = std::fs::canonicalize(path)
                .with_context(|| format!("the SDK path {} does not exist", path.display()))?;
            if !path.join("Cargo.toml").is_file() {
                bail!("{} has no Cargo.toml: not the SDK's crate", path.display());
            }
            Sdk::Path(path, "--sdk-path")
        }
        None => default_sdk(
            &crate::home::homes(SDK_DIR, Some(Path::new(BUILT_FROM))),
            &sdk_version()?,
        ),
    };
    write_crate(&dir, &args.name, &sdk.dependency())?;
    println!(
        "Created agent crate {name} in {dir}.\n{sdk}\n  cd {dir} && cargo test\n  cargo build --release --target wasm32-wasip2\n  wasmind agent deploy target/wasm32-wasip2/release/{name}.wasm --name {name} --version 0.1.0",
        name = args.name,
        dir = dir.display(),
        sdk = sdk.said(),
    );
    Ok(())
}

/// The SDK a new crate depends on.
#[derive(Debug, PartialEq)]
enum Sdk {
    /// A local crate, and why that one.
    Path(PathBuf, &'static str),
    /// This version, from the registry.
    Registry(String),
}

impl Sdk {
    /// The crate's dependency line.
    fn dependency(&self) -> String {
        match self {
            Sdk::Path(path, _) => format!(
                "wasmind-sdk = {{ path = {:?} }}",
                path.display().to_string()
            ),
            Sdk::Registry(version) => format!("wasmind-sdk = \"{version}\""),
        }
    }

    /// What the user is told about it.
    fn said(&self) -> String {
        match self {
            Sdk::Path(path, why) => {
                format!("It depends on wasmind-sdk at {} ({why}).", path.display())
            }
            Sdk::Registry(version) => format!(
                "It depends on wasmind-sdk {version} from the registry (no wasmind home holds guest-sdk/ of that version; set WASMIND_HOME to a checkout, or name one with --sdk-path)."
            ),
        }
    }
}

/// The SDK of the first home whose `guest-sdk/` is `wasmind-sdk` at `version` (another
/// version would not match this binary's host interfaces), else the registry's `version`.
fn default_sdk(homes: &[PathBuf], version: &str) -> Sdk {
    home_sdk(homes, SDK_DIR, "Cargo.toml", version, |text| {
        toml::from_str::<Manifest>(text).ok().map(|m| m.package)
    })
    .map_or_else(
        || Sdk::Registry(version.to_owned()),
        |dir| Sdk::Path(dir, "the SDK of the wasmind home"),
    )
}

/// `sdk_dir` in the first of `homes` whose `manifest` there names (read by `package`) the
/// package `wasmind-sdk` (or, in npm's spelling, `@wasmind/agent-sdk`) at `version`,
/// canonical.
fn home_sdk(
    homes: &[PathBuf],
    sdk_dir: &str,
    manifest: &str,
    version: &str,
    package: impl Fn(&str) -> Option<Package>,
) -> Option<PathBuf> {
    homes
        .iter()
        .map(|home| home.join(sdk_dir))
        .find(|dir| {
            std::fs::read_to_string(dir.join(manifest))
                .ok()
                .and_then(|text| package(&text))
                .is_some_and(|p| {
                    ["wasmind-sdk", "@wasmind/agent-sdk"].contains(&p.name.as_str())
                        && p.version == version
                })
        })
        .and_then(|dir| std::fs::canonicalize(dir).ok())
}

/// A project in a language whose SDK is on no registry (Python, TypeScript): it uses the
/// SDK by path, so it tests and builds offline — the one `--sdk-path` names, else the first
/// wasmind home's of this binary's SDK version; without either, `agent new` says how to
/// name one.
struct LocalSdkProject {
    /// The language, as said to the user.
    lang: &'static str,
    /// The SDK's package name.
    package: &'static str,
    /// The SDK relative to a wasmind home, a file any copy of it holds, and what it is.
    sdk: (&'static str, &'static str, &'static str),
    /// The SDK's version (this binary's).
    version: String,
    /// The SDK of the first of the homes whose SDK has the version.
    home: fn(&[PathBuf], &str) -> Option<PathBuf>,
    /// The project's files for the agent `name` on the SDK at a path, built by a line.
    files: fn(&str, &Path, &str) -> Vec<(String, String)>,
    /// The one command that builds `NAME.wasm` in the project's directory.
    build: fn(&str, &Path) -> String,
    /// The command that runs the project's tests.
    test: &'static str,
}

impl LocalSdkProject {
    /// Writes the project `name` into `dir` on the SDK at `sdk_path` (else the home's) and
    /// says what to do next.
    fn write(&self, dir: &Path, name: &str, sdk_path: Option<&Path>) -> anyhow::Result<()> {
        let (sdk, why) = self.sdk(sdk_path)?;
        let build = (self.build)(name, &sdk);
        write_project(dir, name, &(self.files)(name, &sdk, &build))?;
        println!(
            "Created {lang} agent {name} in {dir}.\nIt uses {package} at {sdk} ({why}).\n  cd {dir} && {test}\n  {build}\n  wasmind agent deploy {name}.wasm --name {name} --version 0.1.0",
            lang = self.lang,
            package = self.package,
            test = self.test,
            dir = dir.display(),
            sdk = sdk.display(),
        );
        Ok(())
    }

    /// The SDK, canonical, and why that one.
    fn sdk(&self, sdk_path: Option<&Path>) -> anyhow::Result<(PathBuf, &'static str)> {
        let (sdk_dir, marker, what) = self.sdk;
        if let Some(path) = sdk_path {
            let path = std::fs::canonicalize(path)
                .with_context(|| format!("the SDK path {} does not exist", path.display()))?;
            if !path.join(marker).is_file() {
                bail!(
                    "{} has no {marker}: not {what} ({sdk_dir} of a wasmind checkout)",
                    path.display()
                );
            }
            return Ok((path, "--sdk-path"));
        }
        let homes = crate::home::homes(sdk_dir, Some(Path::new(BUILT_FROM)));
        let sdk = (self.home)(&homes, &self.version).with_context(|| {
            format!(
                "no wasmind home holds {what} ({sdk_dir}/) of version {}; set WASMIND_HOME \
                 to a checkout, or name the SDK with --sdk-path",
                self.version
            )
        })?;
        Ok((sdk, "the SDK of the wasmind home"))
    }
}

/// Each `(file, template)` of `templates` with every `{var}` of `vars` filled in.
fn fill_templates(templates: &[(String, &str)], vars: &[(&str, &str)]) -> Vec<(String, String)> {
    let fill = |template: &str| {
        (vars.iter()).fold(template.to_owned(), |text, (var, value)| {
            text.replace(&format!("{{{var}}}"), value)
        })
    };
    (templates.iter())
        .map(|(file, template)| (file.clone(), fill(template)))
        .collect()
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

/// Writes the crate `name` into `dir` (which must not exist), depending on the SDK by the
/// dependency line `sdk`.
fn write_crate(dir: &Path, name: &str, sdk: &str) -> anyhow::Result<()> {
    let fill = |template: &str| template.replace("{name}", name).replace("{sdk}", sdk);
    let files = [
        ("Cargo.toml".to_owned(), fill(CARGO_TOML)),
        ("src/lib.rs".to_owned(), fill(LIB_RS)),
        ("README.md".to_owned(), fill(README)),
        (".gitignore".to_owned(), fill(GITIGNORE)),
    ];
    write_project(dir, name, &files)
}

/// Writes `files` (paths relative to `dir`, which must not exist) for the agent `name`.
fn write_project(dir: &Path, name: &str, files: &[(String, String)]) -> anyhow::Result<()> {
    check_name(name)?;
    if dir.exists() {
        bail!(
            "{} already exists; choose another --path or remove it",
            dir.display()
        );
    }
    for (file, text) in files {
        let path = dir.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// A project name: snake_case, so the crate (or Python module), its library and its
/// `.wasm` share one spelling.
fn check_name(name: &str) -> anyhow::Result<()> {
    let mut chars = name.chars();
    let starts = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !starts || !rest || name.len() > MAX_NAME_CHARS {
        bail!(
            "agent name {name:?} must be snake_case: a lowercase letter, then lowercase letters, digits or _ (at most {MAX_NAME_CHARS})"
        );
    }
    Ok(())
}

/// What is read of a crate's manifest.
#[derive(serde::Deserialize)]
struct Manifest {
    package: Package,
}

#[derive(serde::Deserialize)]
struct Package {
    name: String,
    version: String,
}

/// The SDK's version, from its manifest.
fn sdk_version() -> anyhow::Result<String> {
    let manifest: Manifest = toml::from_str(SDK_MANIFEST).context("reading the SDK's manifest")?;
    Ok(manifest.package.version)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lookup `home` (of a language's SDK at `sdk_dir`, its `manifest` written as
    /// `text(version)`) takes the first home whose SDK has the version, and none without.
    pub(super) fn finds_the_first_home_s_sdk_of_the_version(
        sdk_dir: &str,
        manifest: &str,
        text: impl Fn(&str) -> String,
        home: fn(&[PathBuf], &str) -> Option<PathBuf>,
    ) {
        let home_with = |version: &str| {
            let home = tempfile::tempdir().unwrap();
            let sdk = home.path().join(sdk_dir);
            std::fs::create_dir_all(&sdk).unwrap();
            std::fs::write(sdk.join(manifest), text(version)).unwrap();
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
        let expected = std::fs::canonicalize(right.path().join(sdk_dir)).unwrap();
        assert_eq!(home(&homes, "0.1.0"), Some(expected));
        assert_eq!(home(&homes[..2], "0.1.0"), None);
    }

    #[test]
    fn names_must_be_snake_case() {
        for good in ["my_agent", "a", "agent2"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "My_agent",
            "my-agent",
            "2agent",
            "_x",
            "a b",
            &"a".repeat(65),
        ] {
            let err = check_name(bad).unwrap_err().to_string();
            assert!(err.contains("snake_case"), "{bad}: {err}");
        }
    }

    #[test]
    fn writes_a_crate_depending_on_the_sdk_and_never_over_an_existing_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("my_agent");
        write_crate(&dir, "my_agent", "wasmind-sdk = \"0.1.0\"").unwrap();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(manifest.contains("name = \"my_agent\""), "{manifest}");
        assert!(manifest.contains("wasmind-sdk = \"0.1.0\""), "{manifest}");
        assert!(manifest.contains("[workspace]"), "{manifest}");
        assert!(
            !manifest.contains(".workspace"),
            "nothing inherited: {manifest}"
        );
        let lib = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
        assert!(lib.contains("export_agent!(run)"), "{lib}");
        assert!(!lib.contains("{name}") && !manifest.contains("{sdk}"));

        let err = write_crate(&dir, "my_agent", "x").unwrap_err().to_string();
        assert!(err.contains("already exists"), "{err}");
    }

    /// A home's `guest-sdk/` holding a crate `name` at `version`.
    fn home_with(name: &str, version: &str) -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        let sdk = home.path().join(SDK_DIR);
        std::fs::create_dir_all(&sdk).unwrap();
        let manifest = format!("[package]\nname = \"{name}\"\nversion = \"{version}\"\n");
        std::fs::write(sdk.join("Cargo.toml"), manifest).unwrap();
        home
    }

    #[test]
    fn the_sdk_is_the_first_home_s_of_this_version_else_the_registry_s() {
        let empty = tempfile::tempdir().unwrap();
        let other_version = home_with("wasmind-sdk", "9.9.9");
        let other_crate = home_with("not-the-sdk", "0.1.0");
        let right = home_with("wasmind-sdk", "0.1.0");
        let also_right = home_with("wasmind-sdk", "0.1.0");
        let homes: Vec<PathBuf> = [&empty, &other_version, &other_crate, &right, &also_right]
            .iter()
            .map(|h| h.path().to_path_buf())
            .collect();
        let sdk = default_sdk(&homes, "0.1.0");
        let expected = std::fs::canonicalize(right.path().join(SDK_DIR)).unwrap();
        assert_eq!(
            sdk,
            Sdk::Path(expected.clone(), "the SDK of the wasmind home")
        );
        assert_eq!(
            sdk.dependency(),
            format!(
                "wasmind-sdk = {{ path = {:?} }}",
                expected.display().to_string()
            )
        );
        assert!(
            sdk.said().contains(&expected.display().to_string()),
            "{}",
            sdk.said()
        );

        let registry = default_sdk(&homes[..3], "0.1.0");
        assert_eq!(registry, Sdk::Registry("0.1.0".into()));
        assert_eq!(registry.dependency(), "wasmind-sdk = \"0.1.0\"");
        assert!(
            registry.said().contains("from the registry"),
            "{}",
            registry.said()
        );
    }

    #[test]
    fn the_published_dependency_is_the_sdk_s_version() {
        let version = sdk_version().unwrap();
        assert!(semver::Version::parse(&version).is_ok(), "{version}");
    }
}
