//! The cache of compiled components: native code that wasmtime maps and runs as it is,
//! without checking it (its `deserialize` is `unsafe` for that reason). So only the
//! server's own compilations are ever loaded:
//!
//! - The directory must belong to the server's user and be writable by no one else; the
//!   server refuses to start otherwise. Anyone who could add a file there could have the
//!   server run their code (an artifact's name is computable: the component's digest and
//!   the engine's settings).
//! - Each artifact ends with an HMAC-SHA256 of its name and its code under the cache's
//!   key, [`KEY_FILE`] in the directory: 32 random bytes, the server's user's alone
//!   (0600), made by the first server that uses the directory. Servers sharing one
//!   directory (the end-to-end tests; nodes of one machine) share its key that way, so
//!   each loads what another compiled.
//! - An artifact whose tag does not match — planted, copied under another component's
//!   name, cut short, or written without the key (by an older server) — is refused with a
//!   warning and compiled again in its place. The bytes checked are the bytes loaded:
//!   read once, checked, and deserialized from memory, so nothing can swap the file
//!   between the check and the load.

use std::{
    io::ErrorKind,
    os::unix::fs::{DirBuilderExt, MetadataExt},
    path::{Path, PathBuf},
};

use anyhow::{Context, bail};
use aws_lc_rs::hmac;
use sha2::{Digest, Sha256};
use wasmtime::Engine;

use crate::private_file;

/// The cache's key, in its directory.
pub const KEY_FILE: &str = "artifacts.key";
/// Bytes of the key, and of the tag each artifact ends with.
const KEY_BYTES: usize = 32;
const TAG_BYTES: usize = 32;

/// An artifact directory checked at start, and its key.
pub struct Artifacts {
    dir: PathBuf,
    key: hmac::Key,
}

impl Artifacts {
    /// Opens `dir` (made owner-only if missing) and reads its key (made if missing).
    /// Refuses a directory or a key that is not the server's user's alone.
    pub fn open(dir: &Path) -> anyhow::Result<Self> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating the artifact cache {}", dir.display()))?;
        let meta = std::fs::metadata(dir)
            .with_context(|| format!("reading the artifact cache {}", dir.display()))?;
        owned_alone(dir, &meta, 0o022, "writable by its group or others", "go-w")?;
        let path = dir.join(KEY_FILE);
        let key = private_file::read_or_publish(&path, || {
            let mut key = vec![0; KEY_BYTES];
            rand::fill(key.as_mut_slice());
            Ok(key)
        })?;
        let meta = std::fs::metadata(&path)?;
        owned_alone(
            &path,
            &meta,
            0o077,
            "readable by its group or others",
            "go-rwx",
        )?;
        if key.len() != KEY_BYTES {
            bail!(
                "the artifact cache's key {} is not {KEY_BYTES} bytes long; remove it (and \
                 the artifacts it signed) to have a new one made",
                path.display()
            );
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            key: hmac::Key::new(hmac::HMAC_SHA256, &key),
        })
    }

    /// Where the artifact of the component with SHA-256 `digest` is cached: named by the
    /// content and the engine's settings, so an engine upgrade never loads a stale one.
    pub fn path(&self, engine: &Engine, digest: &[u8; 32]) -> PathBuf {
        let mut hasher = Sha256::new();
        hasher.update(digest);
        std::hash::Hash::hash(
            &engine.precompile_compatibility_hash(),
            &mut HashWriter(&mut hasher),
        );
        self.dir
            .join(format!("{}.cwasm", hex::encode(&hasher.finalize()[..16])))
    }

    /// The code of the artifact at `path`, checked: `None` when there is none, or when
    /// its tag does not match (refused, with a warning: it is to be compiled again).
    pub fn read(&self, path: &Path) -> std::io::Result<Option<Vec<u8>>> {
        let mut bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let Some(code) = bytes.len().checked_sub(TAG_BYTES) else {
            refused(path);
            return Ok(None);
        };
        let tag = bytes.split_off(code);
        match hmac::verify(&self.key, &signed(path, &bytes), &tag) {
            Ok(()) => Ok(Some(bytes)),
            Err(_) => {
                refused(path);
                Ok(None)
            }
        }
    }

    /// Keeps `code` at `path`, tagged, written whole (see [`write_atomically`]).
    pub fn write(&self, path: &Path, code: &[u8]) -> std::io::Result<()> {
        let tag = hmac::sign(&self.key, &signed(path, code));
        write_atomically(path, &[code, tag.as_ref()].concat())
    }
}

/// What an artifact's tag covers: its file name (so one component's artifact cannot
/// stand in for another's) and its code.
fn signed(path: &Path, code: &[u8]) -> Vec<u8> {
    let name = path.file_name().unwrap_or_default().as_encoded_bytes();
    [name, &b"\0"[..], code].concat()
}

fn refused(path: &Path) {
    tracing::warn!(
        artifact = %path.display(),
        "refused a compiled component whose tag does not match this cache's key (planted, \
         damaged, or written without the key); compiling it again"
    );
}

/// Refuses `path` unless the server's user owns it and none of `mode_bits` are set (else
/// it is `lax`, which `chmod {fix}` mends).
fn owned_alone(
    path: &Path,
    meta: &std::fs::Metadata,
    mode_bits: u32,
    lax: &str,
    fix: &str,
) -> anyhow::Result<()> {
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        bail!(
            "the artifact cache's {} belongs to uid {}, not to this server's user (uid {me}): \
             what is in it is run as native code, so it must be this user's alone; give it \
             to this user (chown) or use a directory of this user's",
            path.display(),
            meta.uid()
        );
    }
    if meta.mode() & mode_bits != 0 {
        bail!(
            "the artifact cache's {} is {lax} (mode {:o}): what is in it is run as native \
             code, so it must be this user's alone; `chmod {fix}` it",
            path.display(),
            meta.mode() & 0o7777
        );
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file of its own (concurrent writers of
/// the same path never mix) and a rename, so `path` is never seen half-written.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    std::fs::File::open(dir)?.sync_all()
}

/// Feeds `Hash` output into a SHA-256.
struct HashWriter<'a>(&'a mut Sha256);

impl std::hash::Hasher for HashWriter<'_> {
    fn finish(&self) -> u64 {
        0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn set_mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn only_code_tagged_under_the_key_for_its_name_is_read() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cache");
        let cache = Artifacts::open(&dir).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join(KEY_FILE)), 0o600);
        let (a, b) = (dir.join("a.cwasm"), dir.join("b.cwasm"));
        cache.write(&a, b"code of a").unwrap();
        cache.write(&b, b"code of b").unwrap();
        assert_eq!(cache.read(&a).unwrap().as_deref(), Some(&b"code of a"[..]));
        assert_eq!(cache.read(&dir.join("none.cwasm")).unwrap(), None);

        let shared = Artifacts::open(&dir).unwrap();
        assert_eq!(
            shared.read(&b).unwrap().as_deref(),
            Some(&b"code of b"[..]),
            "a server sharing the directory shares its key"
        );
        std::fs::copy(&b, &a).unwrap();
        assert_eq!(cache.read(&a).unwrap(), None, "b's artifact under a's name");
        cache.write(&a, b"code of a").unwrap();
        let mut tampered = std::fs::read(&a).unwrap();
        tampered[0] ^= 1;
        std::fs::write(&a, &tampered).unwrap();
        assert_eq!(cache.read(&a).unwrap(), None, "a changed byte");
        for planted in [&b"untagged native code, longer than a tag is"[..], b"short"] {
            std::fs::write(&a, planted).unwrap();
            assert_eq!(cache.read(&a).unwrap(), None);
        }
        let other = tempfile::tempdir().unwrap();
        let elsewhere = Artifacts::open(other.path()).unwrap();
        let copied = other.path().join("b.cwasm");
        std::fs::copy(&b, &copied).unwrap();
        assert_eq!(
            elsewhere.read(&copied).unwrap(),
            None,
            "another cache's key"
        );
    }

    #[test]
    fn a_directory_or_key_others_may_touch_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cache");
        Artifacts::open(&dir).unwrap();
        for mode in [0o777, 0o720, 0o702] {
            set_mode(&dir, mode);
            let err = Artifacts::open(&dir).err().unwrap().to_string();
            assert!(err.contains("writable by its group or others"), "{err}");
        }
        set_mode(&dir, 0o755);
        Artifacts::open(&dir).unwrap();
        set_mode(&dir.join(KEY_FILE), 0o640);
        let err = Artifacts::open(&dir).err().unwrap().to_string();
        assert!(err.contains("readable by its group or others"), "{err}");
        set_mode(&dir.join(KEY_FILE), 0o600);
        if rustix::process::geteuid().is_root() {
            std::os::unix::fs::chown(&dir, Some(65_534), None).unwrap();
        } else {
            // A directory of another user's: root's.
            std::fs::remove_dir_all(&dir).unwrap();
            std::os::unix::fs::symlink("/", &dir).unwrap();
        }
        let err = Artifacts::open(&dir).err().unwrap().to_string();
        assert!(err.contains("not to this server's user"), "{err}");
    }
}
