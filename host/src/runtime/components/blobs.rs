//! The components' bytes on disk, content-addressed: `components/<sha256>.wasm` under the
//! data dir, one file for identical bytes whoever uploaded them. A file is written through
//! a temporary file, fsynced and renamed (and the directory fsynced) before the metadata
//! that names it commits, so an acknowledged upload survives a crash.

use std::{
    io,
    path::{Path, PathBuf},
};

use super::super::artifacts::write_atomically;

/// The directory of component bytes.
#[derive(Debug, Clone)]
pub struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    /// The bytes kept in `dir` (created on first write).
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
        }
    }

    fn path(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!("{sha256}.wasm"))
    }

    /// Stores `bytes` (of digest `sha256`) durably, unless a file has them already.
    pub fn put(&self, sha256: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self.path(sha256);
        if path.exists() {
            return Ok(());
        }
        write_atomically(&path, bytes)
    }

    /// The bytes of digest `sha256`.
    pub fn read(&self, sha256: &str) -> io::Result<Vec<u8>> {
        std::fs::read(self.path(sha256))
    }

    /// Removes the bytes of digest `sha256`, if there.
    pub fn remove(&self, sha256: &str) -> io::Result<()> {
        match std::fs::remove_file(self.path(sha256)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Removes every file no component references any more (`referenced` says which
    /// are): left by a crash between a file's write and its metadata's commit, or between
    /// a delete's commit and the file's removal. Returns how many went.
    pub fn sweep(&self, referenced: impl Fn(&str) -> io::Result<bool>) -> io::Result<usize> {
        let entries = match std::fs::read_dir(&self.dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            entries => entries?,
        };
        let mut removed = 0;
        for entry in entries {
            let path = entry?.path();
            let keep = match path.file_name().and_then(|n| n.to_str()) {
                Some(name) => match name.strip_suffix(".wasm") {
                    Some(sha256) => referenced(sha256)?,
                    // A temporary file of an interrupted write.
                    None => false,
                },
                None => false,
            };
            if !keep {
                std::fs::remove_file(&path)?;
                removed += 1;
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_stored_once_and_unreferenced_ones_swept() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::new(&dir.path().join("components"));
        assert_eq!(blobs.sweep(|_| Ok(false)).unwrap(), 0, "no directory yet");
        blobs.put("aa", b"one").unwrap();
        blobs.put("aa", b"ignored: same digest").unwrap();
        blobs.put("bb", b"two").unwrap();
        std::fs::write(dir.path().join("components/.tmpXYZ"), b"half").unwrap();
        assert_eq!(blobs.read("aa").unwrap(), b"one");
        assert_eq!(blobs.sweep(|sha| Ok(sha == "aa")).unwrap(), 2);
        assert_eq!(blobs.read("aa").unwrap(), b"one");
        assert!(blobs.read("bb").is_err());
        blobs.remove("aa").unwrap();
        blobs.remove("aa").unwrap();
        assert!(blobs.read("aa").is_err());
    }
}
