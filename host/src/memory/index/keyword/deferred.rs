//! A tantivy `Directory` that writes through the page cache without fsync.
//!
//! tantivy syncs every file of every commit (each new segment's ~8 files, `meta.json`, the
//! managed-file list and the directory): ~16 fdatasyncs per put, most of a put's time. The
//! keyword index does not need them: redb is the durable truth, and the index only has to
//! be *visible* after a commit. So commits here only write (surviving a crash of the
//! process, since the page cache outlives it), and [`DeferredSync::sync_all`] makes the
//! whole folder durable at each checkpoint; the watermark counts as durable only then.
//! After a power loss the unsynced tail may be torn: `KeywordIndex::open` validates every
//! file's checksum and rebuilds from redb when one is damaged.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, TerminatingWrite,
    WatchCallback, WatchHandle, WritePtr,
};

/// [`MmapDirectory`] with every sync deferred to [`DeferredSync::sync_all`].
#[derive(Clone, Debug)]
pub(super) struct DeferredSync {
    inner: MmapDirectory,
    root: PathBuf,
}

impl DeferredSync {
    pub(super) fn open(root: &Path) -> tantivy::Result<Self> {
        Ok(Self {
            inner: MmapDirectory::open(root).map_err(tantivy::TantivyError::from)?,
            root: root.to_path_buf(),
        })
    }

    /// Makes every file in the folder, and the folder itself, durable. Files that vanish
    /// meanwhile (a merge's garbage collection) are skipped: they are no longer referenced.
    pub(super) fn sync_all(&self) -> io::Result<()> {
        for entry in std::fs::read_dir(&self.root)? {
            let entry = entry?;
            if !entry.file_type()?.is_file() {
                continue;
            }
            match File::open(entry.path()) {
                Ok(file) => file.sync_data()?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        File::open(&self.root)?.sync_all()
    }
}

/// A file written through the page cache; `terminate` flushes but does not sync.
struct Unsynced(File);

impl Write for Unsynced {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl TerminatingWrite for Unsynced {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        self.0.flush()
    }
}

impl Directory for DeferredSync {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.root.join(path))
            .map_err(|e| match e.kind() {
                io::ErrorKind::AlreadyExists => {
                    OpenWriteError::FileAlreadyExists(path.to_path_buf())
                }
                _ => OpenWriteError::wrap_io_error(e, path.to_path_buf()),
            })?;
        Ok(BufWriter::new(Box::new(Unsynced(file))))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    /// Write-to-temp-then-rename keeps readers from seeing a half-written `meta.json`;
    /// only the fsyncs are left out.
    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let temp = self.root.join(format!(".atomic-write-{n}.tmp"));
        std::fs::write(&temp, data)?;
        std::fs::rename(&temp, self.root.join(path))
    }

    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}
