//! The domains' stores on the configured backend: the data dir's (redb, tantivy, usearch)
//! or a shared PostgreSQL's, where this process is one node of many. Only this module
//! (and the CLI's, for keys and usage) chooses; everything above sees the domains' traits.

use std::sync::Arc;

use anyhow::Context;

use crate::{
    accounts::{Accounts, KeyStore, Ledger, PgAccounts, PgUsage, UsageStore},
    billing::{BillingStore, EmbeddedBilling, PgBilling},
    config::Config,
    console::OwnKey,
    data_dir::DataDir,
    health::{Part, Readiness},
    memory::{
        MemoryService, PgMemory,
        embed::{self, EmbedService, Embedder, EmbedderConfig},
    },
    runtime::{AgentStore, Cluster, EmbeddedJournal, JournalStore, PgJournal, node_id},
    storage::{self, Backend},
    tools::{EmbeddedTools, PgTools, ToolBackend},
};

/// What the domains keep their state in.
pub(super) struct Stores {
    pub memory: MemoryService,
    pub records: AgentStore,
    /// Agents' journals: what their runs are resumed from.
    pub journal: Arc<dyn JournalStore>,
    pub usage: Ledger,
    pub keys: Accounts,
    /// The console's own signing key: the data dir's, or the one all nodes share.
    pub own_key: OwnKey,
    /// This node, on the postgres backend.
    pub cluster: Option<Cluster>,
    /// Tenants' registered tools.
    pub tools: Arc<dyn ToolBackend>,
    /// Billing's customers, subscriptions and applied events.
    pub billing: Arc<dyn BillingStore>,
}

/// The embedder's service with the cross-encoder, whose files must be there (they are
/// loaded at the first search that asks to rerank).
fn embed_service(
    embedder: Arc<dyn Embedder>,
    config: &EmbedderConfig,
) -> anyhow::Result<EmbedService> {
    let reranker = embed::locate_reranker(config).context("finding the cross-encoder")?;
    Ok(EmbedService::with_reranker(
        embedder,
        config,
        Some(reranker),
    ))
}

impl Stores {
    /// Opens the backend's stores, the memory store's with `embedder` (whose identity the
    /// backend records on first use and holds to afterwards), marking the embedder and the
    /// indexes on `readiness` as they come up.
    pub async fn open(
        dir: &DataDir,
        config: &Config,
        embedder: Arc<dyn Embedder>,
        readiness: &Readiness,
    ) -> anyhow::Result<Self> {
        match config.storage.backend {
            Backend::Embedded => {
                embed::check_identity(dir.db(), config.embedder.kind, &*embedder)?;
                readiness.mark(Part::Embedder);
                let embed = embed_service(embedder, &config.embedder)?;
                let memory = MemoryService::open(
                    dir.db().clone(),
                    &dir.index_dir("memory"),
                    embed,
                    &config.memory,
                )
                .context("opening the memory store")?;
                readiness.mark(Part::Indexes);
                Ok(Self {
                    memory,
                    records: AgentStore::embedded(dir.db().clone())?,
                    journal: Arc::new(EmbeddedJournal::new(dir.db().clone())?),
                    usage: Arc::new(UsageStore::new(dir.db().clone())?),
                    keys: Arc::new(KeyStore::new(dir.db().clone())?),
                    own_key: OwnKey::load_or_create(dir.path())?,
                    cluster: None,
                    tools: Arc::new(EmbeddedTools::open(dir.db().clone())?),
                    billing: Arc::new(EmbeddedBilling::new(dir.db().clone())?),
                })
            }
            Backend::Postgres => {
                let node = node_id(&config.cluster, dir.path())?;
                let pool = storage::connect(&config.storage).await?;
                let identity = embed::identity(config.embedder.kind, &*embedder);
                let dims = embedder.dims();
                let memory = PgMemory::open(pool.clone(), &identity, dims)
                    .await
                    .context("opening the memory store in PostgreSQL")?;
                readiness.mark(Part::Embedder);
                let embed = embed_service(embedder, &config.embedder)?;
                let memory = MemoryService::over(Arc::new(memory), embed, &config.memory);
                readiness.mark(Part::Indexes);
                tracing::info!(node = %node, "node of the postgres backend");
                Ok(Self {
                    memory,
                    records: AgentStore::postgres(pool.clone(), &node).await?,
                    journal: Arc::new(PgJournal::new(pool.clone())),
                    usage: Arc::new(PgUsage::new(pool.clone())),
                    keys: Arc::new(PgAccounts::new(pool.clone())),
                    own_key: OwnKey::load_or_create_in(&pool).await?,
                    tools: Arc::new(PgTools::new(pool.clone())),
                    billing: Arc::new(PgBilling::new(pool.clone())),
                    cluster: Some(Cluster::new(pool, node, &config.cluster)),
                })
            }
        }
    }
}
