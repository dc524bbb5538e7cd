//! Where the model and runtime files are, whatever the working directory.
//!
//! One documented rule: an explicit path (`[embedder] model_dir` / `onnxruntime`, env
//! `WASMIND_MODEL_DIR`) wins; otherwise the file is looked for under `models/` of the
//! wasmind home (`crate::home`): `WASMIND_HOME` when set, else the nearest ancestor of the
//! running binary holding `models/` (so `target/debug/wasmind` finds the checkout's
//! `models/` that `scripts/setup` fills), else — for model files only — the working
//! directory. The ONNX Runtime library is code this process loads and runs: it is never
//! taken from the working directory, where whoever can write to it (or start wasmind from a
//! directory of theirs) would choose what runs ([`library`]).

use std::path::{Path, PathBuf};

use super::{EmbedError, EmbedderConfig};

/// The directory `scripts/setup` fills, relative to the wasmind home.
const MODELS: &str = "models";
/// The ONNX Runtime library, relative to the home's `models/`.
pub(super) const ONNXRUNTIME: &str = "onnxruntime/libonnxruntime.so";

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

/// Resolves `explicit`, else finds `models/<relative>` in this process's homes.
pub(super) fn resolve(explicit: Option<&Path>, relative: &str) -> Result<PathBuf, EmbedError> {
    if let Some(path) = explicit {
        return Ok(path.to_path_buf());
    }
    find(&crate::home::homes(MODELS, None), relative)
}

/// [`resolve`] for a library to load: the working directory is no home of it.
pub(super) fn library(explicit: Option<&Path>, relative: &str) -> Result<PathBuf, EmbedError> {
    if let Some(path) = explicit {
        return Ok(path.to_path_buf());
    }
    find(&crate::home::code_homes(MODELS), relative)
}

/// The model directory of the configured kind (`default_dir` under the home's `models/`).
pub(super) fn model_dir(cfg: &EmbedderConfig, default_dir: &str) -> Result<PathBuf, EmbedError> {
    resolve(cfg.model_dir.as_deref(), default_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_home_holding_the_file_wins() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::create_dir_all(b.path().join("models/m")).unwrap();
        let homes = vec![a.path().to_path_buf(), b.path().to_path_buf()];
        assert_eq!(find(&homes, "m").unwrap(), b.path().join("models/m"));
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

    #[test]
    fn explicit_path_wins() {
        let got = resolve(Some(Path::new("/given/dir")), "anything").unwrap();
        assert_eq!(got, PathBuf::from("/given/dir"));
    }
}
