//! The journal as the only door out of the sandbox. The `reach` test guest calls every
//! import of the agent world and every WASI function a guest can reach; it runs live on
//! real services (redb, the memory service with the hash embedder, the offline Mind), then
//! again from its journal with its door shut, so that any call reaching outside during the
//! replay panics. The replay must end as the live run did, having made no call live, and
//! every function the component imports must be journaled (and the journal must show the
//! live run's calls of it) or one whose answer the sandbox itself fixes.

use std::{
    collections::BTreeSet,
    path::Path,
    sync::{Arc, atomic::AtomicBool},
    time::{Duration, Instant},
};

use sha2::{Digest, Sha256};
use wasmtime::{Store, component::types::ComponentItem};

use super::{
    Bounds, Door, EmbeddedJournal, Journal, JournalStore, Keep, Run,
    readiness::{BLOCK, POLL, READY},
    sandbox::{MONOTONIC, RANDOM, WALL},
};
use crate::{
    accounts::{Accounts, KeyStore, Ledger, Plans, TokenBudgets, UsageStore},
    egress::{Egress, EgressConfig},
    memory::{
        MemoryService, Quota,
        embed::{EmbedService, HashEmbedder},
    },
    mind::{self, MindConfig},
    runtime::{
        artifacts::Artifacts,
        bindings::AgentPre,
        config::RuntimeConfig,
        cpu::CpuMeter,
        engine,
        host::http::EXCHANGE,
        records::{AgentStore, Allowance, MemoryMode, tests::record},
        state::{AgentCtx, AgentState, Services},
        stop::StopSignal,
        timings::Recorder,
    },
    tools::{EmbeddedTools, Tools, ToolsConfig, ToolsParts},
};

use wasmind_guests::REACH;

/// Every import whose answer comes from outside the sandbox: its interface, its function,
/// and the function its journal entries name.
const JOURNALED: &[(&str, &str, &str)] = &[
    ("wasmind:agent/mind", "complete", "mind.complete"),
    ("wasmind:agent/memory", "put", "memory.put"),
    (
        "wasmind:agent/memory",
        "put-observed",
        "memory.put_observed",
    ),
    ("wasmind:agent/memory", "get", "memory.get"),
    ("wasmind:agent/memory", "list", "memory.list"),
    ("wasmind:agent/memory", "delete", "memory.delete"),
    ("wasmind:agent/memory", "search", "memory.search"),
    ("wasmind:agent/tools", "list", "tools.list"),
    ("wasmind:agent/tools", "call", "tools.call"),
    ("wasmind:agent/progress", "report", "progress.report"),
    ("wasmind:agent/progress", "log", "progress.log"),
    (
        "wasmind:agent/control",
        "stop-requested",
        "control.stop-requested",
    ),
    ("wasi:clocks/wall-clock", "now", WALL),
    ("wasi:clocks/monotonic-clock", "now", MONOTONIC),
    ("wasi:io/poll", "poll", POLL),
    ("wasi:io/poll", "[method]pollable.ready", READY),
    ("wasi:io/poll", "[method]pollable.block", BLOCK),
    ("wasi:random/random", "get-random-bytes", RANDOM),
    ("wasi:random/random", "get-random-u64", RANDOM),
    ("wasi:random/insecure", "get-insecure-random-bytes", RANDOM),
    ("wasi:random/insecure", "get-insecure-random-u64", RANDOM),
    // `handle` stages the request; the exchange is the call, made on its observation.
    ("wasi:http/outgoing-handler", "handle", EXCHANGE),
];

/// The imports whose answers the sandbox fixes, the same on every run (`*`: every function
/// of the interface), and why.
const LOCAL: &[(&str, &str, &str)] = &[
    (
        "wasi:cli/environment",
        "*",
        "no environment, arguments or directory",
    ),
    ("wasi:cli/exit", "*", "ends the guest"),
    ("wasi:cli/stdin", "*", "an empty pipe"),
    ("wasi:cli/stdout", "*", "a pipe to nowhere"),
    ("wasi:cli/stderr", "*", "a pipe the host keeps"),
    ("wasi:cli/terminal-input", "*", "no terminal"),
    ("wasi:cli/terminal-output", "*", "no terminal"),
    ("wasi:cli/terminal-stdin", "*", "no terminal"),
    ("wasi:cli/terminal-stdout", "*", "no terminal"),
    ("wasi:cli/terminal-stderr", "*", "no terminal"),
    ("wasi:io/error", "*", "errors of the sandbox's own streams"),
    ("wasi:io/streams", "*", "the sandbox's own pipes"),
    ("wasi:clocks/wall-clock", "resolution", "fixed: 1 ns"),
    ("wasi:clocks/monotonic-clock", "resolution", "fixed: 1 ns"),
    (
        "wasi:clocks/monotonic-clock",
        "subscribe-duration",
        "makes a timer, whose readiness is journaled",
    ),
    (
        "wasi:clocks/monotonic-clock",
        "subscribe-instant",
        "makes a timer, whose readiness is journaled",
    ),
    (
        "wasi:random/insecure-seed",
        "*",
        "derived from the agent's id",
    ),
    ("wasi:filesystem/preopens", "*", "no directory granted"),
    (
        "wasi:filesystem/types",
        "*",
        "reached through a directory only",
    ),
    (
        "wasi:sockets/instance-network",
        "*",
        "a handle; every use denied",
    ),
    ("wasi:sockets/network", "*", "denied"),
    ("wasi:sockets/tcp-create-socket", "*", "denied"),
    ("wasi:sockets/tcp", "*", "denied"),
    ("wasi:sockets/udp-create-socket", "*", "denied"),
    ("wasi:sockets/udp", "*", "denied"),
    ("wasi:sockets/ip-name-lookup", "*", "denied"),
    (
        "wasi:http/types",
        "*",
        "requests, responses and bodies; a response is the journaled exchange's",
    ),
];

const AGENT: &str = "ag_reach";
const ACCOUNT: &str = "acme";

/// The services a live run reaches, on a fresh database in `dir`, with the agent's record.
async fn services(dir: &Path) -> Arc<Services> {
    let db = Arc::new(redb::Database::create(dir.join("db")).unwrap());
    let embed = EmbedService::new(Arc::new(HashEmbedder::new(64)), &Default::default());
    let memory =
        MemoryService::open(db.clone(), &dir.join("index"), embed, &Default::default()).unwrap();
    let records = AgentStore::embedded(db.clone()).unwrap();
    records.create(record(AGENT, ACCOUNT)).await.unwrap();
    let accounts: Accounts = Arc::new(KeyStore::new(db.clone()).unwrap());
    let usage: Ledger = Arc::new(UsageStore::new(db.clone()).unwrap());
    let egress = Arc::new(Egress::new(EgressConfig::default(), Plans::default()).unwrap());
    // The key outside what stands for the data dir here (the indexes' folder).
    let config = ToolsConfig {
        secret_key_file: Some(dir.join("keys/tools.key")),
        ..ToolsConfig::default()
    };
    let store = Arc::new(EmbeddedTools::open(db.clone()).unwrap());
    let index = dir.join("index");
    let parts = ToolsParts {
        store,
        egress: egress.clone(),
        accounts: accounts.clone(),
        usage: usage.clone(),
    };
    let tools = Tools::open(parts, &config, &index);
    Arc::new(Services {
        memory,
        mind: mind::from_config(&MindConfig::default()).unwrap(),
        egress,
        tools: Arc::new(tools.await.unwrap()),
        accounts: accounts.clone(),
        budgets: TokenBudgets::new(usage.clone(), accounts, Plans::default()),
        records,
        usage,
        journal: Arc::new(EmbeddedJournal::new(db).unwrap()),
    })
}

/// The agent's context: its run journaled by `journal`, its services behind `door`.
fn context(journal: Arc<Journal>, door: Door) -> Arc<AgentCtx> {
    Arc::new(AgentCtx {
        agent_id: AGENT.into(),
        account: ACCOUNT.into(),
        fence: None,
        memory_quota: Quota::memories(100),
        memory_mode: MemoryMode::Explicit,
        tools: None,
        stop: StopSignal::default(),
        mind_failed: AtomicBool::new(false),
        token_budget: u64::MAX,
        over_tokens: AtomicBool::new(false),
        started: Instant::now(),
        cpu: Arc::new(CpuMeter::new(Duration::from_secs(600))),
        journal,
        door,
        parking: None,
        timings: Arc::new(Recorder::new()),
    })
}

/// Runs the guest of `pre` in a fresh store for `ctx`: what its `run` returned.
async fn run(
    engine: &wasmtime::Engine,
    pre: &AgentPre<AgentState>,
    ctx: Arc<AgentCtx>,
) -> Result<String, String> {
    let mut store = Store::new(engine, AgentState::new(ctx, &RuntimeConfig::default()));
    store.set_epoch_deadline(1 << 40);
    let agent = pre.instantiate_async(&mut store).await.unwrap();
    agent.call_run(&mut store, "reach").await.unwrap()
}

/// Each function the component imports, as (interface without its version, function).
fn imports(engine: &wasmtime::Engine, pre: &AgentPre<AgentState>) -> BTreeSet<(String, String)> {
    let component = pre.instance_pre().component();
    let mut functions = BTreeSet::new();
    for (name, item) in component.component_type().imports(engine) {
        let ComponentItem::ComponentInstance(instance) = item.ty else {
            panic!("the guest imports {name}, not an interface");
        };
        let interface = name.split('@').next().unwrap().to_string();
        for (function, item) in instance.exports(engine) {
            if matches!(item.ty, ComponentItem::ComponentFunc(_)) {
                functions.insert((interface.clone(), function.to_string()));
            }
        }
    }
    functions
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replay_reaches_nothing_outside_and_every_import_is_journaled_or_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let cache = || Artifacts::open(&dir.path().join("cache")).unwrap();
    let compiled = engine::compile(&RuntimeConfig::default(), cache()).unwrap();
    let wasm = std::fs::read(REACH).unwrap();
    let digest: [u8; 32] = Sha256::digest(&wasm).into();
    let pre = engine::load(
        &compiled.engine,
        &compiled.linker,
        &cache(),
        &digest,
        || Ok(wasm),
    )
    .unwrap();
    let services = services(dir.path()).await;
    let store: Arc<dyn JournalStore> = services.journal.clone();
    let journal_of = |recorded| {
        let run = Run {
            account: ACCOUNT.into(),
            agent_id: AGENT.into(),
            fence: None,
        };
        Arc::new(Journal::new(run, store.clone(), recorded, Bounds::NONE))
    };

    // Live: every call made, and recorded.
    let live = journal_of(Vec::new());
    let allowance = Allowance {
        memory_quota: Quota::memories(100),
        cpu_budget: Duration::from_secs(600),
        token_budget: u64::MAX,
    };
    store.begin(&live.run, allowance).await.unwrap();
    let ctx = context(live.clone(), Door::new(services.clone()));
    let answered = run(&compiled.engine, &pre, ctx).await;
    let answer = answered.expect("the live run completes");
    assert!(answer.starts_with("reach "), "{answer}");
    live.finish().unwrap();
    live.store(Keep::Synced).await.unwrap();
    let recorded = store.load(ACCOUNT, AGENT).await.unwrap().unwrap().entries;
    assert_eq!(recorded.len() as u64, live.steps());

    // Replayed with the door shut: the same answer, every call from the journal.
    let replay = journal_of(recorded.clone());
    let ctx = context(replay.clone(), Door::shut(services.clone()));
    let replayed = run(&compiled.engine, &pre, ctx).await;
    assert_eq!(replayed, Ok(answer), "the replay answered as the live run");
    replay.finish().unwrap();
    // No call was made live: not a Mind call or a memory write, nor a clock read, nor the
    // guest's two sleeps (a poll, a block), whose readiness came from the journal.
    assert_eq!(replay.steps(), live.steps());

    let journaled: BTreeSet<&str> = recorded.iter().map(|e| e.func.as_str()).collect();
    for (interface, function) in imports(&compiled.engine, &pre) {
        let fixed = LOCAL
            .iter()
            .any(|(i, f, _)| *i == interface && (*f == "*" || *f == function));
        if fixed {
            continue;
        }
        let Some((_, _, name)) = JOURNALED
            .iter()
            .find(|(i, f, _)| *i == interface && *f == function)
        else {
            panic!("{interface}#{function} is imported but neither journaled nor fixed");
        };
        assert!(
            journaled.contains(name),
            "{interface}#{function} was called but the journal has no `{name}`: {journaled:?}"
        );
    }
}
