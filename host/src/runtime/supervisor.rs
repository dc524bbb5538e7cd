//! The supervisor: admits agents up to the cap, runs each as a tokio task that owns its
//! `Store`, and ends it — completed, failed, or stopped with a grace period.
//!
//! Failure codes on `error.code`: `agent_error` (the agent returned an error),
//! `mind_unavailable` (the Mind failed after retries), `guest_trap` (a trap or panic),
//! `memory_limit_exceeded`, `run_time_exceeded`, `instantiation_failed`, `host_restarted`.

use std::{
    collections::{HashMap, VecDeque},
    path::Path,
    sync::{Arc, atomic::AtomicBool},
    time::{Duration, Instant},
};

use parking_lot::Mutex;
use serde_json::json;
use wasmtime::{Store, UpdateDeadline};

use super::{
    engine::{self, Compiled},
    extraction,
    records::{AgentRecord, Failure, RecordError, Status, Usage},
    state::{AgentCtx, AgentState, Services},
    stop::StopSignal,
};
use crate::{
    accounts::RateLimiter, blocking::run_blocking, clock::now_ms, config::RuntimeConfig,
    mind::RunReport,
};

/// Why a spawn was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The host is at its admission cap.
    AtCapacity { cap: u32 },
    /// The account has `max` agents spawning or running.
    ConcurrentLimit { current: u32, max: u32 },
}

/// How a run ended.
enum Outcome {
    Completed(String),
    Failed(Failure),
    Stopped,
}

fn failure(code: &str, message: impl Into<String>) -> Outcome {
    Outcome::Failed(Failure {
        code: code.into(),
        message: message.into(),
    })
}

/// Samples of each kind [`Timings`] keeps (the newest).
const TIMINGS_KEPT: usize = 16_384;

/// Operational statistics of recent agents, newest last, at most 16,384 of each kind: for
/// benchmarks and diagnosis (`Runtime::take_timings`). Instants are `std::time::Instant`s
/// of this process, comparable with a caller's own.
#[derive(Debug, Default)]
pub struct Timings {
    /// How long `InstancePre` instantiation took, per agent.
    pub instantiate: VecDeque<(String, Duration)>,
    /// When each agent's record was committed as `running`.
    pub running: VecDeque<(String, Instant)>,
    /// When a stop was first requested of each live agent (its grace starts here).
    pub stop_requested: VecDeque<(String, Instant)>,
    /// When each agent's `Store` was dropped (its run over, whatever the outcome).
    pub dropped: VecDeque<(String, Instant)>,
}

fn note<T>(samples: &mut VecDeque<(String, T)>, id: &str, value: T) {
    if samples.len() == TIMINGS_KEPT {
        samples.pop_front();
    }
    samples.push_back((id.to_string(), value));
}

struct Live {
    agents: HashMap<String, Arc<AgentCtx>>,
    per_account: HashMap<String, AccountLive>,
    total: u32,
    /// Origin of the launch offsets in [`AccountLive`].
    epoch: Instant,
}

/// One account's live agents, kept so every figure a spawn checks is O(1).
#[derive(Default)]
struct AccountLive {
    /// Admitted agents: reserved or launched.
    admitted: u32,
    /// Launched agents whose run has not ended.
    launched: u64,
    /// Sum of their launch instants, in ms since [`Live::epoch`]: with `launched` it gives
    /// their total run time so far without visiting them.
    launched_sum_ms: u64,
}

impl Live {
    fn new() -> Self {
        Self {
            agents: HashMap::new(),
            per_account: HashMap::new(),
            total: 0,
            epoch: Instant::now(),
        }
    }

    fn offset_ms(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_millis() as u64
    }

    /// Counts a launched agent in (`launched`) or out of its account's run-time figures.
    fn count_launch(&mut self, ctx: &AgentCtx, launched: bool) {
        let offset = self.offset_ms(ctx.started);
        let a = self.per_account.entry(ctx.account.clone()).or_default();
        if launched {
            a.launched += 1;
            a.launched_sum_ms += offset;
        } else {
            a.launched -= 1;
            a.launched_sum_ms -= offset;
        }
    }
}

pub(super) struct Inner {
    compiled: Compiled,
    pub(super) services: Arc<Services>,
    config: RuntimeConfig,
    live: Mutex<Live>,
    /// Every key's spawn-rate windows.
    pub(super) rate: RateLimiter,
    timings: Mutex<Timings>,
}

/// The agent runtime; cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    pub(super) inner: Arc<Inner>,
}

/// An admitted spawn's place: released if dropped before `launch`.
pub(super) struct Slot {
    inner: Arc<Inner>,
    account: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        release(&self.inner, &self.account);
    }
}

fn release(inner: &Inner, account: &str) {
    let mut live = inner.live.lock();
    live.total -= 1;
    if let Some(a) = live.per_account.get_mut(account) {
        a.admitted -= 1;
        if a.admitted == 0 {
            live.per_account.remove(account);
        }
    }
}

impl Runtime {
    /// Compiles the agent component, then marks agents a previous process left alive as
    /// failed (nothing stays `running` forever).
    pub fn start(
        config: &RuntimeConfig,
        cache_dir: &Path,
        services: Arc<Services>,
    ) -> anyhow::Result<Self> {
        let compiled = engine::compile(config, cache_dir)?;
        tracing::info!(admission_cap = compiled.cap, "agent runtime ready");
        let runtime = Self {
            inner: Arc::new(Inner {
                compiled,
                services,
                config: config.clone(),
                live: Mutex::new(Live::new()),
                rate: RateLimiter::default(),
                timings: Mutex::default(),
            }),
        };
        runtime.fail_orphans()?;
        Ok(runtime)
    }

    /// The most live agents this host admits.
    pub fn cap(&self) -> u32 {
        self.inner.compiled.cap
    }

    /// The timings recorded since the last call (see [`Timings`]), leaving none behind.
    pub fn take_timings(&self) -> Timings {
        std::mem::take(&mut *self.inner.timings.lock())
    }

    /// Agents of `account` spawning or running.
    pub fn concurrent(&self, account: &str) -> u32 {
        self.inner
            .live
            .lock()
            .per_account
            .get(account)
            .map_or(0, |a| a.admitted)
    }

    /// Run time so far of the account's running agents, in ms.
    pub fn running_ms(&self, account: &str) -> u64 {
        let live = self.inner.live.lock();
        let now = live.offset_ms(Instant::now());
        live.per_account
            .get(account)
            .map_or(0, |a| (a.launched * now).saturating_sub(a.launched_sum_ms))
    }

    /// Reserves a place for one more agent of `account`, within the account's `max` and the
    /// host's cap.
    pub(super) fn reserve(&self, account: &str, max: u32) -> Result<Slot, Refusal> {
        let mut live = self.inner.live.lock();
        let current = live.per_account.get(account).map_or(0, |a| a.admitted);
        if current >= max {
            return Err(Refusal::ConcurrentLimit { current, max });
        }
        if live.total >= self.inner.compiled.cap {
            return Err(Refusal::AtCapacity {
                cap: self.inner.compiled.cap,
            });
        }
        live.total += 1;
        live.per_account
            .entry(account.to_string())
            .or_default()
            .admitted += 1;
        Ok(Slot {
            inner: self.inner.clone(),
            account: account.to_string(),
        })
    }

    /// Starts the agent of `record` (already stored as `spawning`) in its reserved slot.
    pub(super) fn launch(&self, slot: Slot, record: &AgentRecord, memory_quota: u64) {
        let ctx = Arc::new(AgentCtx {
            agent_id: record.agent_id.clone(),
            account: record.account.clone(),
            memory_quota,
            memory_mode: record.memory_mode,
            stop: StopSignal::default(),
            mind_failed: AtomicBool::new(false),
            started: Instant::now(),
            services: self.inner.services.clone(),
        });
        {
            let mut live = self.inner.live.lock();
            live.agents.insert(ctx.agent_id.clone(), ctx.clone());
            live.count_launch(&ctx, true);
        }
        let inner = self.inner.clone();
        let task = record.task.clone();
        tokio::spawn(async move {
            supervise(&inner, &ctx, &task).await;
            {
                let mut live = inner.live.lock();
                live.agents.remove(&ctx.agent_id);
                live.count_launch(&ctx, false);
            }
            drop(slot);
        });
    }

    /// Has the Mind title the agent of `record` in the background (its provisional name
    /// stands until then, and if the Mind fails); the tokens count as the agent's.
    pub(super) fn retitle(&self, record: &AgentRecord) {
        let services = self.inner.services.clone();
        let (id, account, task) = (
            record.agent_id.clone(),
            record.account.clone(),
            record.task.clone(),
        );
        tokio::spawn(async move {
            let title = match services.mind.title(&task).await {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!(agent = %id, error = %e, "titling the agent failed");
                    return;
                }
            };
            let spent = Usage::from(title.usage);
            let (records, agent) = (services.records.clone(), id.clone());
            let titled = run_blocking(move || {
                records.update(&agent, |r| {
                    r.name = title.text;
                    r.usage += spent;
                    true
                })
            })
            .await;
            if let Err(e) = titled {
                tracing::error!(agent = %id, error = %e, "recording the agent's title failed");
            }
            let usage = services.usage.clone();
            if let Err(e) =
                run_blocking(move || usage.add(&account, now_ms(), spent.month(0))).await
            {
                tracing::error!(error = %e, "recording the title's usage failed");
            }
        });
    }

    /// Asks a live agent to stop: its pending host calls return at once, it sees the stop
    /// flag, and after the grace period it is dropped wherever it is. The record is left
    /// to the caller ([`Runtime::stop`] turns it `stopped` first).
    pub fn signal_stop(&self, agent_id: &str) {
        if let Some(agent) = self.inner.live.lock().agents.get(agent_id)
            && agent.stop.request()
        {
            note(
                &mut self.inner.timings.lock().stop_requested,
                agent_id,
                Instant::now(),
            );
            // A CPU-bound guest holds its task until its slice ends, so the grace timer
            // is seen only at the next epoch tick (up to 10 ms late). Advancing the epoch
            // when the grace ends makes every running guest yield at once — this one is
            // then dropped, the others just start a new slice. (Called outside the async
            // runtime, as at shutdown, the next tick does it.)
            let (engine, agent) = (self.inner.compiled.engine.clone(), agent.clone());
            let grace = grace(&self.inner.config);
            let Ok(tokio) = tokio::runtime::Handle::try_current() else {
                return;
            };
            tokio.spawn(async move {
                tokio::time::sleep_until(agent.stop.wait().await + grace).await;
                engine.increment_epoch();
            });
        }
    }

    fn fail_orphans(&self) -> anyhow::Result<()> {
        let records = &self.inner.services.records;
        for id in records.alive()? {
            let failed = records.update(&id, |r| {
                r.status = Status::Failed;
                r.ended_at = Some(now_ms());
                r.error = Some(Failure {
                    code: "host_restarted".into(),
                    message: "the host restarted while this agent was alive; spawn it again".into(),
                });
                true
            })?;
            if let Some(r) = failed {
                records.append_log(
                    &id,
                    "terminal",
                    "failed".into(),
                    Some(json!({ "status": "failed", "error": r.error })),
                )?;
            }
        }
        Ok(())
    }
}

async fn supervise(inner: &Arc<Inner>, ctx: &Arc<AgentCtx>, task: &str) {
    let records = inner.services.records.clone();
    let id = ctx.agent_id.clone();
    let started = run_blocking({
        let (records, id) = (records.clone(), id.clone());
        move || {
            records.update(&id, |r| {
                let starting = r.status == Status::Spawning;
                if starting {
                    r.status = Status::Running;
                    r.started_at = Some(now_ms());
                }
                starting
            })
        }
    })
    .await;
    match started {
        Ok(Some(r)) if r.status == Status::Running => {
            note(&mut inner.timings.lock().running, &id, Instant::now());
        }
        Ok(_) => {}
        Err(e) => tracing::error!(agent = %id, error = %e, "recording the agent as running failed"),
    }
    let (outcome, mut usage, conversation) = match ctx.stop.requested() {
        true => (Outcome::Stopped, Usage::default(), Vec::new()),
        false => run(inner, ctx, task).await,
    };
    let run_ms = ctx.started.elapsed().as_millis() as u64;
    if let Outcome::Completed(answer) = &outcome
        && ctx.memory_mode.extracts()
    {
        let report = RunReport {
            task: task.to_string(),
            conversation,
            answer: answer.clone(),
        };
        usage += extraction::extract(ctx, report).await;
    }
    let ended = run_blocking(move || {
        let ended = records.update(&id, |r| {
            r.usage += usage;
            if !r.status.is_terminal() {
                r.ended_at = Some(now_ms());
                match outcome {
                    Outcome::Completed(text) => {
                        r.status = Status::Completed;
                        r.final_result = Some(text);
                    }
                    Outcome::Failed(f) => {
                        r.status = Status::Failed;
                        r.error = Some(f);
                    }
                    Outcome::Stopped => r.status = Status::Stopped,
                }
            }
            true
        })?;
        if let Some(r) = ended {
            let data = json!({ "status": r.status.as_str(), "error": r.error, "run_ms": run_ms });
            records.append_log(&id, "terminal", r.status.as_str().into(), Some(data))?;
        }
        Ok::<_, RecordError>(())
    })
    .await;
    if let Err(e) = ended {
        tracing::error!(agent = %ctx.agent_id, error = %e, "recording the agent's end failed");
    }
    let (account, usage_store) = (ctx.account.clone(), inner.services.usage.clone());
    if let Err(e) =
        run_blocking(move || usage_store.add(&account, now_ms(), usage.month(run_ms))).await
    {
        tracing::error!(error = %e, "recording agent usage failed");
    }
}

/// Instantiates and runs the guest until it returns, fails, runs out of time, or its stop
/// grace ends — then drops the store, wherever the guest is.
/// How long a stopped agent may go on before it is dropped.
fn grace(config: &RuntimeConfig) -> Duration {
    Duration::from_secs_f64(config.stop_grace_secs.max(0.0))
}

async fn run(
    inner: &Inner,
    ctx: &Arc<AgentCtx>,
    task: &str,
) -> (Outcome, Usage, Vec<crate::mind::Message>) {
    let config = &inner.config;
    let mut store = Store::new(&inner.compiled.engine, AgentState::new(ctx.clone(), config));
    store.limiter(|state| &mut state.limits);
    store.set_epoch_deadline(1);
    // `Yield` would wake the task at once, so a worker running wasm never parks and tokio
    // polls its I/O and timer driver only every 61 task polls (~0.6 s of 10 ms slices):
    // spinning agents would starve the API and overrun their stop grace. `yield_now`
    // defers the wake until the driver has run (wasmtime's advice for tokio).
    store.epoch_deadline_callback(|_| {
        Ok(UpdateDeadline::YieldCustom(
            1,
            Box::pin(tokio::task::yield_now()),
        ))
    });
    let grace = grace(config);
    let result = {
        let run = async {
            let instantiating = Instant::now();
            let agent = inner
                .compiled
                .pre
                .instantiate_async(&mut store)
                .await
                .map_err(|e| (true, e))?;
            let took = instantiating.elapsed();
            note(&mut inner.timings.lock().instantiate, &ctx.agent_id, took);
            agent
                .call_run(&mut store, task)
                .await
                .map_err(|e| (false, e))
        };
        // Biased, the ends first: once the grace or the run time is over, the guest gets
        // no further slice.
        tokio::select! {
            biased;
            () = async { tokio::time::sleep_until(ctx.stop.wait().await + grace).await } => None,
            () = tokio::time::sleep(Duration::from_secs(config.max_run_secs)) => None,
            result = run => Some(result),
        }
    };
    let state = store.data();
    let outcome = match result {
        _ if ctx.stop.requested() => Outcome::Stopped,
        None => failure(
            "run_time_exceeded",
            format!("the agent ran longer than {} s", config.max_run_secs),
        ),
        Some(Ok(Ok(text))) => Outcome::Completed(text),
        Some(Ok(Err(message))) if ctx.mind_failed() => failure("mind_unavailable", message),
        Some(Ok(Err(message))) => failure("agent_error", message),
        Some(Err((true, e))) => {
            tracing::error!(error = %e, agent = %ctx.agent_id, "instantiation failed");
            failure(
                "instantiation_failed",
                "the agent could not be started; try again",
            )
        }
        Some(Err((false, _))) if state.limits.memory_denied => failure(
            "memory_limit_exceeded",
            format!(
                "the agent exceeded its memory limit of {} MiB",
                config.memory_limit_mib
            ),
        ),
        Some(Err((false, e))) => {
            let trap = e
                .downcast_ref::<wasmtime::Trap>()
                .map_or_else(|| "trap".to_string(), ToString::to_string);
            let message = match state.stderr_tail() {
                Some(tail) => format!("the agent crashed ({trap}): {tail}"),
                None => format!("the agent crashed ({trap})"),
            };
            failure("guest_trap", message)
        }
    };
    let usage = state.usage;
    let conversation = std::mem::take(&mut store.data_mut().conversation);
    drop(store);
    note(
        &mut inner.timings.lock().dropped,
        &ctx.agent_id,
        Instant::now(),
    );
    (outcome, usage, conversation)
}
