//! Agents: each a WebAssembly component in its own wasmtime `Store`, run as a tokio task.
//!
//! One engine (pooling allocator sized to an admission cap, epoch interruption driven by
//! one ticker thread), one precompiled component linked once (`InstancePre`), and a
//! supervisor that admits, runs and stops agents. Each interface of `wit/agent.wit` has its
//! host side in `host/`. Records and log events are durable in redb (`records`).
//! Nothing outside this module knows wasmtime.

mod bindings;
mod engine;
mod extraction;
mod host;
mod records;
mod spawn;
mod state;
mod stop;
mod supervisor;

pub use engine::admission_cap;
pub use records::{
    AgentRecord, AgentStore, Failure, LogEvent, MemoryMode, Progress, Status, Usage,
};
pub use spawn::{SpawnRefusal, SpawnRequest, StopError};
pub use state::Services;
pub use supervisor::{Runtime, Timings};
