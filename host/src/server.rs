//! `wasmind serve`: open the data dir, load the embedder, replay the indexes, compile the
//! agent component, fail agents a previous process left alive, serve HTTP
//! until SIGINT/SIGTERM, then checkpoint the indexes so the next start is quick.

use std::{collections::BTreeMap, net::SocketAddr, path::Path, sync::Arc};

use anyhow::Context;

use crate::{
    accounts::{KeyStore, UsageStore},
    api::{AppState, app},
    blocking::run_blocking,
    config::Config,
    data_dir::DataDir,
    mcp,
    memory::{MemoryService, embed},
    mind,
    runtime::{AgentStore, Runtime, Services},
};

/// Longest wait at exit for agents' tasks, then for the database's other holders.
const SHUTDOWN_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs the server on a multi-threaded tokio runtime until a shutdown signal.
pub fn serve(
    data_dir: &Path,
    listen: SocketAddr,
    config_file: Option<&Path>,
    env: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    init_logging();
    let (config, _) = Config::load(config_file, env)?;
    let dir = DataDir::open(data_dir)?;
    let state = open_state(&dir, config)?;
    let memory = state.memory.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("binding {listen}"))?;
        let addr = listener.local_addr()?;
        tracing::info!("wasmind listening on http://{addr}");
        let (mcp, sessions) = mcp::router(state.clone());
        let closing = async move {
            shutdown_signal().await;
            sessions.close();
        };
        axum::serve(listener, app(state).merge(mcp))
            .with_graceful_shutdown(closing)
            .await?;
        tracing::info!("shutting down: saving indexes");
        run_blocking(move || memory.checkpoint()).await?;
        anyhow::Ok(())
    })?;
    // Agents still winding down hold the services (and so the database): end them, then
    // let the memory writer finish before the database closes.
    runtime.shutdown_timeout(SHUTDOWN_PATIENCE);
    dir.close(SHUTDOWN_PATIENCE);
    Ok(())
}

/// Everything the API serves, opened on `dir`: the embedder, the memory store and its
/// indexes, the Mind, agent records and the agent runtime. `serve` and the benchmarks
/// both start from here.
pub fn open_state(dir: &DataDir, config: Config) -> anyhow::Result<AppState> {
    let embedder = embed::from_config(&config.embedder)?;
    tracing::info!(
        embedder = embedder.name(),
        dims = embedder.dims(),
        "embedder loaded"
    );
    embed::check_identity(dir.db(), config.embedder.kind, &*embedder)?;
    let embed = embed::EmbedService::new(embedder, &config.embedder);
    let memory = MemoryService::open(
        dir.db().clone(),
        &dir.index_dir("memory"),
        embed,
        &config.memory,
    )
    .context("opening the memory store")?;
    let mind = mind::from_config(&config.mind)?;
    let records = AgentStore::new(dir.db().clone())?;
    let usage = UsageStore::new(dir.db().clone())?;
    let services = Arc::new(Services {
        memory: memory.clone(),
        mind: mind.clone(),
        records: records.clone(),
        usage: usage.clone(),
    });
    let runtime = Runtime::start(&config.runtime, &dir.cache_dir(), services)
        .context("starting the agent runtime")?;
    Ok(AppState {
        keys: KeyStore::new(dir.db().clone())?,
        memory,
        config: Arc::new(config),
        runtime,
        records,
        usage,
        mind,
    })
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("WASMIND_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing the SIGTERM handler");
    tokio::select! {
        _ = ctrl_c => {},
        _ = term.recv() => {},
    }
}
