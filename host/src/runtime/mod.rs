//! Agents: each a WebAssembly component in its own wasmtime `Store`, run as a tokio task.
//!
//! One engine (pooling allocator sized to an admission cap, epoch interruption driven by
//! one ticker thread) and one linker of what the sandbox offers; the default agent and
//! the tenants' uploaded components (`components`) are precompiled once and linked into
//! `InstancePre`s that spawns instantiate. A spawn
//! (`spawn`) is admitted within the plan's and the host's limits (`admission`), then
//! supervised from launch to its recorded end (`lifecycle`) around the run itself
//! (`run`). Each interface of `guest-sdk/wit/agent.wit` has its host side in `host/`. Records and
//! log events are durable in redb or PostgreSQL (`records`); their watchers are woken on each change
//! (`changes`). Every call a guest makes across the sandbox is journaled (`journal`), so a
//! restarted server resumes the agents it had alive, and an agent whose call waits long
//! gives back its instance until the answer comes (`park`).
//! Nothing outside this module knows wasmtime.

mod admission;
mod artifacts;
mod bindings;
mod bounds;
mod changes;
mod cluster;
mod components;
mod config;
mod cpu;
mod engine;
mod extraction;
mod guests;
mod host;
mod journal;
mod lifecycle;
mod limits;
mod newest;
mod park;
mod records;
mod run;
mod spawn;
mod state;
mod stop;
mod timings;

pub use changes::Watch;
pub use cluster::{Cluster, ClusterConfig, node_id};
pub use components::{
    ComponentRecord, ID_PREFIX as COMPONENT_ID_PREFIX, MAX_NAME_CHARS as MAX_COMPONENT_NAME_CHARS,
    MAX_VERSION_CHARS, Upload, UploadError, VERSION_PATTERN,
};
pub use config::RuntimeConfig;
pub use host::account_memory;
pub use journal::{EmbeddedJournal, JournalStore, PgJournal};
pub use lifecycle::Runtime;
pub use records::{
    AgentComponent, AgentRecord, AgentStore, Failure, LogEvent, MemoryMode, Progress, RecordError,
    Status, Usage,
};
pub use spawn::{
    AgentError, MAX_NAME_CHARS as MAX_AGENT_NAME_CHARS, MAX_TASK_CHARS, MAX_TOOL_NAME_CHARS,
    MAX_TOOLS as MAX_SPAWN_TOOLS, MonthlyBudget, REGION, SpawnFields, SpawnRefusal, SpawnRequest,
    SpawnStorageError,
};
pub use state::Services;
#[cfg(feature = "bench")]
pub use timings::Timings;
