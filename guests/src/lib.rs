//! The guest components the workspace builds for the host: the default agent it embeds,
//! and the path of every example agent (`examples/*`) and test guest (`tests/guests/*`)
//! for the tests and benches, with `foreach_guest!` (see `build.rs`).
//!
//! A crate of its own, not `wasmind`'s build script, so the guests' nested build starts
//! early: cargo runs a package's build script only after the build scripts of its direct
//! dependencies that declare `links`, and `wasmind`'s include `aws-lc-rs`, which waits for
//! aws-lc's C. Built there, the guests ran after every dependency, alone on the clean
//! build's critical path before `wasmind` itself; here they build beside the dependencies.

/// The default agent's component: what a spawn runs unless it names an uploaded one.
pub static DEFAULT_AGENT_WASM: &[u8] = include_bytes!(env!("WASMIND_DEFAULT_AGENT_WASM"));

include!(concat!(env!("OUT_DIR"), "/guests.rs"));
