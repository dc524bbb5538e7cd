//! The `[runtime]` section: limits of each agent's sandbox and of the host's admission.

use std::path::PathBuf;

use serde::Deserialize;

/// The `[runtime]` section of the config file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeConfig {
    /// Most live agents the host admits; the default (and the ceiling) is derived from the
    /// process's mapping limit (`vm.max_map_count`) and reported at start-up.
    pub max_agents: Option<u32>,
    /// Linear-memory limit of one agent, in MiB.
    pub memory_limit_mib: u32,
    /// Most elements any one table of an agent may grow to.
    pub table_elements_limit: u32,
    /// Longest an agent may run, in seconds.
    pub max_run_secs: u64,
    /// Grace between a stop request and the agent's forced end, in seconds.
    pub stop_grace_secs: f64,
    /// Most progress reports one run stores; later ones are dropped and counted (each
    /// rewrites the record, which keeps the latest 500 anyway).
    pub max_progress_reports: u32,
    /// Most log events one run stores; later ones are dropped and counted.
    pub max_log_events: u32,
    /// Most bytes of log messages and data one run stores; later events are dropped.
    pub max_log_bytes: u64,
    /// Largest final result kept, in UTF-8 bytes; a larger one fails the run with
    /// `result_too_large` (every list page carries final results).
    pub max_result_bytes: u64,
    /// Most bytes one run's journal (its recorded host calls and their results) may hold;
    /// past it the run fails with `journal_limit_exceeded`.
    pub max_journal_bytes: u64,
    /// How long a host call may wait (a Mind call: queued for a connection, or waiting for
    /// a slow model) before its agent hibernates: gives back its instance and is resumed
    /// from its journal when the answer comes (`park`). 0: agents never hibernate.
    pub hibernate_after_ms: u64,
    /// Most agents hibernated at once on this host; past it, an agent waits in its
    /// instance.
    pub max_parked_agents: u32,
    /// The agent component every spawn runs; default: the built-in default agent.
    pub component: Option<PathBuf>,
    /// Where compiled components (native code, ready to load) are kept; default the data
    /// dir's `cache/` (env `WASMIND_ARTIFACT_CACHE_DIR`). Servers of one user may share
    /// one, sparing each new data dir a compilation of the default agent (~1.3 s of CPU):
    /// an artifact is named by its component's content and the engine's settings, and
    /// written whole (by rename). What is in it is run as native code, so the directory
    /// must be the server's user's and writable by no one else, and each artifact is
    /// signed with the key kept in it (see `artifacts`).
    pub artifact_cache_dir: Option<PathBuf>,
    /// Guests running at once, on threads of their own apart from the API's (one more
    /// than this, to poll agents back from I/O); default: one per core.
    pub guest_threads: Option<usize>,
    /// Address space reserved per agent's linear memory, in MiB (at least
    /// `memory_limit_mib`); default wasmtime's 4 GiB and a 32 MiB guard, which spare
    /// every memory access a bounds check but fit only ~25,000 agents in the address
    /// space. Smaller admits more live agents; each access is then bounds-checked.
    pub memory_reservation_mib: Option<u32>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            max_agents: None,
            memory_limit_mib: 64,
            table_elements_limit: 20_000,
            max_run_secs: 3_600,
            stop_grace_secs: 10.0,
            max_progress_reports: 1_000,
            max_log_events: 10_000,
            max_log_bytes: 16 << 20,
            max_result_bytes: 256 << 10,
            max_journal_bytes: 64 << 20,
            hibernate_after_ms: 5_000,
            max_parked_agents: 100_000,
            component: None,
            artifact_cache_dir: None,
            guest_threads: None,
            memory_reservation_mib: None,
        }
    }
}

impl RuntimeConfig {
    /// The threads guests run on: as configured, else one per core.
    pub fn guest_threads(&self) -> usize {
        self.guest_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
            .max(1)
    }
}
