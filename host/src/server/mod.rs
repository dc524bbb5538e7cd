//! `wasmind serve`: open the data dir, answer the admin socket and HTTP at once (health
//! routes, and 503 for the API while loading), load the embedder, replay the indexes,
//! compile the agent component, resume the agents a previous process left alive (from
//! their journals), then serve the API until SIGINT/SIGTERM, and checkpoint the indexes so
//! the next start is quick. On the postgres backend (`stores`) the node has no admin socket
//! (the CLI reaches the database) and its agents are leased from the database
//! (`runtime::Cluster`).

mod body_pace;
mod door;
mod http;
pub(crate) mod in_flight;
mod per_address;
mod reembed;
mod stores;
mod tcp;
mod write_idle;

use std::{collections::BTreeMap, net::SocketAddr, path::Path, sync::Arc};

use anyhow::Context;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// `serve_http` is public so the benchmarks serve through the same listener (its timeouts
/// and cap) as `wasmind serve`.
pub use self::http::{HttpConfig, serve as serve_http};
pub use self::reembed::reembed;
use self::stores::Stores;
use crate::{
    accounts::{Plans, TokenBudgets},
    admin::{self, Admin, LiveCounts},
    api::{self, AppSlot, Loaded, app, front},
    app::{AppState, InFlight},
    billing::Billing,
    blocking::run_blocking,
    config::Config,
    console::{Console, Streams},
    data_dir::DataDir,
    egress::Egress,
    health::{Part, Readiness},
    mcp,
    memory::embed,
    metrics::Exporter,
    mind::{self, MindCheck, MindStatus},
    runtime::{Runtime, Services},
    storage::Backend,
    tools::{Tools, ToolsParts},
};

/// Longest wait at exit for the runtime's blocking work, then for the database's other
/// holders to let go (at once when idle; under load, the write group in flight and the
/// guests' tasks being dropped).
const SHUTDOWN_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs the server on a multi-threaded tokio runtime until a shutdown signal.
pub fn serve(
    data_dir: &Path,
    listen: SocketAddr,
    config_file: Option<&Path>,
    env: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    let (config, _) = Config::load(config_file, env)?;
    // Before anything that emits is built: handles made earlier would record nowhere.
    let exporter = config.metrics.enabled.then(Exporter::install).transpose()?;
    let dir = DataDir::open(data_dir)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // On postgres the CLI reaches the database itself: no socket to answer.
    let admin_socket = match config.storage.backend {
        Backend::Embedded => Some(serve_admin(&runtime, &dir, data_dir, &config.plans)?),
        Backend::Postgres => None,
    };
    let readiness = Arc::new(Readiness::new(MindCheck::checking(&config.mind)));
    runtime.spawn(check_mind(config.mind.clone(), readiness.clone()));
    let slot = AppSlot::default();
    let (listener, addr) = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("binding {listen}"))?;
        let addr = listener.local_addr()?;
        anyhow::Ok((listener, addr))
    })?;
    tracing::info!("wasmind loading (GET /readyz answers 200 once ready), bound to http://{addr}");
    // SIGINT/SIGTERM keep their default (exit at once) until the state is loaded: there
    // is nothing to save before that, and a long index replay should not hold them up.
    let (loaded, signals) = tokio::sync::oneshot::channel::<(Signals, mcp::Closer, Streams)>();
    let front = front(readiness.clone(), slot.clone());
    let http = config.http.clone();
    let server = runtime.spawn(async move {
        let shutdown = async move {
            if let Ok((signals, sessions, streams)) = signals.await {
                signals.recv().await;
                // Open event streams (MCP sessions', the console's) are responses that
                // would otherwise hold the shutdown up.
                sessions.close();
                streams.close();
            }
        };
        http::serve(listener, &front, &http, shutdown).await
    });
    // Loads on this thread while the runtime's workers already answer health checks.
    let state = runtime.block_on(load_state(&dir, config, &readiness))?;
    let memory = state.memory.clone();
    let streams = state.console.streams.clone();
    let (mcp, sessions, mcp_sessions) = mcp::router(state.clone());
    if let Some((_, admin)) = &admin_socket {
        admin.show_live(Arc::new(Counted(state.clone(), mcp_sessions)));
    }
    runtime.spawn(state.billing.clone().sweep_forever());
    let keys = state.keys.clone();
    let router = runtime.block_on(api::mount_metrics(
        app(state.clone()).merge(mcp),
        exporter,
        state,
    ))?;
    let _ = slot.set(Loaded { api: router, keys });
    // Only now, with the API installed, may `/readyz` say ready.
    readiness.mark(Part::Runtime);
    let _ = loaded.send((Signals::install(&runtime)?, sessions, streams));
    tracing::info!("wasmind ready, listening on http://{addr}");
    runtime.block_on(async move {
        server.await?.context("serving HTTP")?;
        tracing::info!("shutting down: saving indexes");
        run_blocking(move || memory.checkpoint()).await?;
        anyhow::Ok(())
    })?;
    // The database must have no other holder when it closes, or the next start repairs
    // it. The state holds it (the memory writer's thread runs until the state's last
    // handle goes; the agents' tasks hold it on the guests' threads, which stop with the
    // agent runtime's last handle). Its handles are the loaded API's (in `slot`), the admin
    // socket's live counts, and the runtime's tasks': let go of each, then wait for those
    // threads to let go of the database. Live agents are not ended: their journals keep
    // them, and the next start resumes them.
    drop(slot);
    drop(admin_socket);
    runtime.shutdown_timeout(SHUTDOWN_PATIENCE);
    dir.close(SHUTDOWN_PATIENCE);
    Ok(())
}

/// Binds the data dir's admin socket and answers it on `runtime` from now on, so keys can
/// be managed while the rest loads; the admin it answers with is returned, to be shown the
/// live counts once the state is loaded. The socket file goes when the bound socket drops.
fn serve_admin(
    runtime: &tokio::runtime::Runtime,
    dir: &DataDir,
    data_dir: &Path,
    plans: &Plans,
) -> anyhow::Result<(admin::socket::Bound, Admin)> {
    let bound = admin::socket::bind(data_dir)?;
    let (admin, listener) = (Admin::open(dir.db(), plans.clone())?, bound.listener()?);
    let answering = admin.clone();
    runtime.spawn(async move {
        if let Err(e) = admin::socket::serve(listener, answering).await {
            tracing::error!(error = %e, "the admin socket stopped");
        }
    });
    Ok((bound, admin))
}

/// The live counts `wasmind usage` shows through the admin socket, from the loaded state
/// and the MCP sessions.
struct Counted(AppState, Arc<mcp::Sessions>);

impl LiveCounts for Counted {
    fn uploads_in_hour(&self, account: &str) -> u32 {
        self.0.runtime.uploads_in_hour(account)
    }

    fn streams_open(&self, account: &str) -> u32 {
        self.0.console.streams.count(account)
    }

    fn mcp_sessions_open(&self, account: &str) -> u32 {
        self.1.open(account)
    }
}

/// Everything the API serves, opened on `dir`: the embedder, the memory store and its
/// indexes, the Mind, agent records and the agent runtime. The benchmarks start from here.
pub async fn open_state(dir: &DataDir, config: Config) -> anyhow::Result<AppState> {
    let readiness = Readiness::new(MindCheck::checking(&config.mind));
    load_state(dir, config, &readiness).await
}

/// [`open_state`], marking the embedder and the indexes on `readiness` as they come up (the
/// runtime is marked by `serve` once the API built on it is installed).
async fn load_state(
    dir: &DataDir,
    config: Config,
    readiness: &Readiness,
) -> anyhow::Result<AppState> {
    let embedder = embed::from_config(&config.embedder)?;
    tracing::info!(
        embedder = embedder.name(),
        dims = embedder.dims(),
        "embedder loaded"
    );
    let Stores {
        memory,
        records,
        journal,
        usage,
        keys,
        own_key,
        cluster,
        tools,
        billing,
    } = Stores::open(dir, &config, embedder, readiness).await?;
    let mind = mind::from_config(&config.mind)?;
    let egress = Egress::new(config.egress.clone(), config.plans.clone());
    let egress = Arc::new(egress.context("setting up egress")?);
    let parts = ToolsParts {
        store: tools,
        egress: egress.clone(),
        accounts: keys.clone(),
        usage: usage.clone(),
    };
    let tools = Tools::open(parts, &config.tools, dir.path())
        .await
        .context("setting up tools")?;
    let tools = Arc::new(tools);
    let budgets = TokenBudgets::new(usage.clone(), keys.clone(), config.plans.clone());
    let services = Arc::new(Services {
        memory: memory.clone(),
        mind: mind.clone(),
        egress,
        tools: tools.clone(),
        accounts: keys.clone(),
        records: records.clone(),
        usage: usage.clone(),
        budgets: budgets.clone(),
        journal,
    });
    let runtime = Runtime::start(&config.runtime, dir, services, cluster)
        .await
        .context("starting the agent runtime")?;
    let console = Console::open(own_key, &config.console, keys.clone())
        .context("setting up console sign-in")?;
    let billing = Billing::open(&config.billing, billing, keys.clone());
    let billing = Arc::new(billing.context("setting up billing")?);
    Ok(AppState {
        billing,
        in_flight: InFlight::new(config.plans.clone()),
        keys,
        console: Arc::new(console),
        memory,
        config: Arc::new(config),
        runtime,
        records,
        usage,
        budgets,
        mind,
        tools,
    })
}

/// Checks the Mind's provider once, and says what it found in the log and on `/readyz`.
async fn check_mind(cfg: mind::MindConfig, readiness: Arc<Readiness>) {
    let check = mind::probe(&cfg).await;
    match check.status {
        MindStatus::Ok | MindStatus::Offline => {
            tracing::info!(provider = %check.provider, model = %check.model, "mind: {}", check.message);
        }
        _ => {
            tracing::warn!(provider = %check.provider, model = %check.model, status = ?check.status,
                "mind: {}; agents will fail until this is fixed", check.message);
        }
    }
    readiness.set_mind(check);
}

/// SIGINT and SIGTERM, caught from the moment [`Signals::install`] returns (so a signal
/// sent as soon as the server says it is ready already shuts it down gracefully).
struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    fn install(runtime: &tokio::runtime::Runtime) -> std::io::Result<Self> {
        let _context = runtime.enter();
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Waits for either signal.
    async fn recv(mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {},
            _ = self.terminate.recv() => {},
        }
    }
}
