//! For build scripts: compiles wasmind guest crates (agents written with `wasmind-sdk`) to
//! `wasm32-wasip2` components, the pattern of wasmtime's `crates/test-programs/artifacts`.
//!
//! The guests are built by a nested `cargo build --release --target wasm32-wasip2` in their
//! own target directory (`<target dir>/guests`, so the outer build's lock and flags are not
//! shared), with the flags that leak from the outer build removed from its environment.
//! Each artifact is checked to be a component, not a core module.
//!
//! ```no_run
//! // build.rs
//! let guests = wasmind_guest_build::Guests::from_env();
//! guests.rerun_if_changed(&["guest-sdk", "examples/default-agent"]);
//! let [agent] = guests.build(&["default-agent"]).try_into().unwrap();
//! println!("cargo:rustc-env=DEFAULT_AGENT_WASM={}", agent.display());
//! ```

use std::{
    env, fs,
    io::{self, Read},
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

/// The target guests are compiled for.
pub const TARGET: &str = "wasm32-wasip2";

/// The first 8 bytes of every component: `\0asm`, version 0x000d, layer 0x0001 (a core
/// module has version 0x0001, layer 0x0000), each little-endian.
pub const COMPONENT_PREAMBLE: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

/// Environment that the outer cargo passes to build scripts and that must not reach the
/// nested build: flags meant for the host target, the outer target/build dirs, and
/// clippy's wrapper (`cargo clippy` would otherwise lint, and re-key, the guest builds).
const LEAKY_ENV: &[&str] = &[
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET_DIR",
    "CARGO_BUILD_BUILD_DIR",
    "CARGO_BUILD_TARGET",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_LLVM_COV",
    "LLVM_PROFILE_FILE",
];

/// Builds guest crates of the workspace the build script belongs to.
#[derive(Debug, Clone)]
pub struct Guests {
    cargo: PathBuf,
    workspace_root: PathBuf,
    target_dir: PathBuf,
}

impl Guests {
    /// From the build script's environment: the cargo running it, its workspace, and
    /// `<target dir>/guests` (the target dir being the ancestor of `OUT_DIR` that holds
    /// cargo's `CACHEDIR.TAG`).
    ///
    /// # Panics
    ///
    /// Outside a build script (no `OUT_DIR`, `CARGO`, `CARGO_MANIFEST_DIR`).
    pub fn from_env() -> Self {
        let var = |name: &str| {
            env::var_os(name)
                .unwrap_or_else(|| panic!("{name} is not set: run me from a build script"))
        };
        let cargo = PathBuf::from(var("CARGO"));
        let out_dir = PathBuf::from(var("OUT_DIR"));
        let manifest_dir = PathBuf::from(var("CARGO_MANIFEST_DIR"));
        let workspace_root = locate_workspace(&cargo, &manifest_dir);
        let target_dir = out_dir
            .ancestors()
            .find(|dir| dir.join("CACHEDIR.TAG").is_file())
            .map_or_else(|| out_dir.join("guest-target"), |dir| dir.join("guests"));
        Self {
            cargo,
            workspace_root,
            target_dir,
        }
    }

    /// Where the guests' build lives.
    pub fn target_dir(&self) -> &Path {
        &self.target_dir
    }

    /// The guest crates in the subdirectories of `dir` (relative to the workspace root),
    /// sorted by name: each subdirectory holding a `Cargo.toml` is one.
    ///
    /// # Panics
    ///
    /// When `dir` cannot be read or a manifest names no package.
    pub fn crates_in(&self, dir_arg: &str) -> Vec<GuestCrate> {
        let dir = self.workspace_root.join(dir_arg);
        let entries =
            fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
        let mut crates: Vec<GuestCrate> = entries
            .map(|entry| entry.expect("a directory entry").path().join("Cargo.toml"))
            .filter(|manifest| manifest.is_file())
            .map(|manifest| {
                let dir_name = manifest
                    .parent()
                    .and_then(Path::file_name)
                    .expect("a crate directory");
                GuestCrate {
                    name: dir_name.to_string_lossy().replace('-', "_"),
                    package: package_name(&manifest),
                    dir: format!("{dir_arg}/{}", dir_name.to_string_lossy()),
                }
            })
            .collect();
        crates.sort_by(|a, b| a.name.cmp(&b.name));
        crates
    }

    /// Tells cargo to rerun the build script when anything under these paths (relative to
    /// the workspace root) changes, and when the lock file does.
    pub fn rerun_if_changed(&self, paths: &[&str]) {
        for path in paths.iter().copied().chain(["Cargo.lock"]) {
            let path = self.workspace_root.join(path);
            assert!(path.exists(), "{} does not exist", path.display());
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }

    /// Compiles `packages` (workspace members whose `crate-type` includes `cdylib`) in one
    /// cargo invocation, and returns each one's component, in order.
    ///
    /// # Panics
    ///
    /// When the build fails (its output is on the build script's stderr) or an artifact is
    /// not a component.
    pub fn build(&self, packages: &[&str]) -> Vec<PathBuf> {
        let mut cmd = Command::new(&self.cargo);
        cmd.current_dir(&self.workspace_root)
            .args(["build", "--release", "--target", TARGET, "--target-dir"])
            .arg(&self.target_dir)
            // Guests ship inside the host binary: no debug info.
            .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
            .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo")
            // Keep build-script stdout for cargo's directives alone.
            .stdout(Stdio::from(io::stderr()));
        for package in packages {
            cmd.args(["--package", package]);
        }
        for name in LEAKY_ENV {
            cmd.env_remove(name);
        }
        eprintln!("building guests: {cmd:?}");
        let status = cmd
            .status()
            .unwrap_or_else(|e| panic!("could not run {:?}: {e}", self.cargo));
        assert!(
            status.success(),
            "building the guest components failed ({status}); see the errors above. \
             Is the {TARGET} target installed? (`scripts/setup` adds it)"
        );
        packages
            .iter()
            .map(|package| {
                let wasm = self
                    .target_dir
                    .join(TARGET)
                    .join("release")
                    .join(format!("{}.wasm", package.replace('-', "_")));
                check_component(&wasm);
                wasm
            })
            .collect()
    }
}

/// A guest crate found by [`Guests::crates_in`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestCrate {
    /// Its directory's name in snake_case (`default_agent`), for constants and macros.
    pub name: String,
    /// Its package name (`default-agent`).
    pub package: String,
    /// Its directory relative to the workspace root (`examples/default-agent`).
    pub dir: String,
}

impl GuestCrate {
    /// What it is built from, for [`Guests::rerun_if_changed`]: its manifest and `src`.
    /// Not its whole directory, and not the directory it sits in, where other toolchains'
    /// runs write (`npm ci`'s `node_modules` beside a TypeScript example).
    pub fn sources(&self) -> [String; 2] {
        [
            format!("{}/Cargo.toml", self.dir),
            format!("{}/src", self.dir),
        ]
    }
}

/// The `name` of the `[package]` table of `manifest` (a line scan: our manifests write it
/// as `name = "…"`).
fn package_name(manifest: &Path) -> String {
    let text = fs::read_to_string(manifest)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", manifest.display()));
    let mut in_package = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package
            && let Some(value) = line.strip_prefix("name").map(str::trim_start)
            && let Some(value) = value.strip_prefix('=')
        {
            return value.trim().trim_matches('"').to_string();
        }
    }
    panic!("{} names no package", manifest.display())
}

/// The root of the workspace `manifest_dir` belongs to.
fn locate_workspace(cargo: &Path, manifest_dir: &Path) -> PathBuf {
    let output = Command::new(cargo)
        .current_dir(manifest_dir)
        .args(["locate-project", "--workspace", "--message-format", "plain"])
        .output()
        .unwrap_or_else(|e| panic!("could not run {cargo:?}: {e}"));
    assert!(
        output.status.success(),
        "cargo locate-project failed: {output:?}"
    );
    let manifest = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    manifest
        .parent()
        .expect("a manifest path has a parent")
        .to_path_buf()
}

/// Panics unless `wasm` starts with the component preamble.
fn check_component(wasm: &Path) {
    let mut head = [0u8; 8];
    fs::File::open(wasm)
        .and_then(|mut f| f.read_exact(&mut head))
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", wasm.display()));
    assert!(
        is_component(&head),
        "{} is not a component (starts with {head:02x?}); guests must be cdylib crates built for {TARGET}",
        wasm.display()
    );
}

/// Whether `bytes` begin with the component preamble ([`COMPONENT_PREAMBLE`]).
pub fn is_component(bytes: &[u8]) -> bool {
    bytes.starts_with(&COMPONENT_PREAMBLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_components_from_modules() {
        assert!(is_component(&COMPONENT_PREAMBLE));
        assert!(!is_component(b"\0asm\x01\0\0\0"));
        assert!(!is_component(b"\0asm"));
    }

    #[test]
    fn reads_the_package_name() {
        let dir = env::temp_dir().join(format!("wasmind-guest-build-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let manifest = dir.join("Cargo.toml");
        let text = "[workspace]\nname = \"no\"\n\n[package]\nversion = \"0.1.0\"\nname = \"guest-spin\"\n\n[lib]\nname = \"other\"\n";
        fs::write(&manifest, text).unwrap();
        assert_eq!(package_name(&manifest), "guest-spin");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_guest_is_watched_by_its_manifest_and_sources_only() {
        let root = env::temp_dir().join(format!("wasmind-guest-crates-{}", std::process::id()));
        let rust = root.join("examples/notes-agent");
        fs::create_dir_all(rust.join("src")).unwrap();
        fs::write(
            rust.join("Cargo.toml"),
            "[package]\nname = \"notes-agent\"\n",
        )
        .unwrap();
        fs::create_dir_all(root.join("examples/notes-agent-ts/node_modules")).unwrap();
        let guests = Guests {
            cargo: "cargo".into(),
            workspace_root: root.clone(),
            target_dir: root.join("target"),
        };
        let crates = guests.crates_in("examples");
        fs::remove_dir_all(&root).unwrap();
        assert_eq!(
            crates,
            [GuestCrate {
                name: "notes_agent".into(),
                package: "notes-agent".into(),
                dir: "examples/notes-agent".into(),
            }]
        );
        assert_eq!(
            crates[0].sources(),
            [
                "examples/notes-agent/Cargo.toml",
                "examples/notes-agent/src"
            ]
        );
    }
}
