//! The wasmind home: the directory that holds what the binary uses but does not carry —
//! `models/` (the embedding model and ONNX Runtime, which `scripts/setup` fetches) and
//! `guest-sdk/` (the SDK a new agent crate depends on).
//!
//! One documented rule, whatever the working directory: `WASMIND_HOME` when set (the only
//! place then); otherwise every ancestor of the running binary that holds the entry sought,
//! nearest first (so `target/debug/wasmind` finds its checkout), then the working directory,
//! then a last place the caller knows of.

use std::path::{Path, PathBuf};

/// The homes to look for `entry` in, best first, for this process: `WASMIND_HOME` alone
/// when set, else the running binary's ancestors holding `entry`, the working directory,
/// and `last`.
pub fn homes(entry: &str, last: Option<&Path>) -> Vec<PathBuf> {
    let exe = std::env::current_exe().ok();
    homes_from(
        std::env::var_os("WASMIND_HOME").map(PathBuf::from),
        exe.as_deref(),
        std::env::current_dir().ok(),
        last,
        entry,
    )
}

/// [`homes`] for code this process loads (a library): never the working directory, where
/// whoever can write to it (or start wasmind from a directory of theirs) would choose what
/// runs, nor a last place.
pub fn code_homes(entry: &str) -> Vec<PathBuf> {
    let exe = std::env::current_exe().ok();
    homes_from(
        std::env::var_os("WASMIND_HOME").map(PathBuf::from),
        exe.as_deref(),
        None,
        None,
        entry,
    )
}

/// [`homes`], from what the process would read.
fn homes_from(
    home: Option<PathBuf>,
    exe: Option<&Path>,
    cwd: Option<PathBuf>,
    last: Option<&Path>,
    entry: &str,
) -> Vec<PathBuf> {
    if let Some(home) = home {
        return vec![home];
    }
    let mut found: Vec<PathBuf> = exe
        .into_iter()
        .flat_map(Path::ancestors)
        .skip(1)
        .filter(|dir| dir.join(entry).exists())
        .map(Path::to_path_buf)
        .collect();
    found.extend(cwd);
    found.extend(last.map(Path::to_path_buf));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test's working directory (the package's root) is a home of data, never of code.
    #[test]
    fn the_working_directory_is_a_home_of_data_not_of_code() {
        assert!(
            std::env::var_os("WASMIND_HOME").is_none(),
            "run without WASMIND_HOME"
        );
        let cwd = std::env::current_dir().unwrap();
        assert!(homes("models", None).contains(&cwd));
        assert!(!code_homes("models").contains(&cwd));
    }

    #[test]
    fn home_env_is_the_only_place_when_set() {
        let homes = homes_from(
            Some("/opt/wasmind".into()),
            Some(Path::new("/elsewhere/bin/wasmind")),
            Some("/tmp".into()),
            Some(Path::new("/built/here")),
            "models",
        );
        assert_eq!(homes, vec![PathBuf::from("/opt/wasmind")]);
    }

    #[test]
    fn binary_ancestors_holding_the_entry_come_before_the_cwd_and_the_last_place() {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("target/debug");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(root.path().join("models/m")).unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let last = Path::new("/built/here");
        let homes = homes_from(
            None,
            Some(&bin.join("wasmind")),
            Some(cwd.path().into()),
            Some(last),
            "models",
        );
        assert_eq!(
            homes,
            vec![root.path().into(), cwd.path().into(), last.to_path_buf()]
        );
        let none = homes_from(None, Some(&bin.join("wasmind")), None, None, "guest-sdk");
        assert!(none.is_empty(), "{none:?}");
    }
}
