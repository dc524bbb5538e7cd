//! `wasmind agent new NAME`: writes a ready agent crate — a `ToolLoop` agent with one tool
//! of its own, a native test against the SDK's test doubles, and the lines that build,
//! deploy and run it. The templates are embedded in the binary, so it works anywhere.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;

const CARGO_TOML: &str = include_str!("agent_template/Cargo.toml.in");
const LIB_RS: &str = include_str!("agent_template/lib.rs.in");
const README: &str = include_str!("agent_template/README.md.in");
const GITIGNORE: &str = include_str!("agent_template/gitignore.in");
/// The SDK's manifest: the version a new crate depends on is the SDK's own.
const SDK_MANIFEST: &str = include_str!("../../../guest-sdk/Cargo.toml");
/// Longest crate name accepted (cargo accepts more; a component's name should be short).
const MAX_NAME_CHARS: usize = 64;

/// `wasmind agent new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The crate's name, snake_case (e.g. `my_agent`); also the component's file name.
    pub name: String,
    /// Where to create the crate; default: `./NAME`. Must not exist yet.
    #[arg(long)]
    pub path: Option<PathBuf>,
    /// Depend on the SDK at this path instead of its published version (for working
    /// offline or on the SDK itself).
    #[arg(long)]
    pub sdk_path: Option<PathBuf>,
}

/// Writes the crate and says what to do next.
pub fn run(args: &NewArgs) -> anyhow::Result<()> {
    let dir = args
        .path
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    let sdk = match &args.sdk_path {
        Some(path) => {
            let path = std::fs::canonicalize(path)
                .with_context(|| format!("the SDK path {} does not exist", path.display()))?;
            if !path.join("Cargo.toml").is_file() {
                bail!("{} has no Cargo.toml: not the SDK's crate", path.display());
            }
            format!(
                "wasmind-sdk = {{ path = {:?} }}",
                path.display().to_string()
            )
        }
        None => format!("wasmind-sdk = \"{}\"", sdk_version()?),
    };
    write_crate(&dir, &args.name, &sdk)?;
    println!(
        "Created agent crate {name} in {dir}.\n  cd {dir} && cargo test\n  cargo build --release --target wasm32-wasip2\n  wasmind agent deploy target/wasm32-wasip2/release/{name}.wasm --name {name} --version 0.1.0",
        name = args.name,
        dir = dir.display()
    );
    Ok(())
}

/// Writes the crate `name` into `dir` (which must not exist), depending on the SDK by the
/// dependency line `sdk`.
fn write_crate(dir: &Path, name: &str, sdk: &str) -> anyhow::Result<()> {
    check_name(name)?;
    if dir.exists() {
        bail!(
            "{} already exists; choose another --path or remove it",
            dir.display()
        );
    }
    let fill = |template: &str| template.replace("{name}", name).replace("{sdk}", sdk);
    let files = [
        ("Cargo.toml", fill(CARGO_TOML)),
        ("src/lib.rs", fill(LIB_RS)),
        ("README.md", fill(README)),
        (".gitignore", fill(GITIGNORE)),
    ];
    std::fs::create_dir_all(dir.join("src"))
        .with_context(|| format!("creating {}", dir.display()))?;
    for (file, text) in files {
        let path = dir.join(file);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// A crate name: snake_case, so the crate, its library and its `.wasm` share one spelling.
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

/// The SDK's version, from its manifest.
fn sdk_version() -> anyhow::Result<String> {
    #[derive(serde::Deserialize)]
    struct Manifest {
        package: Package,
    }
    #[derive(serde::Deserialize)]
    struct Package {
        version: String,
    }
    let manifest: Manifest = toml::from_str(SDK_MANIFEST).context("reading the SDK's manifest")?;
    Ok(manifest.package.version)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn the_published_dependency_is_the_sdk_s_version() {
        let version = sdk_version().unwrap();
        assert!(semver::Version::parse(&version).is_ok(), "{version}");
    }
}
