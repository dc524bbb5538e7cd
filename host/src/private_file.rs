//! Secret files made once and shared by every process that uses them (the console's
//! signing key in a data dir, the key of an artifact cache several servers share).
//! Whichever process needs one first makes it: the bytes are written to a private (0600)
//! temporary file beside its name and hard-linked to that name, which fails if the name
//! exists. So processes racing to make it all end up reading the one that won, never a
//! half-written file.

use std::{
    fs::OpenOptions,
    io::{ErrorKind, Write},
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
};

use anyhow::Context;
use rand::RngExt;

/// The bytes at `path`; when there is no such file, `make`'s, published there first
/// (unless another process published its own first: then those).
pub fn read_or_publish(
    path: &Path,
    make: impl FnOnce() -> anyhow::Result<Vec<u8>>,
) -> anyhow::Result<Vec<u8>> {
    match std::fs::read(path) {
        Ok(bytes) => return Ok(bytes),
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    }
    let bytes = make()?;
    let staging = staging_path(path);
    let written = write_private(&staging, &bytes).and_then(|()| {
        match std::fs::hard_link(&staging, path) {
            Ok(()) => Ok(()),
            // Another process published its own first: use that one.
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(e),
        }
    });
    let _ = std::fs::remove_file(&staging);
    written.with_context(|| format!("creating {}", path.display()))?;
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// A name beside `path` no other process picks.
fn staging_path(path: &Path) -> PathBuf {
    let unique: u64 = rand::rng().random();
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.{}.{unique:016x}", std::process::id()))
}

/// Writes `bytes` to a new file only the owner can read, durably.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn made_once_private_and_the_first_publisher_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        let first = read_or_publish(&path, || Ok(b"one".to_vec())).unwrap();
        assert_eq!(first, b"one");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = read_or_publish(&path, || panic!("made again")).unwrap();
        assert_eq!(again, b"one");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no staging file is left");
        let racers: Vec<Vec<u8>> = (0..8u8)
            .map(|n| {
                let path = dir.path().join("raced");
                std::thread::spawn(move || read_or_publish(&path, || Ok(vec![n; 64])).unwrap())
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect();
        assert!(racers.windows(2).all(|w| w[0] == w[1]), "{racers:?}");
    }
}
