//! The one wasmtime `Engine` and the agent component, compiled once.
//!
//! Density on Linux is bounded by the process's mapping limit (`vm.max_map_count`), long
//! before memory: each pooled stack slot costs 2 mappings (all reserved at start) and each
//! live linear memory 2 more (copy-on-write images are off: no RSS gain for small guests,
//! twice the mappings). The pool is sized to an explicit admission cap derived from that
//! limit with headroom for the rest of the process; spawns past the cap are refused.
//! Each live agent may also hold a socket (its Mind call), so the open-files limit,
//! raised to its hard limit at start, bounds the cap too.

use std::{path::Path, time::Duration};

use anyhow::Context;
use sha2::{Digest, Sha256};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig,
    component::{Component, HasSelf, Linker},
};

use super::config::RuntimeConfig;
use super::{
    bindings::{Agent, AgentPre},
    state::AgentState,
};

/// The default agent, built from `examples/default-agent` by the build script.
const DEFAULT_AGENT: &[u8] = include_bytes!(env!("WASMIND_DEFAULT_AGENT_WASM"));

/// Mappings one live agent can cost: its stack slot and its linear memory.
const MAPPINGS_PER_AGENT: u64 = 4;
/// Mappings left for everything else in the process (libraries, threads, index files).
const MAPPINGS_RESERVED: u64 = 8_000;
/// File descriptors one live agent can hold: its Mind connection.
const FDS_PER_AGENT: u64 = 1;
/// File descriptors left for everything else (database, index segments, HTTP clients).
const FDS_RESERVED: u64 = 1_000;
/// Core instances, tables and memories one agent component may have.
const CORE_INSTANCES_PER_AGENT: u32 = 8;
const TABLES_PER_AGENT: u32 = 4;
const MEMORIES_PER_AGENT: u32 = 1;
/// How often the epoch advances: the time slice of CPU-bound guests.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The largest number of live agents this process can hold, from its mapping limit and
/// its open-files limit (which this raises to the hard limit first).
pub fn admission_cap(configured: Option<u32>) -> u32 {
    let max_maps = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(65_530);
    let by_maps = max_maps.saturating_sub(MAPPINGS_RESERVED) / MAPPINGS_PER_AGENT;
    let by_fds = raise_open_files_limit().saturating_sub(FDS_RESERVED) / FDS_PER_AGENT;
    let derived = (by_maps.min(by_fds) * 9 / 10).max(1);
    let derived = u32::try_from(derived).unwrap_or(u32::MAX);
    configured.map_or(derived, |c| c.clamp(1, derived))
}

/// Raises the soft open-files limit to the hard one (a common soft default of 1,024 would
/// starve thousands of agents' Mind connections) and returns the limit now in force.
fn raise_open_files_limit() -> u64 {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => limit.current = limit.maximum,
            Err(e) => tracing::warn!(error = %e, "could not raise the open-files limit"),
        }
    }
    limit.current.unwrap_or(u64::MAX)
}

/// A compiled agent ready to instantiate cheaply, and the engine behind it.
pub struct Compiled {
    pub engine: Engine,
    pub pre: AgentPre<AgentState>,
    pub cap: u32,
}

/// Builds the engine for `cap` agents, compiles (or loads from `cache_dir`) the agent
/// component and links it. Starts the epoch ticker.
pub fn compile(config: &RuntimeConfig, cache_dir: &Path) -> anyhow::Result<Compiled> {
    let cap = admission_cap(config.max_agents);
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
        .memory_init_cow(false)
        .concurrency_support(false)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    let engine =
        Engine::new(&wasm).map_err(|e| anyhow::anyhow!("creating the wasm engine: {e:#}"))?;
    let bytes = match &config.component {
        Some(path) => std::fs::read(path)
            .with_context(|| format!("reading agent component {}", path.display()))?,
        None => DEFAULT_AGENT.to_vec(),
    };
    let component = load_cached(&engine, &bytes, cache_dir)?;
    let mut linker = Linker::<AgentState>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    Agent::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)?;
    let pre = AgentPre::new(linker.instantiate_pre(&component)?)?;
    start_ticker(&engine);
    Ok(Compiled { engine, pre, cap })
}

/// Compiling takes tens of milliseconds; loading a precompiled artifact a fraction of
/// one. Artifacts are keyed by the component's bytes and the engine's settings.
fn load_cached(engine: &Engine, wasm: &[u8], cache_dir: &Path) -> anyhow::Result<Component> {
    let mut hasher = Sha256::new();
    hasher.update(wasm);
    std::hash::Hash::hash(
        &engine.precompile_compatibility_hash(),
        &mut HashWriter(&mut hasher),
    );
    let path = cache_dir.join(format!("{}.cwasm", hex::encode(&hasher.finalize()[..16])));
    if path.exists()
        && let Ok(component) = deserialize(engine, &path)
    {
        return Ok(component);
    }
    let artifact = engine
        .precompile_component(wasm)
        .map_err(|e| anyhow::anyhow!("compiling the agent component: {e:#}"))?;
    std::fs::create_dir_all(cache_dir)?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, &artifact)?;
    std::fs::rename(&tmp, &path)?;
    deserialize(engine, &path)
}

#[allow(unsafe_code)]
fn deserialize(engine: &Engine, path: &Path) -> anyhow::Result<Component> {
    // SAFETY: the file was written by `precompile_component` of an engine with the same
    // compatibility hash (it is part of the file name), into a cache only this process
    // writes, via write-then-rename so it is never seen half-written.
    let component = unsafe { Component::deserialize_file(engine, path) }?;
    Ok(component)
}

/// Feeds `Hash` output into a SHA-256.
struct HashWriter<'a>(&'a mut Sha256);

impl std::hash::Hasher for HashWriter<'_> {
    fn finish(&self) -> u64 {
        0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
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
        let derived = admission_cap(None);
        assert!(derived >= 1);
        assert_eq!(admission_cap(Some(5)), 5.min(derived));
        assert_eq!(admission_cap(Some(u32::MAX)), derived);
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        assert_eq!(limit.current, limit.maximum, "the soft limit was raised");
        let fds = limit.current.unwrap_or(u64::MAX);
        assert!(u64::from(derived) <= fds.saturating_sub(FDS_RESERVED).max(1));
    }
}
