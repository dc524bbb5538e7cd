//! Components in the data dir: metadata in redb beside the agent records, bytes in files
//! (`blobs`). Every table is keyed so an account reaches only its own components; the
//! bytes are shared, counted by reference per content digest, so identical uploads of
//! several accounts are one file. Every operation runs on the blocking pool.

use std::{path::Path, sync::Arc};

use async_trait::async_trait;
use parking_lot::Mutex;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use super::{
    blobs::Blobs,
    names::Spec,
    store::{ComponentBackend, ComponentRecord, CreateError, Result, newest},
};
use crate::runtime::newest;

/// component_id → record (JSON).
const COMPONENTS: TableDefinition<&str, &[u8]> = TableDefinition::new("components");
/// (account, name, version) → component_id.
const BY_NAME: TableDefinition<(&str, &str, &str), &str> =
    TableDefinition::new("components_by_name");
/// (account, seq) → component_id: an account's components in upload order.
const BY_ACCOUNT: TableDefinition<(&str, u64), &str> =
    TableDefinition::new("components_by_account");
/// sha256 (hex) → how many components have these bytes.
const BLOBS: TableDefinition<&str, u64> = TableDefinition::new("component_blobs");
/// sha256 (hex) → how long the first validation of these bytes took (µs): every later
/// upload of them takes at least as long (see `ops`).
const VALIDATION_US: TableDefinition<&str, u64> = TableDefinition::new("component_validation_us");
/// Counters.
const META: TableDefinition<&str, u64> = TableDefinition::new("component_meta");

/// Above every character a version may have, to bound a range of one name's versions.
const VERSION_END: &str = "~";

/// Components in the data dir.
#[derive(Clone)]
pub struct EmbeddedComponents {
    meta: Arc<Meta>,
    blobs: Blobs,
    /// Held while bytes are written or removed and their references change, so a delete
    /// never removes a file an upload has just counted on.
    files: Arc<Mutex<()>>,
}

impl EmbeddedComponents {
    /// The components kept in `db` and, bytes, in `dir`; removes bytes no component
    /// references (left by a crash mid-upload or mid-delete).
    pub fn open(db: Arc<Database>, dir: &Path) -> Result<Self> {
        let meta = Meta::new(db)?;
        let blobs = Blobs::new(dir);
        let swept = blobs.sweep(|sha| {
            meta.referenced(sha)
                .map_err(|e| std::io::Error::other(e.to_string()))
        })?;
        if swept > 0 {
            tracing::info!(files = swept, "removed unreferenced component files");
        }
        Ok(Self {
            meta: Arc::new(meta),
            blobs,
            files: Arc::default(),
        })
    }

    /// Runs `f` on the blocking pool.
    async fn blocking<T: Send + 'static, E: From<tokio::task::JoinError> + Send + 'static>(
        &self,
        f: impl FnOnce(&Self) -> std::result::Result<T, E> + Send + 'static,
    ) -> std::result::Result<T, E> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || f(&this)).await?
    }
}

#[async_trait]
impl ComponentBackend for EmbeddedComponents {
    async fn create(
        &self,
        record: ComponentRecord,
        bytes: Vec<u8>,
        max: u32,
        validation_us: u64,
    ) -> std::result::Result<ComponentRecord, CreateError> {
        self.blocking(move |this| {
            let _files = this.files.lock();
            let sha256 = record.sha256.clone();
            this.blobs
                .put(&sha256, &bytes)
                .map_err(|e| CreateError::Storage(e.into()))?;
            let created = this.meta.create(record, max, validation_us);
            if created.is_err() && !this.meta.referenced(&sha256)? {
                this.blobs.remove(&sha256)?;
            }
            created
        })
        .await
    }

    async fn get(&self, account: &str, id: &str) -> Result<Option<ComponentRecord>> {
        let (account, id) = (account.to_owned(), id.to_owned());
        self.blocking(move |this| this.meta.get(&account, &id))
            .await
    }

    async fn resolve(&self, account: &str, spec: &str) -> Result<Option<ComponentRecord>> {
        let (account, spec) = (account.to_owned(), spec.to_owned());
        self.blocking(move |this| this.meta.resolve(&account, &spec))
            .await
    }

    async fn list(
        &self,
        account: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<ComponentRecord>, Option<u64>)> {
        let account = account.to_owned();
        self.blocking(move |this| this.meta.list(&account, before, limit))
            .await
    }

    async fn delete(&self, account: &str, id: &str) -> Result<Option<(ComponentRecord, bool)>> {
        let (account, id) = (account.to_owned(), id.to_owned());
        self.blocking(move |this| {
            let _files = this.files.lock();
            let deleted = this.meta.delete(&account, &id)?;
            if let Some((record, true)) = &deleted {
                this.blobs.remove(&record.sha256)?;
            }
            Ok(deleted)
        })
        .await
    }

    async fn count(&self, account: &str) -> Result<usize> {
        let account = account.to_owned();
        self.blocking(move |this| this.meta.count(&account)).await
    }

    async fn validation_us(&self, sha256: &str) -> Result<Option<u64>> {
        let sha256 = sha256.to_owned();
        self.blocking(move |this| this.meta.validation_us(&sha256))
            .await
    }

    async fn referenced(&self, sha256: &str) -> Result<bool> {
        let sha256 = sha256.to_owned();
        self.blocking(move |this| this.meta.referenced(&sha256))
            .await
    }

    async fn bytes(&self, account: &str, sha256: &str) -> Result<Option<Vec<u8>>> {
        let (account, sha256) = (account.to_owned(), sha256.to_owned());
        self.blocking(move |this| {
            if !this.meta.holds(&account, &sha256)? {
                return Ok(None);
            }
            match this.blobs.read(&sha256) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                read => Ok(Some(read?)),
            }
        })
        .await
    }
}

/// Component metadata in redb. Blocking.
struct Meta {
    db: Arc<Database>,
}

impl Meta {
    /// Opens the tables, creating them on first use.
    fn new(db: Arc<Database>) -> Result<Self> {
        let txn = db.begin_write()?;
        txn.open_table(COMPONENTS)?;
        txn.open_table(BY_NAME)?;
        txn.open_table(BY_ACCOUNT)?;
        txn.open_table(BLOBS)?;
        txn.open_table(VALIDATION_US)?;
        txn.open_table(META)?;
        txn.commit()?;
        Ok(Self { db })
    }

    /// Stores `record` (durably), assigning its list position and counting a reference to
    /// its bytes (whose first validation, if this is it, took `validation_us`), unless the
    /// account has that name and version or `max` components.
    fn create(
        &self,
        mut record: ComponentRecord,
        max: u32,
        validation_us: u64,
    ) -> std::result::Result<ComponentRecord, CreateError> {
        let txn = self.db.begin_write()?;
        {
            let account = record.account.as_str();
            let mut by_name = txn.open_table(BY_NAME)?;
            if by_name
                .get((account, record.name.as_str(), record.version.as_str()))?
                .is_some()
            {
                return Err(CreateError::Exists);
            }
            let mut by_account = txn.open_table(BY_ACCOUNT)?;
            let held = by_account
                .range((account, 0)..=(account, u64::MAX))?
                .count();
            if held >= max as usize {
                return Err(CreateError::Quota { max });
            }
            let mut meta = txn.open_table(META)?;
            record.seq = meta.get("next_seq")?.map_or(1, |v| v.value());
            meta.insert("next_seq", record.seq + 1)?;
            let id = record.component_id.as_str();
            txn.open_table(COMPONENTS)?
                .insert(id, serde_json::to_vec(&record)?.as_slice())?;
            by_name.insert((account, record.name.as_str(), record.version.as_str()), id)?;
            by_account.insert((account, record.seq), id)?;
            let mut blobs = txn.open_table(BLOBS)?;
            let refs = blobs.get(record.sha256.as_str())?.map_or(0, |v| v.value());
            blobs.insert(record.sha256.as_str(), refs + 1)?;
            let mut validation = txn.open_table(VALIDATION_US)?;
            if validation.get(record.sha256.as_str())?.is_none() {
                validation.insert(record.sha256.as_str(), validation_us)?;
            }
        }
        txn.commit()?;
        Ok(record)
    }

    /// The component `id` if it belongs to `account`.
    fn get(&self, account: &str, id: &str) -> Result<Option<ComponentRecord>> {
        let txn = self.db.begin_read()?;
        let components = txn.open_table(COMPONENTS)?;
        let Some(bytes) = components.get(id)? else {
            return Ok(None);
        };
        let record: ComponentRecord = serde_json::from_slice(bytes.value())?;
        Ok((record.account == account).then_some(record))
    }

    /// The account's component `spec` names: an id (or, failing that, a name starting
    /// like one), a name's newest version by semver precedence, or one version.
    fn resolve(&self, account: &str, spec: &str) -> Result<Option<ComponentRecord>> {
        let txn = self.db.begin_read()?;
        let components = txn.open_table(COMPONENTS)?;
        let by_name = txn.open_table(BY_NAME)?;
        let load = |id: &str| -> Result<Option<ComponentRecord>> {
            let Some(bytes) = components.get(id)? else {
                return Ok(None);
            };
            let record: ComponentRecord = serde_json::from_slice(bytes.value())?;
            Ok((record.account == account).then_some(record))
        };
        let newest = |name: &str| -> Result<Option<ComponentRecord>> {
            let mut versions = Vec::new();
            for entry in by_name.range((account, name, "")..(account, name, VERSION_END))? {
                let (key, id) = entry?;
                versions.push((key.value().2.to_string(), id.value().to_string()));
            }
            newest(versions).map_or(Ok(None), |id| load(&id))
        };
        match Spec::parse(spec) {
            Spec::Id(id) => match load(id)? {
                Some(record) => Ok(Some(record)),
                None => newest(id),
            },
            Spec::Newest(name) => newest(name),
            Spec::Exact { name, version } => match by_name.get((account, name, version))? {
                Some(id) => load(id.value()),
                None => Ok(None),
            },
        }
    }

    /// Up to `limit` of the account's components newest first, below list position
    /// `before`; also the position to continue from when more remain.
    fn list(
        &self,
        account: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<ComponentRecord>, Option<u64>)> {
        let txn = self.db.begin_read()?;
        let page = (account, before, limit);
        newest::page(&txn, COMPONENTS, BY_ACCOUNT, page, |r: &ComponentRecord| {
            r.seq
        })
    }

    /// Removes the account's component `id` (durably); returns it and whether it was the
    /// last reference to its bytes (which may then go).
    fn delete(&self, account: &str, id: &str) -> Result<Option<(ComponentRecord, bool)>> {
        let txn = self.db.begin_write()?;
        let deleted = {
            let mut components = txn.open_table(COMPONENTS)?;
            let record = match components.get(id)? {
                Some(bytes) => serde_json::from_slice::<ComponentRecord>(bytes.value())?,
                None => return Ok(None),
            };
            if record.account != account {
                return Ok(None);
            }
            components.remove(id)?;
            txn.open_table(BY_NAME)?.remove((
                account,
                record.name.as_str(),
                record.version.as_str(),
            ))?;
            txn.open_table(BY_ACCOUNT)?.remove((account, record.seq))?;
            let mut blobs = txn.open_table(BLOBS)?;
            let refs = blobs.get(record.sha256.as_str())?.map_or(0, |v| v.value());
            let last = refs <= 1;
            if last {
                blobs.remove(record.sha256.as_str())?;
                txn.open_table(VALIDATION_US)?
                    .remove(record.sha256.as_str())?;
            } else {
                blobs.insert(record.sha256.as_str(), refs - 1)?;
            }
            (record, last)
        };
        txn.commit()?;
        Ok(Some(deleted))
    }

    /// How many components the account has.
    fn count(&self, account: &str) -> Result<usize> {
        let txn = self.db.begin_read()?;
        let index = txn.open_table(BY_ACCOUNT)?;
        Ok(index.range((account, 0)..=(account, u64::MAX))?.count())
    }

    /// How long the first validation of the bytes of digest `sha256` took (µs), if any
    /// component has them.
    fn validation_us(&self, sha256: &str) -> Result<Option<u64>> {
        let txn = self.db.begin_read()?;
        let validation = txn.open_table(VALIDATION_US)?;
        Ok(validation.get(sha256)?.map(|v| v.value()))
    }

    /// Whether one of the account's components has the bytes of digest `sha256`.
    fn holds(&self, account: &str, sha256: &str) -> Result<bool> {
        let txn = self.db.begin_read()?;
        let (index, components) = (txn.open_table(BY_ACCOUNT)?, txn.open_table(COMPONENTS)?);
        for entry in index.range((account, 0)..=(account, u64::MAX))? {
            let (_, id) = entry?;
            if let Some(bytes) = components.get(id.value())? {
                let record: ComponentRecord = serde_json::from_slice(bytes.value())?;
                if record.sha256 == sha256 {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Whether any component has the bytes of digest `sha256` (hex).
    fn referenced(&self, sha256: &str) -> Result<bool> {
        let txn = self.db.begin_read()?;
        Ok(txn.open_table(BLOBS)?.get(sha256)?.is_some())
    }
}
