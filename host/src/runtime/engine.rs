//! The one wasmtime `Engine` and the agent component, compiled once.
//!
//! Density on Linux is bounded by the process's mapping limit (`vm.max_map_count`), long
//! before memory: each pooled stack slot costs 2 mappings (all reserved at start) and each
//! live linear memory 2 more, or 4 with copy-on-write images of the guest's data (which
//! save the copy of its data segments into every instance: ~36 KiB of RSS per agent and
//! most of instantiation's time). So images are used only where they cost no live agent:
//! when the address space or `max_agents`, not the mappings, bound the cap (at the
//! default 4 GiB reservation that takes `vm.max_map_count` ≥ ~100,000, e.g.
//! Elasticsearch's documented 262,144). And each pooled linear memory reserves address
//! space — 4 GiB and a guard by default, so no access needs a bounds check — which bounds
//! the cap to ~14,000 in the 64 TiB taken for them; `[runtime] memory_reservation_mib`
//! trades a bounds check per access for more slots. The pool is sized to an explicit admission
//! cap derived from both, with headroom for the rest of the process; spawns past the cap
//! are refused. Agents hold no file descriptor of their own (the Mind's connections are a
//! bounded pool); the open-files limit is raised to its hard limit at start all the same.

use std::time::Duration;

use anyhow::Context;
use sha2::{Digest, Sha256};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig,
    component::{Component, HasSelf, Linker},
};

use super::config::RuntimeConfig;
use super::{
    artifacts::Artifacts,
    bindings::{Agent, AgentPre},
    host::http,
    journal::{WASI, add_sandbox_to_linker},
    state::AgentState,
};

/// The default agent, built from `examples/default-agent` (by the `wasmind-guests` crate).
const DEFAULT_AGENT: &[u8] = wasmind_guests::DEFAULT_AGENT_WASM;

/// Mappings one live agent can cost: its stack slot (2) and its linear memory (2, or 4
/// with copy-on-write images).
const fn mappings_per_agent(cow: bool) -> u64 {
    if cow { 6 } else { 4 }
}
/// Mappings left for everything else in the process (libraries, threads, index files).
const MAPPINGS_RESERVED: u64 = 8_000;
/// Address space the pooled linear memories may take, in one piece: 64 of x86-64's
/// 128 TiB (a position-independent executable is loaded near 85 TiB, so the largest free
/// piece is below that).
const ADDRESS_SPACE: u64 = 64 << 40;
/// The guard after a linear memory reserved smaller than 4 GiB (accesses are bounds
/// checked then, so the guard only has to catch an offset's overrun).
const SMALL_GUARD: u64 = 64 << 10;
/// The reservation and guard wasmtime gives a linear memory by default on 64-bit hosts.
const DEFAULT_RESERVATION: u64 = 4 << 30;
const DEFAULT_GUARD: u64 = 32 << 20;
/// Core instances, tables and memories one agent component may have. 16 core instances:
/// a componentize-py (Python) agent has 14 — CPython, its libc and C++ runtime, the
/// WASI adapter, the bindings and the component model's shims — where a Rust agent has 3
/// to 5; each costs a little bookkeeping, no memory or table of its own (it has 2 tables
/// and 1 memory in all, as a Rust agent does).
const CORE_INSTANCES_PER_AGENT: u32 = 16;
const TABLES_PER_AGENT: u32 = 4;
const MEMORIES_PER_AGENT: u32 = 1;
/// How often the epoch advances: the time slice of CPU-bound guests.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// How the pool lays out agents, from the mapping limit and the configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Layout {
    /// Most live agents.
    pub cap: u32,
    /// Copy-on-write images of the guests' data.
    pub cow: bool,
    /// Address space reserved per linear memory, and its guard, in bytes.
    pub reservation: u64,
    pub guard: u64,
}

/// The largest number of live agents this process can hold — from its mapping limit and
/// the address space their linear memories reserve — and how the pool lays them out.
/// Raises the open-files limit to its hard limit first.
pub fn layout(config: &RuntimeConfig) -> Layout {
    raise_open_files_limit();
    let max_maps = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(65_530);
    let (reservation, guard) = match config.memory_reservation_mib {
        Some(mib) => (
            (u64::from(mib).max(u64::from(config.memory_limit_mib))) << 20,
            SMALL_GUARD,
        ),
        None => (DEFAULT_RESERVATION, DEFAULT_GUARD),
    };
    let by_maps = |cow| max_maps.saturating_sub(MAPPINGS_RESERVED) / mappings_per_agent(cow);
    let by_address = ADDRESS_SPACE / (reservation + guard);
    let bound = by_address.min(
        config
            .max_agents
            .map_or(u64::MAX, |c| u64::from(c) * 10 / 9),
    );
    // Images where they cost no live agent: when the mappings are not what bounds the cap.
    let cow = by_maps(true) >= bound;
    let derived = (by_maps(cow).min(by_address) * 9 / 10).max(1);
    let derived = u32::try_from(derived).unwrap_or(u32::MAX);
    Layout {
        cap: config.max_agents.map_or(derived, |c| c.clamp(1, derived)),
        cow,
        reservation,
        guard,
    }
}

/// Raises the soft open-files limit to the hard one (a common soft default of 1,024 would
/// starve thousands of agents' Mind connections, up to `[mind] max_connections` sockets).
fn raise_open_files_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::warn!(error = %e, "could not raise the open-files limit");
        }
    }
}

/// The engine every agent runs on, the linker of what the sandbox offers, and the agent
/// spawns run when they name none.
pub struct Compiled {
    pub engine: Engine,
    /// WASI p2 and the `wasmind:agent` interfaces: every import an agent may have.
    pub linker: Linker<AgentState>,
    /// The default agent (the built-in one, or the operator's `[runtime] component`).
    pub default: AgentPre<AgentState>,
    /// Where precompiled artifacts are kept.
    pub artifacts: Artifacts,
    pub layout: Layout,
}

/// Why a component could not be made ready to run.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The bytes are not a component this engine compiles, imports something the linker
    /// does not offer, or lack the `run` export: the component's fault, with what is wrong.
    #[error("{0}")]
    Invalid(String),
    /// Reading or writing the artifact failed: the host's fault.
    #[error("component artifact: {0}")]
    Io(#[from] std::io::Error),
}

/// Builds the engine for [`layout`]'s cap of agents and its linker, and loads (compiling on
/// first use into `artifacts`) the default agent component. Starts the epoch ticker.
pub fn compile(config: &RuntimeConfig, artifacts: Artifacts) -> anyhow::Result<Compiled> {
    let layout = layout(config);
    let engine = engine(config, &layout)?;
    let bytes = match &config.component {
        Some(path) => std::fs::read(path)
            .with_context(|| format!("reading agent component {}", path.display()))?,
        None => DEFAULT_AGENT.to_vec(),
    };
    let linker = sandbox_linker(&engine)?;
    let digest: [u8; 32] = Sha256::digest(&bytes).into();
    let default = load(&engine, &linker, &artifacts, &digest, || Ok(bytes))
        .map_err(|e| anyhow::anyhow!("loading the agent component: {e}"))?;
    start_ticker(&engine);
    Ok(Compiled {
        engine,
        linker,
        default,
        artifacts,
        layout,
    })
}

/// The engine for `layout.cap` live agents within `config`'s limits.
fn engine(config: &RuntimeConfig, layout: &Layout) -> anyhow::Result<Engine> {
    let cap = layout.cap;
    let memory_bytes = config.memory_limit_mib as usize * (1 << 20);
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(cap)
        .total_stacks(cap)
        .total_memories(cap * MEMORIES_PER_AGENT)
        .total_tables(cap * TABLES_PER_AGENT)
        .total_core_instances(cap * CORE_INSTANCES_PER_AGENT)
        .max_core_instances_per_component(CORE_INSTANCES_PER_AGENT)
        .max_tables_per_component(TABLES_PER_AGENT)
        .max_memories_per_component(MEMORIES_PER_AGENT)
        .max_memory_size(memory_bytes);
    let mut wasm = Config::new();
    wasm.wasm_component_model(true)
        .epoch_interruption(true)
        .memory_init_cow(layout.cow)
        .memory_reservation(layout.reservation)
        .memory_guard_size(layout.guard)
        .concurrency_support(false)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&wasm).map_err(|e| anyhow::anyhow!("creating the wasm engine: {e:#}"))
}

/// What the sandbox offers an agent to import: WASI 0.2 (its capabilities are granted per
/// store, none by default; its clocks and random journaled), `wasi:http`'s outgoing
/// requests (through the egress door, journaled) and the `wasmind:agent` interfaces.
fn sandbox_linker(engine: &Engine) -> anyhow::Result<Linker<AgentState>> {
    let mut linker = Linker::<AgentState>::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    add_sandbox_to_linker(&mut linker)?;
    http::add_to_linker(&mut linker, WASI)?;
    Agent::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)?;
    Ok(linker)
}

/// The component whose bytes have SHA-256 `digest`, linked and ready to instantiate: from
/// its precompiled artifact when the cache has one that checks out (a deserialization, a
/// fraction of a millisecond), else compiled from `wasm()` into the cache first (tens of
/// milliseconds and more). A compilation, link or export failure is [`LoadError::Invalid`],
/// naming what is wrong; the artifact of a component that does not link is not kept.
pub fn load(
    engine: &Engine,
    linker: &Linker<AgentState>,
    artifacts: &Artifacts,
    digest: &[u8; 32],
    wasm: impl FnOnce() -> std::io::Result<Vec<u8>>,
) -> Result<AgentPre<AgentState>, LoadError> {
    let path = artifacts.path(engine, digest);
    let cached = artifacts.read(&path)?;
    let component = match cached.map(|code| deserialize(engine, &code)) {
        Some(Ok(component)) => component,
        _ => {
            let code = engine
                .precompile_component(&wasm()?)
                .map_err(|e| LoadError::Invalid(format!("it does not compile: {e:#}")))?;
            artifacts.write(&path, &code)?;
            // The pooling allocator checks the component's needs here.
            deserialize(engine, &code).map_err(|e| {
                LoadError::Invalid(format!("it does not fit the sandbox's limits ({e:#})"))
            })?
        }
    };
    link(linker, &component).inspect_err(|_| {
        let _ = std::fs::remove_file(&path);
    })
}

/// Links `component` against what the sandbox offers and checks its `run` export.
fn link(
    linker: &Linker<AgentState>,
    component: &Component,
) -> Result<AgentPre<AgentState>, LoadError> {
    let pre = linker.instantiate_pre(component).map_err(|e| {
        LoadError::Invalid(format!(
            "it imports what this sandbox does not offer ({e:#}); an agent may import WASI \
             0.2 and the wasmind:agent interfaces"
        ))
    })?;
    AgentPre::new(pre).map_err(|e| {
        LoadError::Invalid(format!(
            "it does not export `run: func(task: string) -> result<string, string>` of the \
             wasmind:agent world ({e:#})"
        ))
    })
}

#[allow(unsafe_code)]
fn deserialize(engine: &Engine, code: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `code` was made by `precompile_component` of an engine with the same
    // compatibility hash: it is fresh from it, or read from the cache with a tag of the
    // cache's key over its name (which holds that hash) and these very bytes.
    unsafe { Component::deserialize(engine, code) }
}

/// One thread advances the epoch for every store: guests running wasm yield to the
/// scheduler at each tick, and a store marked for interruption traps at the next one.
fn start_ticker(engine: &Engine) {
    let engine = engine.weak();
    std::thread::Builder::new()
        .name("wasm-epoch".into())
        .spawn(move || {
            while let Some(engine) = engine.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })
        .expect("spawning the epoch ticker");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_bounded_by_the_limits_and_the_configuration() {
        let config = RuntimeConfig::default();
        let derived = layout(&config);
        assert!(derived.cap >= 1);
        assert_eq!((derived.reservation, derived.guard), (4 << 30, 32 << 20));
        assert!(
            u64::from(derived.cap) <= ADDRESS_SPACE / (4 << 30),
            "4 GiB reservations fit 16,384 at most: {derived:?}"
        );
        let capped = |max_agents| {
            layout(&RuntimeConfig {
                max_agents,
                ..config.clone()
            })
            .cap
        };
        assert_eq!(capped(Some(5)), 5.min(derived.cap));
        assert_eq!(capped(Some(u32::MAX)), derived.cap);
        let small = layout(&RuntimeConfig {
            memory_reservation_mib: Some(1),
            ..config.clone()
        });
        assert_eq!(small.reservation, 64 << 20, "never below the memory limit");
        assert!(small.cap >= derived.cap);
        let few = layout(&RuntimeConfig {
            max_agents: Some(100),
            ..config.clone()
        });
        assert!(
            few.cow,
            "100 agents leave mappings for copy-on-write images"
        );
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        assert_eq!(limit.current, limit.maximum, "the soft limit was raised");
    }

    /// Loads the component in `text` (the text format) into a fresh engine and cache.
    fn load_text(text: &str) -> (tempfile::TempDir, Result<AgentPre<AgentState>, LoadError>) {
        let config = RuntimeConfig {
            max_agents: Some(2),
            ..RuntimeConfig::default()
        };
        let engine = engine(&config, &layout(&config)).unwrap();
        let linker = sandbox_linker(&engine).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let artifacts = Artifacts::open(cache.path()).unwrap();
        let wasm = wat::parse_str(text).unwrap();
        let digest: [u8; 32] = Sha256::digest(&wasm).into();
        let loaded = load(&engine, &linker, &artifacts, &digest, || Ok(wasm));
        (cache, loaded)
    }

    fn refusal(text: &str) -> String {
        match load_text(text).1 {
            Err(LoadError::Invalid(message)) => message,
            Err(e) => panic!("not a refusal: {e}"),
            Ok(_) => panic!("loaded"),
        }
    }

    #[test]
    fn refusals_name_the_import_or_export_at_fault_and_keep_no_artifact() {
        let missing =
            refusal(r#"(component (import "evil:thing/x" (instance (export "f" (func)))))"#);
        assert!(missing.contains("`evil:thing/x`"), "{missing}");
        assert!(missing.contains("does not offer"), "{missing}");
        let no_run = refusal("(component)");
        assert!(no_run.contains("export `run"), "{no_run}");
        let wrong_type = refusal(
            r#"(component
                 (core module $m (func (export "f")))
                 (core instance $i (instantiate $m))
                 (func $run (canon lift (core func $i "f")))
                 (export "run" (func $run)))"#,
        );
        assert!(wrong_type.contains("run"), "{wrong_type}");
        let two_memories = refusal(
            r#"(component
                 (core module $m (memory 1))
                 (core instance (instantiate $m))
                 (core instance (instantiate $m)))"#,
        );
        assert!(two_memories.contains("sandbox's limits"), "{two_memories}");
        let big = refusal(
            r#"(component
                 (core module $m (memory 1100))
                 (core instance (instantiate $m)))"#,
        );
        assert!(big.contains("sandbox's limits"), "{big}");
        let (cache, loaded) = load_text("(component)");
        assert!(loaded.is_err());
        let kept: Vec<_> = std::fs::read_dir(cache.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|name| name.to_str() != Some(super::super::artifacts::KEY_FILE))
            .collect();
        assert!(kept.is_empty(), "no artifact kept: {kept:?}");
    }
}
