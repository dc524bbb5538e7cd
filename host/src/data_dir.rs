//! The data directory: one redb database (the source of truth for accounts, keys and
//! memories) plus derived index folders. An exclusive lock file makes a second process
//! (a second server, or a CLI command that could not reach the running server's admin
//! socket) fail at once instead of hanging or corrupting the indexes.
//!
//! Every tenant's memories are in it, so it is the owner's alone whatever the umask the
//! process was started with: opening it sets the process's umask to 077 (the database, the
//! indexes, the cache, the components and the admin socket are created 0600 / 0700), and
//! takes group and other access off what an earlier, laxer process left in it.

use std::{
    fs::{File, Permissions},
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Instant,
};

use anyhow::{Context, bail};
use redb::Database;

/// An opened, locked data directory. The lock is held until this value is dropped.
#[derive(Debug)]
pub struct DataDir {
    path: PathBuf,
    db: Arc<Database>,
    _lock: File,
}

impl DataDir {
    /// Creates the directory if needed, takes the lock and opens the database.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let _ = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
        std::fs::create_dir_all(path)
            .with_context(|| format!("creating data dir {}", path.display()))?;
        owner_only(path).with_context(|| format!("restricting data dir {}", path.display()))?;
        let lock_path = path.join("wasmind.lock");
        let lock = File::create(&lock_path)
            .with_context(|| format!("creating lock file {}", lock_path.display()))?;
        if lock.try_lock().is_err() {
            bail!(
                "data dir {} is in use by another wasmind process (a running server?); \
                 stop it first, or use another --data-dir",
                path.display()
            );
        }
        let db_path = path.join("wasmind.redb");
        let db = open_database(&db_path)
            .with_context(|| format!("opening database {}", db_path.display()))?;
        Ok(Self {
            path: path.to_path_buf(),
            db: Arc::new(db),
            _lock: lock,
        })
    }

    /// The directory itself (files kept beside the database, such as the console key).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The shared database handle.
    pub fn db(&self) -> &Arc<Database> {
        &self.db
    }

    /// Closes the database cleanly once every other holder of it is gone (the memory
    /// writer thread lets go when its last handle drops), waiting at most `patience`.
    /// Returning while a thread still holds it would skip redb's close, and the next start
    /// would have to repair the file — slow, and costly in memory on a big database.
    pub fn close(self, patience: std::time::Duration) -> bool {
        let deadline = Instant::now() + patience;
        while Arc::strong_count(&self.db) > 1 {
            if Instant::now() >= deadline {
                tracing::warn!("database still in use at exit; the next start may repair it");
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        true
    }

    /// Where compiled artifacts (precompiled agent components) are cached.
    pub fn cache_dir(&self) -> PathBuf {
        self.path.join("cache")
    }

    /// Where uploaded agent components' bytes are kept, content-addressed.
    pub fn components_dir(&self) -> PathBuf {
        self.path.join("components")
    }

    /// Where a derived index named `name` keeps its files.
    pub fn index_dir(&self, name: &str) -> PathBuf {
        self.path.join("index").join(name)
    }
}

/// Opens (creating if needed) the database at `path`. A file a process did not close
/// (killed, crashed, or stopped while something still held the database) is repaired
/// first, which is slow and costly in memory on a big file: that is logged, so an
/// operator sees it, and a stop that left it unclean is seen at the next start.
fn open_database(path: &Path) -> Result<Database, redb::DatabaseError> {
    let repairing = Arc::new(AtomicBool::new(false));
    let seen = repairing.clone();
    let started = Instant::now();
    let db = Database::builder()
        .set_repair_callback(move |_| {
            if !seen.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "the database was not closed cleanly (a kill, a crash, or a stop that \
                     could not finish): repairing it"
                );
            }
        })
        .create(path)?;
    if repairing.load(Ordering::Relaxed) {
        let ms = started.elapsed().as_millis() as u64;
        tracing::warn!(ms, "the database is repaired");
    }
    Ok(db)
}

/// Takes group and other access off `path` and everything under it (symbolic links are
/// left alone: their targets are not the data dir's).
fn owner_only(path: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        std::fs::set_permissions(path, Permissions::from_mode(mode & !0o077))?;
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            owner_only(&entry?.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_waits_for_the_other_holders() {
        let dir = tempfile::tempdir().unwrap();
        let data = DataDir::open(dir.path()).unwrap();
        let held = data.db().clone();
        let holder = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            drop(held);
        });
        assert!(data.close(std::time::Duration::from_secs(10)));
        holder.join().unwrap();
        let data = DataDir::open(dir.path()).unwrap();
        let _still = data.db().clone();
        assert!(!data.close(std::time::Duration::from_millis(20)));
    }

    #[test]
    fn an_earlier_lax_data_dir_is_made_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(data.join("index/memory")).unwrap();
        let loose = data.join("index/memory/segment");
        std::fs::write(&loose, b"x").unwrap();
        let index = data.join("index");
        for (path, mode) in [(&data, 0o755), (&index, 0o755), (&loose, 0o644)] {
            std::fs::set_permissions(path, Permissions::from_mode(mode)).unwrap();
        }
        let opened = DataDir::open(&data).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&index), 0o700);
        assert_eq!(mode(&loose), 0o600);
        assert_eq!(mode(&data.join("wasmind.redb")), 0o600);
        drop(opened);
    }

    #[test]
    fn second_opener_fails_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let first = DataDir::open(dir.path()).unwrap();
        let err = DataDir::open(dir.path()).unwrap_err().to_string();
        assert!(err.contains("in use"), "{err}");
        drop(first);
        DataDir::open(dir.path()).unwrap();
    }
}
