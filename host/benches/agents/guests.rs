//! The guest components the stop, CPU and HTTP measurements run: `spin`, `hostile` and
//! `fetch` (test guests of `tests/guests`) and `sleeper` (`sleeper_guest.rs`, parked in a
//! WASI sleep). They are found prebuilt or built with cargo into `target/bench-guests`.

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace().join("target"), PathBuf::from)
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    // Flags meant for the host build must not reach the guest build.
    for name in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
    ] {
        cmd.env_remove(name);
    }
    cmd.env("CARGO_PROFILE_RELEASE_DEBUG", "false");
    cmd
}

fn run(mut cmd: Command, what: &str) {
    eprintln!("building {what}: {cmd:?}");
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("running cargo: {e}"));
    assert!(status.success(), "building {what} failed ({status})");
}

/// `WASMIND_BENCH_SPIN`, else the test suite's build, else built here.
pub fn spin() -> PathBuf {
    test_guest("WASMIND_BENCH_SPIN", "guest-spin")
}

/// `WASMIND_BENCH_HOSTILE`, else the test suite's build, else built here.
pub fn hostile() -> PathBuf {
    test_guest("WASMIND_BENCH_HOSTILE", "guest-hostile")
}

/// The test guest `package` (`tests/guests`): the path in `env` if set, else the test
/// suite's build (`target/guests`), else built here.
fn test_guest(env: &str, package: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(env) {
        return PathBuf::from(path);
    }
    let file = format!("{}.wasm", package.replace('-', "_"));
    let tests_build = target_dir().join(format!("guests/{TARGET}/release/{file}"));
    if tests_build.is_file() {
        return tests_build;
    }
    build_test_guest(package)
}

/// `WASMIND_BENCH_FETCH`, else built here (always: the bench needs its `time` command,
/// which a test suite's older build may lack; cargo rebuilds only what changed).
pub fn fetch() -> PathBuf {
    std::env::var_os("WASMIND_BENCH_FETCH")
        .map_or_else(|| build_test_guest("guest-fetch"), PathBuf::from)
}

/// Builds the test guest `package` into `target/bench-guests`: its component.
fn build_test_guest(package: &str) -> PathBuf {
    let file = format!("{}.wasm", package.replace('-', "_"));
    let dir = target_dir().join("bench-guests");
    let mut cmd = cargo();
    cmd.current_dir(workspace())
        .args([
            "build",
            "--release",
            "--target",
            TARGET,
            "-p",
            package,
            "--target-dir",
        ])
        .arg(&dir);
    run(cmd, package);
    dir.join(format!("{TARGET}/release/{file}"))
}

/// `WASMIND_BENCH_SLEEPER`, else built from `sleeper_guest.rs` as a one-file crate in a
/// temp dir (its own workspace, with this workspace's lock file: offline, same versions).
pub fn sleeper() -> PathBuf {
    if let Some(path) = std::env::var_os("WASMIND_BENCH_SLEEPER") {
        return PathBuf::from(path);
    }
    let dir = target_dir().join("bench-guests");
    let crate_dir = dir.join("sleeper-src");
    std::fs::create_dir_all(crate_dir.join("src")).expect("sleeper crate dir");
    let manifest = format!(
        "[package]\nname = \"bench-sleeper\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n\
         [workspace]\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n\
         [dependencies]\nwasmind-sdk = {{ path = {:?} }}\n",
        workspace().join("guest-sdk").display().to_string()
    );
    write_if_changed(&crate_dir.join("Cargo.toml"), &manifest);
    write_if_changed(
        &crate_dir.join("src/lib.rs"),
        include_str!("sleeper_guest.rs"),
    );
    if !crate_dir.join("Cargo.lock").is_file() {
        std::fs::copy(workspace().join("Cargo.lock"), crate_dir.join("Cargo.lock"))
            .expect("copying Cargo.lock");
    }
    let mut cmd = cargo();
    cmd.current_dir(&crate_dir)
        .args([
            "build",
            "--offline",
            "--release",
            "--target",
            TARGET,
            "--target-dir",
        ])
        .arg(&dir);
    run(cmd, "the sleeper guest");
    dir.join(format!("{TARGET}/release/bench_sleeper.wasm"))
}

fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).expect("writing the sleeper crate");
    }
}
