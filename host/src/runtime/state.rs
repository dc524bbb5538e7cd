//! What one agent's `Store` holds: its sandboxed WASI context (no files, no network, no
//! environment), its resource limits, and a view of the services it may use on behalf of
//! its account — never the account's key.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use wasmtime::{ResourceLimiter, component::ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView, p2::pipe::MemoryOutputPipe};
use wasmtime_wasi_http::{WasiHttpCtxView, WasiHttpView};

use super::{
    bounds::RunBounds,
    config::RuntimeConfig,
    cpu::CpuMeter,
    host::http::Outgoing,
    journal::{Door, Journal, JournalStore, Monotonic, Watched, sandbox_clocks},
    park::{Parking, Pending},
    records::{AgentStore, Fence, MemoryMode, Usage},
    stop::StopSignal,
    timings::Recorder,
};
use crate::{
    accounts::{Accounts, Ledger, TokenBudgets},
    egress::Egress,
    memory::{MemoryService, Quota, RunFence},
    mind::{Message, Mind},
    tools::Tools,
};

/// Bytes of a guest's stderr kept (the tail explains a panic).
const STDERR_CAPTURE: usize = 16 * 1024;

/// Services shared by every agent.
pub struct Services {
    pub memory: MemoryService,
    pub mind: Arc<dyn Mind>,
    /// Where agents' outgoing requests go out, and the accounts whose plans say where.
    pub egress: Arc<Egress>,
    /// The tools the account registered (each call through `egress`).
    pub tools: Arc<Tools>,
    pub accounts: Accounts,
    pub records: AgentStore,
    pub usage: Ledger,
    /// The month's Mind tokens of accounts, which the host's jobs for them (titles,
    /// extraction) check before they call the Mind.
    pub budgets: TokenBudgets,
    /// Where runs are journaled, so a restart (or, on PostgreSQL, another node) resumes
    /// them.
    pub journal: Arc<dyn JournalStore>,
}

/// Who an agent acts for and how to reach it; shared by its store and its supervisor.
pub struct AgentCtx {
    pub agent_id: String,
    pub account: String,
    /// The epoch of this node's claim on the agent: every write of the run is fenced by it
    /// (`None` on the embedded backend).
    pub fence: Fence,
    /// The account plan's memory quota: live memories, versions kept per key.
    pub memory_quota: Quota,
    /// What the agent may do with memory.
    pub memory_mode: MemoryMode,
    /// The account's tools it is offered, by name (its spawn's `tools` field); `None`: all.
    pub tools: Option<Arc<[String]>>,
    pub stop: StopSignal,
    /// Set when the Mind failed for good, so a guest error can be reported as such.
    pub mind_failed: AtomicBool,
    /// Mind tokens the run may spend (the plan's `tokens_per_run`).
    pub token_budget: u64,
    /// Set when the run's Mind calls spent past [`AgentCtx::token_budget`]: the run then
    /// ends `token_limit_exceeded`.
    pub over_tokens: AtomicBool,
    /// When the agent was launched (its run time is metered from here).
    pub started: std::time::Instant,
    /// Its CPU time, against the plan's budget per run.
    pub cpu: Arc<CpuMeter>,
    /// Its run's journal, which every call of its guest goes through.
    pub journal: Arc<Journal>,
    /// The services its calls reach, opened by its journal alone.
    pub door: Door,
    /// When it hibernates (none: never).
    pub(super) parking: Option<Parking>,
    /// The benchmarks' samples (nothing without the `bench` feature).
    pub(super) timings: Arc<Recorder>,
}

impl AgentCtx {
    /// Records that the Mind was unavailable after retries.
    pub fn note_mind_failure(&self) {
        self.mind_failed.store(true, Ordering::Relaxed);
    }

    /// Whether the agent is offered the account's tool `name`.
    pub fn offers(&self, name: &str) -> bool {
        (self.tools.as_ref()).is_none_or(|names| names.iter().any(|n| n == name))
    }

    /// Whether the Mind was unavailable at some point of the run.
    pub fn mind_failed(&self) -> bool {
        self.mind_failed.load(Ordering::Relaxed)
    }

    /// Whether the run spent past its token budget.
    pub fn over_tokens(&self) -> bool {
        self.over_tokens.load(Ordering::Relaxed)
    }

    /// The claim its memory writes are made under: this node's on the agent, where runs
    /// are claimed (the postgres backend).
    pub fn memory_fence(&self) -> Option<RunFence> {
        self.fence.map(|epoch| RunFence {
            agent_id: self.agent_id.clone(),
            epoch,
        })
    }
}

/// Denies linear-memory and table growth past the limits and remembers that it did, so
/// the trap that follows is reported as `memory_limit_exceeded` or
/// `table_limit_exceeded`.
pub struct Limits {
    max_memory: usize,
    max_table_elements: usize,
    pub memory_denied: bool,
    pub table_denied: bool,
}

impl ResourceLimiter for Limits {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = desired <= self.max_memory;
        self.memory_denied |= !allowed;
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = desired <= self.max_table_elements;
        self.table_denied |= !allowed;
        Ok(allowed)
    }
}

/// The data of an agent's `Store`.
pub struct AgentState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub limits: Limits,
    /// What the guest has sent to be stored so far, against the run's bounds.
    pub bounds: RunBounds,
    pub agent: Arc<AgentCtx>,
    pub usage: Usage,
    pub stderr: MemoryOutputPipe,
    /// The last conversation the guest sent the Mind, with the Mind's answer: what
    /// extraction reads when the run completes.
    pub conversation: Vec<Message>,
    /// The call the agent hibernated in, taken by the run once it has unwound.
    pub(super) parked: Option<Pending>,
    /// The run's monotonic clock (its readings are journaled).
    pub(super) monotonic: Monotonic,
    /// Its outgoing HTTP requests.
    pub(super) outgoing: Outgoing,
    /// Its timers' and response futures' pollables.
    pub(super) watched: Watched,
}

impl AgentState {
    /// A fresh sandbox for `agent`: no preopened directories, no sockets, no inherited
    /// environment or arguments; stdout discarded, stderr captured; its monotonic clock
    /// going on from its journal's last reading.
    pub fn new(agent: Arc<AgentCtx>, config: &RuntimeConfig) -> Self {
        let stderr = MemoryOutputPipe::new(STDERR_CAPTURE);
        let mut builder = WasiCtxBuilder::new();
        builder
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        let monotonic = Monotonic::resumed(&agent.journal);
        let outgoing = Outgoing::new(agent.door.max_request_bytes());
        sandbox_clocks(&mut builder, monotonic, &agent.agent_id);
        let wasi = builder.build();
        Self {
            wasi,
            table: ResourceTable::new(),
            limits: Limits {
                max_memory: config.memory_limit_mib as usize * (1 << 20),
                max_table_elements: config.table_elements_limit as usize,
                memory_denied: false,
                table_denied: false,
            },
            bounds: RunBounds::new(config),
            agent,
            usage: Usage::default(),
            stderr,
            conversation: Vec::new(),
            parked: None,
            monotonic,
            outgoing,
            watched: Watched::default(),
        }
    }

    /// What the guest last said on stderr: from its last panic report on (Rust prints
    /// `… panicked at file:line:col:` then the message), else its last line; hints such as
    /// `note: run with RUST_BACKTRACE=1` left out.
    pub fn stderr_tail(&self) -> Option<String> {
        let bytes = self.stderr.contents();
        let text = String::from_utf8_lossy(&bytes);
        summarize_stderr(&text)
    }
}

impl WasiHttpView for AgentState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.outgoing.ctx,
            table: &mut self.table,
            hooks: &mut self.outgoing.stage,
        }
    }
}

impl WasiView for AgentState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

fn summarize_stderr(text: &str) -> Option<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("note: "))
        .collect();
    let from = lines
        .iter()
        .rposition(|l| l.contains("panicked at"))
        .unwrap_or(lines.len().checked_sub(1)?);
    Some(lines[from..].join(" ").chars().take(500).collect())
}

#[cfg(test)]
mod tests {
    use super::summarize_stderr;

    #[test]
    fn stderr_summary_keeps_the_panic() {
        let panic = "thread '<unnamed>' panicked at src/lib.rs:11:5:\nboom: it broke\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(
            summarize_stderr(panic).unwrap(),
            "thread '<unnamed>' panicked at src/lib.rs:11:5: boom: it broke"
        );
        assert_eq!(summarize_stderr("one\ntwo\n").unwrap(), "two");
        assert_eq!(summarize_stderr(""), None);
    }
}
