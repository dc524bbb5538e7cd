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
        embed::{self, EmbedService, Embedder, EmbedderConfig, Recorded},
        reembed::{Progress, Upgrade},
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

/// The embedder's service that serves a data dir whose record `recorded` names, and the
/// re-embedding with `embedder` it asks for, if any (its target's bulk lane standing aside
/// for the requests the serving one serves).
pub(super) fn serving(
    recorded: Recorded,
    embedder: Arc<dyn Embedder>,
    config: &EmbedderConfig,
) -> anyhow::Result<(EmbedService, Option<Upgrade>)> {
    let (recorded, fresh) = match recorded {
        Recorded::Upgrading { recorded, fresh } => (recorded, fresh),
        Recorded::Same { abandoned } => {
            if abandoned {
                tracing::warn!(
                    "the re-embedding asked for earlier is abandoned: the configured embedder is the recorded one again"
                );
            }
            return Ok((embed_service(embedder, config)?, None));
        }
    };
    let to = embed::identity(config.kind, &*embedder);
    let serving = embed::from_config(&embed::serving_config(&recorded, config, embedder.dims())?)?;
    tracing::info!(from = %recorded, %to, "re-embedding the memories in the background; the recorded embedder serves until it is done");
    let serving = embed_service(serving, config)?;
    let reranker = embed::locate_reranker(config).context("finding the cross-encoder")?;
    let target = serving.alongside(embedder, config, Some(reranker));
    let progress = Arc::new(Progress::new(recorded, to));
    Ok((
        serving,
        Some(Upgrade {
            target,
            fresh,
            progress,
        }),
    ))
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
                let (kind, upgrade) = (config.embedder.kind, config.embedder.upgrade);
                let recorded = embed::check_identity(dir.db(), kind, &*embedder, upgrade)?;
                let (embed, upgrade) = serving(recorded, embedder, &config.embedder)?;
                if let Some(upgrade) = &upgrade {
                    readiness.set_reembed(upgrade.progress.clone());
                }
                readiness.mark(Part::Embedder);
                let upgrading = upgrade.is_some();
                let memory = MemoryService::open_upgrading(
                    dir.db().clone(),
                    &dir.index_dir("memory"),
                    embed,
                    &config.memory,
                    upgrade,
                )
                .context("opening the memory store")?;
                readiness.mark(Part::Indexes);
                if upgrading {
                    let memory = memory.clone();
                    tokio::spawn(async move { memory.reembed_in_background().await });
                }
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
                anyhow::ensure!(
                    !config.embedder.upgrade,
                    "re-embedding is not available on the postgres backend yet: `[embedder] \
                     upgrade` (env WASMIND_EMBEDDER_UPGRADE) works on the embedded backend \
                     only; unset it, and keep the embedder the database records"
                );
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
