//! Where the vector index lives on disk, and crash-safe replacement of its files.
//!
//! ```text
//! <dir>/manifest.json        {"seq": watermark, "dims": n} — written last by a checkpoint
//! <dir>/shards/<sha256>.vec  one file per account (name hashed: accounts may hold any bytes)
//! ```
//! Every file is replaced by writing `*.tmp`, fsyncing it and renaming it over the old one,
//! so a crash leaves either the old or the new version, never a torn one.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::memory::index::IndexError;

const MANIFEST: &str = "manifest.json";
const SHARDS: &str = "shards";
const SHARD_EXT: &str = "vec";
const TMP_EXT: &str = "tmp";

/// What the index as a whole durably holds.
#[derive(Serialize, Deserialize)]
pub(super) struct Manifest {
    /// Watermark: every oplog op up to here is in the shard files.
    pub(super) seq: u64,
    /// Embedding dimensions the shards were built with.
    pub(super) dims: usize,
}

/// Paths of one vector index directory.
pub(super) struct Layout {
    root: PathBuf,
    shards: PathBuf,
}

impl Layout {
    /// Creates the directories if needed and deletes temp files left by a crash.
    pub(super) fn open(root: &Path) -> io::Result<Layout> {
        let shards = root.join(SHARDS);
        fs::create_dir_all(&shards)?;
        for dir in [root, shards.as_path()] {
            for path in list(dir, TMP_EXT)? {
                fs::remove_file(path)?;
            }
        }
        Ok(Layout {
            root: root.to_path_buf(),
            shards,
        })
    }

    /// The durable watermark (0 before the first checkpoint). A manifest that is unreadable
    /// or was written for other dimensions is reported as [`IndexError::Corrupt`].
    pub(super) fn read_watermark(&self, dims: usize) -> Result<u64, IndexError> {
        let path = self.root.join(MANIFEST);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e.into()),
        };
        let corrupt = |reason: String| IndexError::Corrupt {
            path: path.clone(),
            reason,
        };
        let manifest: Manifest =
            serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
        if manifest.dims != dims {
            return Err(corrupt(format!(
                "built for {} dimensions, opened with {dims}",
                manifest.dims
            )));
        }
        Ok(manifest.seq)
    }

    /// Atomically replaces the manifest; durable when this returns.
    pub(super) fn write_manifest(&self, manifest: &Manifest) -> io::Result<()> {
        let bytes = serde_json::to_vec(manifest).map_err(io::Error::other)?;
        write_atomic(&self.root.join(MANIFEST), &bytes)?;
        sync_dir(&self.root)
    }

    /// Every shard file present.
    pub(super) fn shard_files(&self) -> io::Result<Vec<PathBuf>> {
        list(&self.shards, SHARD_EXT)
    }

    /// Atomically replaces an account's shard file. Durable only after [`Layout::sync_shards`].
    pub(super) fn write_shard(&self, account: &str, bytes: &[u8]) -> io::Result<()> {
        let name = hex::encode(Sha256::digest(account.as_bytes()));
        write_atomic(&self.shards.join(name).with_extension(SHARD_EXT), bytes)
    }

    /// Makes earlier shard renames durable.
    pub(super) fn sync_shards(&self) -> io::Result<()> {
        sync_dir(&self.shards)
    }

    /// Deletes every shard file.
    pub(super) fn remove_shards(&self) -> io::Result<()> {
        for path in self.shard_files()? {
            fs::remove_file(path)?;
        }
        self.sync_shards()
    }
}

fn list(dir: &Path, ext: &str) -> io::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == ext) {
            paths.push(path);
        }
    }
    Ok(paths)
}

fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension(TMP_EXT);
    let mut file = File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    fs::rename(&tmp, path)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}
