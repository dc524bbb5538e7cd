//! Where the model and runtime files are, whatever the working directory.
//!
//! One documented rule: an explicit path (`[embedder] model_dir` / `onnxruntime`, env
//! `WASMIND_MODEL_DIR`) wins; otherwise the file is looked for under `models/` of the
//! wasmind home, which is `WASMIND_HOME` when set, else the nearest ancestor of the running
//! binary holding `models/` (so `target/debug/wasmind` finds the checkout's `models/` that
//! `scripts/setup` fills), else — for model files only — the working directory. The ONNX
//! Runtime library is code this process loads and runs: it is never taken from the working
//! directory, where whoever can write to it (or start wasmind from a directory of theirs)
//! would choose what runs ([`library`]).

use std::path::{Path, PathBuf};

use super::{EmbedError, EmbedderConfig};

/// The directory `scripts/setup` fills, relative to the wasmind home.
const MODELS: &str = "models";
/// The ONNX Runtime library, relative to the home's `models/`.
pub(super) const ONNXRUNTIME: &str = "onnxruntime/libonnxruntime.so";

/// The homes to look in, best first: `home` alone when set, else every ancestor of `exe`
/// that holds `models/`, then `cwd`.
fn homes(home: Option<PathBuf>, exe: Option<&Path>, cwd: Option<PathBuf>) -> Vec<PathBuf> {
    if let Some(home) = home {
        return vec![home];
    }
    let mut found: Vec<PathBuf> = exe
        .into_iter()
        .flat_map(Path::ancestors)
        .skip(1)
        .filter(|dir| dir.join(MODELS).is_dir())
        .map(Path::to_path_buf)
        .collect();
    found.extend(cwd);
    found
}

/// The first `models/<relative>` that exists among `homes`, or an error listing every
/// place looked in.
fn find(homes: &[PathBuf], relative: &str) -> Result<PathBuf, EmbedError> {
    let candidates: Vec<PathBuf> = homes
        .iter()
        .map(|h| h.join(MODELS).join(relative))
        .collect();
    candidates
        .iter()
        .find(|c| c.exists())
        .cloned()
        .ok_or_else(|| EmbedError::NotFound {
            what: relative.to_owned(),
            looked: candidates,
        })
}

/// Where a process looks for its files.
struct Places {
    /// `WASMIND_HOME`.
    home: Option<PathBuf>,
    /// The running binary.
    exe: Option<PathBuf>,
    /// The working directory, for data only.
    cwd: Option<PathBuf>,
}

impl Places {
    fn of_this_process() -> Self {
        Self {
            home: std::env::var_os("WASMIND_HOME").map(PathBuf::from),
            exe: std::env::current_exe().ok(),
            cwd: std::env::current_dir().ok(),
        }
    }

    /// The places a library to load (code) is looked for: never the working directory.
    fn for_code(self) -> Self {
        Self { cwd: None, ..self }
    }

    /// `explicit`, else the first `models/<relative>` among the homes.
    fn find(self, explicit: Option<&Path>, relative: &str) -> Result<PathBuf, EmbedError> {
        if let Some(path) = explicit {
            return Ok(path.to_path_buf());
        }
        find(&homes(self.home, self.exe.as_deref(), self.cwd), relative)
    }
}

/// Resolves `explicit`, else finds `models/<relative>` in this process's homes.
pub(super) fn resolve(explicit: Option<&Path>, relative: &str) -> Result<PathBuf, EmbedError> {
    Places::of_this_process().find(explicit, relative)
}

/// [`resolve`] for a library to load: the working directory is no home of it.
pub(super) fn library(explicit: Option<&Path>, relative: &str) -> Result<PathBuf, EmbedError> {
    Places::of_this_process()
        .for_code()
        .find(explicit, relative)
}

/// The model directory of the configured kind (`default_dir` under the home's `models/`).
pub(super) fn model_dir(cfg: &EmbedderConfig, default_dir: &str) -> Result<PathBuf, EmbedError> {
    resolve(cfg.model_dir.as_deref(), default_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_env_is_the_only_place_when_set() {
        let homes = homes(
            Some("/opt/wasmind".into()),
            Some(Path::new("/elsewhere/bin/wasmind")),
            Some("/tmp".into()),
        );
        assert_eq!(homes, vec![PathBuf::from("/opt/wasmind")]);
    }

    #[test]
    fn binary_ancestors_holding_models_come_before_the_cwd() {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("target/debug");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(root.path().join("models/m")).unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let homes = homes(None, Some(&bin.join("wasmind")), Some(cwd.path().into()));
        assert_eq!(
            homes,
            vec![root.path().to_path_buf(), cwd.path().to_path_buf()]
        );
        assert_eq!(find(&homes, "m").unwrap(), root.path().join("models/m"));
    }

    #[test]
    fn not_found_names_every_place_looked_and_the_fix() {
        let homes = vec![PathBuf::from("/nowhere/a"), PathBuf::from("/nowhere/b")];
        let err = find(&homes, "all-MiniLM-L6-v2-int8")
            .unwrap_err()
            .to_string();
        for needle in [
            "/nowhere/a/models/all-MiniLM-L6-v2-int8",
            "/nowhere/b/models/all-MiniLM-L6-v2-int8",
            "scripts/setup",
            "WASMIND_HOME",
            "WASMIND_MODEL_DIR",
        ] {
            assert!(err.contains(needle), "{needle:?} not in {err}");
        }
    }

    /// A library planted under the working directory's `models/` is not loaded, though a
    /// model file there would be found.
    #[test]
    fn a_library_is_never_taken_from_the_working_directory() {
        let cwd = tempfile::tempdir().unwrap();
        let planted = cwd.path().join(MODELS).join(ONNXRUNTIME);
        std::fs::create_dir_all(planted.parent().unwrap()).unwrap();
        std::fs::write(&planted, b"not a library").unwrap();
        let places = || Places {
            home: None,
            exe: Some("/nowhere/bin/wasmind".into()),
            cwd: Some(cwd.path().into()),
        };
        assert_eq!(places().find(None, ONNXRUNTIME).unwrap(), planted);
        let err = (places().for_code().find(None, ONNXRUNTIME))
            .expect_err("a library from the working directory");
        assert!(matches!(err, EmbedError::NotFound { ref looked, .. } if looked.is_empty()));
        let given = Path::new("/opt/onnxruntime/libonnxruntime.so");
        let explicit = places().for_code().find(Some(given), ONNXRUNTIME);
        assert_eq!(explicit.unwrap(), given, "an explicit path stands");
    }

    #[test]
    fn explicit_path_wins() {
        let got = resolve(Some(Path::new("/given/dir")), "anything").unwrap();
        assert_eq!(got, PathBuf::from("/given/dir"));
    }
}
