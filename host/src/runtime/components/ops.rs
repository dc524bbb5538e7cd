//! The components' operations below the runtime's calls (`calls`): an upload checked,
//! validated (on the blocking pool) and stored; a delete that lets this node's artifact go
//! with the bytes' last reference; the resolution of a spawn's `agent` to a linked
//! component, from the cache, this node's artifact, or the stored bytes.

use std::{
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use parking_lot::Mutex;
use redb::Database;
use sha2::{Digest, Sha256};

use super::{
    cache::PreCache,
    embedded::EmbeddedComponents,
    postgres::PgComponents,
    store::{ComponentBackend, ComponentRecord, CreateError, StoreError},
};
use crate::{
    accounts::Plan,
    clock::now_ms,
    id::new_id,
    invalid::Invalid,
    metrics::names,
    runtime::{
        bindings::AgentPre,
        engine::{self, Compiled, LoadError},
        records::AgentComponent,
        spawn::SpawnRefusal,
        state::AgentState,
    },
};

/// The components' metadata and bytes (in a backend) and linked forms (this node's).
pub struct Components {
    store: Arc<dyn ComponentBackend>,
    cache: PreCache,
    /// Held while an upload is validated: one compilation at a time (each already uses
    /// every core), so a burst of uploads queues instead of starving running agents.
    compiling: Arc<Mutex<()>>,
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
    /// The account's plan, and its uploads per account in any rolling hour.
    pub plan: Plan,
    pub uploads_per_hour: u32,
}

/// Why an upload was refused.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// The name or the version is not valid.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// Not a component that can run here; the message names what is wrong.
    #[error("{0}")]
    InvalidComponent(String),
    /// The account has a component of that name and version.
    #[error("a component with that name and version exists")]
    Exists,
    /// The account has its plan's most components.
    #[error("the account has its plan's {max} components")]
    Quota { max: u32 },
    /// The account uploaded its plan's `per_hour` components in the last hour.
    #[error("the account uploaded its plan's {per_hour} components in the last hour")]
    RateLimited {
        plan: Plan,
        per_hour: u32,
        retry_after_secs: u64,
    },
    #[error(transparent)]
    Storage(#[from] StoreError),
}

impl From<CreateError> for UploadError {
    fn from(e: CreateError) -> Self {
        match e {
            CreateError::Exists => UploadError::Exists,
            CreateError::Quota { max } => UploadError::Quota { max },
            CreateError::Storage(e) => UploadError::Storage(e),
        }
    }
}

impl Components {
    /// Components kept in the data dir: metadata in `db`, bytes in `dir` (see
    /// [`EmbeddedComponents::open`]).
    pub fn embedded(db: Arc<Database>, dir: &Path) -> anyhow::Result<Self> {
        Ok(Self::over(Arc::new(EmbeddedComponents::open(db, dir)?)))
    }

    /// Components kept in PostgreSQL (migrations applied), shared with every node.
    pub fn postgres(pool: sqlx::PgPool) -> Self {
        Self::over(Arc::new(PgComponents::new(pool)))
    }

    fn over(store: Arc<dyn ComponentBackend>) -> Self {
        Self {
            store,
            cache: PreCache::default(),
            compiling: Arc::default(),
        }
    }

    /// Checks, compiles, stores: see [`Runtime::upload_component`].
    /// Returns the record and how long to wait before answering: every upload of the same
    /// bytes takes at least as long as their first validation (a compilation), so no
    /// account can tell from the time that another uploaded them first.
    pub(super) async fn upload(
        &self,
        compiled: &Arc<Compiled>,
        up: Upload,
    ) -> Result<(ComponentRecord, Duration), UploadError> {
        let exact = format!("{}@{}", up.name, up.version);
        if self.store.resolve(&up.account, &exact).await?.is_some() {
            return Err(UploadError::Exists);
        }
        if self.store.count(&up.account).await? >= up.max_components as usize {
            return Err(UploadError::Quota {
                max: up.max_components,
            });
        }
        let digest: [u8; 32] = Sha256::digest(&up.bytes).into();
        let sha256 = hex::encode(digest);
        let (compiling, checked) = (self.compiling.clone(), compiled.clone());
        let (bytes, (pre, took)) = tokio::task::spawn_blocking(move || {
            let _compiling = compiling.lock();
            let started = Instant::now();
            let pre = validate(&checked, &digest, &up.bytes);
            (up.bytes, pre.map(|pre| (pre, started.elapsed())))
        })
        .await
        .map_err(StoreError::from)
        .map_err(UploadError::from)
        .and_then(|(bytes, validated)| Ok((bytes, validated?)))?;
        let record = ComponentRecord {
            component_id: new_id(super::ID_PREFIX),
            account: up.account,
            name: up.name,
            version: up.version,
            sha256,
            size: bytes.len() as u64,
            created_at: now_ms(),
            seq: 0,
        };
        let took_us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let created = self
            .store
            .create(record, bytes, up.max_components, took_us)
            .await;
        let record = match created {
            Ok(record) => record,
            Err(e) => {
                self.drop_unreferenced(compiled, &digest).await;
                return Err(e.into());
            }
        };
        self.cache.put(&record.sha256, pre);
        let first_us = self
            .store
            .validation_us(&record.sha256)
            .await?
            .unwrap_or(took_us);
        Ok((
            record,
            Duration::from_micros(first_us.saturating_sub(took_us)),
        ))
    }

    /// Removes this node's artifact of `digest` if no component references its bytes.
    async fn drop_unreferenced(&self, compiled: &Compiled, digest: &[u8; 32]) {
        let sha256 = hex::encode(digest);
        if let Ok(false) = self.store.referenced(&sha256).await {
            self.cache.forget(&sha256);
            let artifact = compiled.artifacts.path(&compiled.engine, digest);
            if let Err(e) = std::fs::remove_file(artifact)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(error = %e, %sha256, "removing the component's artifact failed");
            }
        }
    }

    pub(super) async fn delete(
        &self,
        compiled: &Compiled,
        account: &str,
        id: &str,
    ) -> Result<Option<ComponentRecord>, StoreError> {
        let Some((record, last)) = self.store.delete(account, id).await? else {
            return Ok(None);
        };
        if last {
            let mut digest = [0u8; 32];
            hex::decode_to_slice(&record.sha256, &mut digest)
                .map_err(|e| StoreError::Corrupt(format!("component digest: {e}")))?;
            self.drop_unreferenced(compiled, &digest).await;
        }
        Ok(Some(record))
    }

    /// The account's component `id`, if it has one.
    pub(super) async fn get(
        &self,
        account: &str,
        id: &str,
    ) -> Result<Option<ComponentRecord>, StoreError> {
        self.store.get(account, id).await
    }

    /// Up to `limit` of the account's components newest first, below list position
    /// `before`; also the position to continue from when more remain.
    pub(super) async fn list(
        &self,
        account: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<ComponentRecord>, Option<u64>), StoreError> {
        self.store.list(account, before, limit).await
    }

    /// The linked component `spec` names for `account`, with what the record says of it:
    /// from the cache, else from this node's artifact, else compiled from the stored bytes
    /// (the first spawn of it on this node).
    pub(super) async fn resolve(
        &self,
        compiled: &Arc<Compiled>,
        account: &str,
        spec: &str,
    ) -> Result<(AgentComponent, AgentPre<AgentState>), SpawnRefusal> {
        let record = self
            .store
            .resolve(account, spec)
            .await?
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
                let pre = self.load(compiled, &record).await?;
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

    /// The component of `record` loaded on the blocking pool; its bytes are read from the
    /// store only when this node has no artifact of them.
    async fn load(
        &self,
        compiled: &Arc<Compiled>,
        record: &ComponentRecord,
    ) -> Result<AgentPre<AgentState>, SpawnRefusal> {
        let mut digest = [0u8; 32];
        hex::decode_to_slice(&record.sha256, &mut digest)
            .map_err(|e| StoreError::Corrupt(format!("component digest: {e}")))?;
        let (store, compiled) = (self.store.clone(), compiled.clone());
        let (account, sha256) = (record.account.clone(), record.sha256.clone());
        let tokio = tokio::runtime::Handle::current();
        let loaded = tokio::task::spawn_blocking(move || {
            engine::load(
                &compiled.engine,
                &compiled.linker,
                &compiled.artifacts,
                &digest,
                || {
                    let bytes = tokio.block_on(store.bytes(&account, &sha256));
                    bytes
                        .map_err(std::io::Error::other)?
                        .ok_or_else(|| std::io::ErrorKind::NotFound.into())
                },
            )
        })
        .await
        .map_err(StoreError::from)?;
        loaded.map_err(|e| match e {
            // Deleted since it was resolved.
            LoadError::Io(e) if e.kind() == std::io::ErrorKind::NotFound => {
                SpawnRefusal::ComponentNotFound
            }
            e => e.into(),
        })
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
        &compiled.artifacts,
        digest,
        || Ok(bytes.to_vec()),
    )
    .map_err(|e| match e {
        LoadError::Invalid(message) => UploadError::InvalidComponent(message),
        LoadError::Io(e) => UploadError::Storage(e.into()),
    })
}
