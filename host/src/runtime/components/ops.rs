//! The components' operations below the runtime's calls (`calls`): an upload checked,
//! validated and stored; a delete that lets the bytes go with their last reference; the
//! resolution of a spawn's `agent` to a linked component, from the cache or its artifact.

use std::{
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use parking_lot::Mutex;
use redb::Database;
use sha2::{Digest, Sha256};

use super::{
    blobs::Blobs,
    cache::PreCache,
    store::{ComponentRecord, ComponentStore, CreateError},
};
use crate::{
    clock::now_ms,
    id::new_id,
    metrics::names,
    runtime::{
        bindings::AgentPre,
        engine::{self, Compiled, LoadError},
        records::AgentComponent,
        spawn::SpawnRefusal,
        state::AgentState,
    },
};

/// The components' metadata, bytes and linked forms.
pub struct Components {
    pub(super) store: ComponentStore,
    blobs: Blobs,
    cache: PreCache,
    /// Held while bytes are written or removed and their references change, so a delete
    /// never removes a file an upload has just counted on.
    files: Mutex<()>,
    /// Held while an upload is validated: one compilation at a time (each already uses
    /// every core), so a burst of uploads queues instead of starving running agents.
    compiling: Mutex<()>,
}

/// An upload, as the caller received it.
#[derive(Debug)]
pub struct Upload {
    pub account: String,
    pub name: String,
    pub version: String,
    pub bytes: Vec<u8>,
    /// The plan's most components per account.
    pub max_components: u32,
}

/// Why an upload was refused.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    #[error("{0}")]
    InvalidName(String),
    #[error("{0}")]
    InvalidVersion(String),
    /// Not a component that can run here; the message names what is wrong.
    #[error("{0}")]
    InvalidComponent(String),
    /// The account has a component of that name and version.
    #[error("a component with that name and version exists")]
    Exists,
    /// The account has its plan's most components.
    #[error("the account has its plan's {max} components")]
    Quota { max: u32 },
    #[error(transparent)]
    Storage(anyhow::Error),
}

impl From<CreateError> for UploadError {
    fn from(e: CreateError) -> Self {
        match e {
            CreateError::Exists => UploadError::Exists,
            CreateError::Quota { max } => UploadError::Quota { max },
            CreateError::Storage(e) => UploadError::Storage(e.into()),
        }
    }
}

fn storage(e: impl std::error::Error + Send + Sync + 'static) -> UploadError {
    UploadError::Storage(e.into())
}

impl Components {
    /// The components kept in `db` and, bytes, in `dir`; removes bytes no component
    /// references (left by a crash mid-upload or mid-delete).
    pub fn open(db: Arc<Database>, dir: &Path) -> anyhow::Result<Self> {
        let store = ComponentStore::new(db)?;
        let blobs = Blobs::new(dir);
        let swept = blobs.sweep(|sha| {
            store
                .referenced(sha)
                .map_err(|e| std::io::Error::other(e.to_string()))
        })?;
        if swept > 0 {
            tracing::info!(files = swept, "removed unreferenced component files");
        }
        Ok(Self {
            store,
            blobs,
            cache: PreCache::default(),
            files: Mutex::new(()),
            compiling: Mutex::new(()),
        })
    }

    /// Checks, compiles, stores: see [`Runtime::upload_component`].
    /// Returns the record and how long to wait before answering: every upload of the same
    /// bytes takes at least as long as their first validation (a compilation), so no
    /// account can tell from the time that another uploaded them first.
    pub(super) fn upload(
        &self,
        compiled: &Compiled,
        up: Upload,
    ) -> Result<(ComponentRecord, Duration), UploadError> {
        let exact = format!("{}@{}", up.name, up.version);
        if self
            .store
            .resolve(&up.account, &exact)
            .map_err(storage)?
            .is_some()
        {
            return Err(UploadError::Exists);
        }
        if self.store.count(&up.account).map_err(storage)? >= up.max_components as usize {
            return Err(UploadError::Quota {
                max: up.max_components,
            });
        }
        let digest: [u8; 32] = Sha256::digest(&up.bytes).into();
        let sha256 = hex::encode(digest);
        let (pre, took) = {
            let _compiling = self.compiling.lock();
            let started = Instant::now();
            (validate(compiled, &digest, &up.bytes)?, started.elapsed())
        };
        let record = ComponentRecord {
            component_id: new_id(super::ID_PREFIX),
            account: up.account,
            name: up.name,
            version: up.version,
            sha256,
            size: up.bytes.len() as u64,
            created_at: now_ms(),
            seq: 0,
        };
        let _files = self.files.lock();
        self.blobs
            .put(&record.sha256, &up.bytes)
            .map_err(|e| UploadError::Storage(e.into()))?;
        let took_us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let created = self.store.create(record, up.max_components, took_us);
        let record = match created {
            Ok(record) => record,
            Err(e) => {
                self.drop_unreferenced(compiled, &digest);
                return Err(e.into());
            }
        };
        self.cache.put(&record.sha256, pre);
        let first_us = self
            .store
            .validation_us(&record.sha256)
            .map_err(storage)?
            .unwrap_or(took_us);
        Ok((
            record,
            Duration::from_micros(first_us.saturating_sub(took_us)),
        ))
    }

    /// Removes the bytes and artifact of `digest` if no component references them.
    fn drop_unreferenced(&self, compiled: &Compiled, digest: &[u8; 32]) {
        let sha256 = hex::encode(digest);
        if let Ok(false) = self.store.referenced(&sha256) {
            self.cache.forget(&sha256);
            let artifact = engine::artifact_path(&compiled.engine, &compiled.cache_dir, digest);
            if let Err(e) = self
                .blobs
                .remove(&sha256)
                .and_then(|()| std::fs::remove_file(artifact))
                .or_else(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => Ok(()),
                    _ => Err(e),
                })
            {
                tracing::warn!(error = %e, %sha256, "removing component files failed");
            }
        }
    }

    pub(super) fn delete(
        &self,
        compiled: &Compiled,
        account: &str,
        id: &str,
    ) -> anyhow::Result<Option<ComponentRecord>> {
        let _files = self.files.lock();
        let Some((record, last)) = self.store.delete(account, id)? else {
            return Ok(None);
        };
        if last {
            let mut digest = [0u8; 32];
            hex::decode_to_slice(&record.sha256, &mut digest)?;
            self.drop_unreferenced(compiled, &digest);
        }
        Ok(Some(record))
    }

    /// The linked component `spec` names for `account`, with what the record says of it.
    pub(super) fn resolve(
        &self,
        compiled: &Compiled,
        account: &str,
        spec: &str,
    ) -> Result<(AgentComponent, AgentPre<AgentState>), SpawnRefusal> {
        let record = self
            .store
            .resolve(account, spec)
            .map_err(|e| SpawnRefusal::Storage(e.into()))?
            .ok_or(SpawnRefusal::ComponentNotFound)?;
        let cached = self.cache.get(&record.sha256);
        let from = if cached.is_some() {
            "cache"
        } else {
            "artifact"
        };
        let pre = match cached {
            Some(pre) => pre,
            None => {
                let mut digest = [0u8; 32];
                hex::decode_to_slice(&record.sha256, &mut digest)
                    .map_err(|e| SpawnRefusal::Storage(e.into()))?;
                let pre = engine::load(
                    &compiled.engine,
                    &compiled.linker,
                    &compiled.cache_dir,
                    &digest,
                    || self.blobs.read(&record.sha256),
                )
                .map_err(|e| match e {
                    // Deleted since it was resolved.
                    LoadError::Io(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        SpawnRefusal::ComponentNotFound
                    }
                    e => SpawnRefusal::Storage(e.into()),
                })?;
                self.cache.put(&record.sha256, pre.clone());
                pre
            }
        };
        metrics::counter!(names::COMPONENT_LOADS, "from" => from).increment(1);
        let component = AgentComponent {
            component_id: record.component_id,
            name: record.name,
            version: record.version,
        };
        Ok((component, pre))
    }
}

/// The component `bytes` linked and ready to run, or what is wrong with them: not a
/// component, not compilable, an import the sandbox does not offer, no fitting `run`.
fn validate(
    compiled: &Compiled,
    digest: &[u8; 32],
    bytes: &[u8],
) -> Result<AgentPre<AgentState>, UploadError> {
    if !wasmparser::Parser::is_component(bytes) {
        let what = match wasmparser::Parser::is_core_wasm(bytes) {
            true => {
                "it is a core WebAssembly module, not a component; build the agent for \
                     the wasm32-wasip2 target, which makes a component"
            }
            false => {
                "it is not a WebAssembly component (the bytes do not start with the \
                      component header)"
            }
        };
        return Err(UploadError::InvalidComponent(what.into()));
    }
    engine::load(
        &compiled.engine,
        &compiled.linker,
        &compiled.cache_dir,
        digest,
        || Ok(bytes.to_vec()),
    )
    .map_err(|e| match e {
        LoadError::Invalid(message) => UploadError::InvalidComponent(message),
        LoadError::Io(e) => UploadError::Storage(e.into()),
    })
}
