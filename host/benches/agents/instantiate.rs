//! Where instantiation time goes: the default agent component instantiated from an
//! `InstancePre` in a bare engine (imports defined as traps: nothing runs), with the
//! engine settings of `runtime/engine.rs` and with one setting changed at a time.
//! Phase `instantiate`; not part of the server measurements.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};

use crate::harness::{mappings, rss_kib, summary};

/// The default agent component as the build scripts left it.
fn default_agent() -> PathBuf {
    if let Some(path) = std::env::var_os("WASMIND_BENCH_DEFAULT_AGENT") {
        return PathBuf::from(path);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")),
        PathBuf::from,
    );
    target.join("guests/wasm32-wasip2/release/default_agent.wasm")
}

struct Variant {
    name: &'static str,
    pooling: bool,
    cow: bool,
}

fn engine(v: &Variant, cap: u32) -> Engine {
    let mut wasm = Config::new();
    wasm.wasm_component_model(true)
        .epoch_interruption(true)
        .memory_init_cow(v.cow)
        .concurrency_support(false);
    if v.pooling {
        // As runtime/engine.rs sizes it.
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(cap)
            .total_stacks(cap)
            .total_memories(cap)
            .total_tables(cap * 4)
            .total_core_instances(cap * 16)
            .max_core_instances_per_component(16)
            .max_tables_per_component(4)
            .max_memories_per_component(1)
            .max_memory_size(64 << 20);
        wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    Engine::new(&wasm).expect("engine")
}

pub fn run(samples: usize) {
    let path = default_agent();
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    println!(
        "\n== instantiate: {} ({} KiB), bare engine, imports as traps ==",
        path.display(),
        bytes.len() / 1024
    );
    let variants = [
        Variant {
            name: "pooling, CoW off (as served at the default mapping limit)",
            pooling: true,
            cow: false,
        },
        Variant {
            name: "pooling, CoW on",
            pooling: true,
            cow: true,
        },
        Variant {
            name: "on-demand, CoW on",
            pooling: false,
            cow: true,
        },
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let cap = u32::try_from(samples).unwrap_or(u32::MAX).max(16);
    for v in &variants {
        let engine = engine(v, cap);
        let component = Component::new(&engine, &bytes).expect("compile");
        let mut linker = Linker::<()>::new(&engine);
        linker
            .define_unknown_imports_as_traps(&component)
            .expect("trap imports");
        let pre = linker.instantiate_pre(&component).expect("pre");
        let new_store = || {
            let mut store = Store::new(&engine, ());
            store.set_epoch_deadline(u64::MAX / 2);
            store
        };
        rt.block_on(async {
            // Fresh slots: every instance stays alive, as live agents do.
            let (rss_before, maps_before) = (rss_kib(), mappings());
            let mut live = Vec::with_capacity(samples);
            let mut fresh = Vec::with_capacity(samples);
            let mut stores = Vec::with_capacity(samples);
            for _ in 0..samples {
                let t = Instant::now();
                let mut store = new_store();
                let store_new = t.elapsed();
                let t = Instant::now();
                let instance = pre
                    .instantiate_async(&mut store)
                    .await
                    .expect("instantiate");
                fresh.push(t.elapsed());
                live.push(store_new);
                stores.push((store, instance));
            }
            let per_instance = (rss_kib() as f64 - rss_before as f64) / samples as f64;
            let maps_per_instance = (mappings() as f64 - maps_before as f64) / samples as f64;
            drop(stores);
            // Reused slots: one instance at a time.
            let mut reused: Vec<Duration> = Vec::with_capacity(samples);
            for _ in 0..samples {
                let mut store = new_store();
                let t = Instant::now();
                let instance = pre
                    .instantiate_async(&mut store)
                    .await
                    .expect("instantiate");
                reused.push(t.elapsed());
                drop((instance, store));
            }
            println!("{}:", v.name);
            println!("  Store::new                      {}", summary(&live));
            println!("  instantiate, fresh slots        {}", summary(&fresh));
            println!("  instantiate, slot reused        {}", summary(&reused));
            println!(
                "  per live instance               {per_instance:.1} KiB resident, {maps_per_instance:.2} mappings (nothing run yet)"
            );
        });
    }
}
