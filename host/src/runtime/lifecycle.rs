//! An agent's life around its run: the runtime starts by resuming the agents a previous
//! process left alive from their journals (`journal`); each launched agent is a tokio
//! task that marks it `running`, runs it (`run`), has its memories extracted when its
//! mode asks, and records how it ended; a stop request lets it go on for the grace
//! period, then it is dropped wherever it is.

use std::{
    sync::{Arc, atomic::AtomicBool},
    time::{Duration, Instant},
};

use serde_json::json;

use super::{
    admission::{Admission, Slot},
    artifacts::Artifacts,
    bindings::AgentPre,
    cluster::Cluster,
    components::Components,
    config::RuntimeConfig,
    cpu::{CpuGate, CpuMeter},
    engine::{self, Compiled},
    extraction,
    guests::GuestThreads,
    journal::{Bounds, Door, Journal, Resumed, Run},
    limits::{LocalLimits, SharedLimits, SpawnLimits},
    park::Parking,
    records::{
        AgentRecord, AgentStore, Allowance, FIRST_EPOCH, Failure, Fence, LogEvent, RecordError,
        Status, Usage,
    },
    run::{Ended, Outcome, run},
    state::{AgentCtx, AgentState, Services},
    stop::StopSignal,
    timings::Recorder,
};
use crate::{
    accounts::RateLimiter, clock::now_ms, data_dir::DataDir, metrics::names, mind::RunReport,
};

pub(super) struct Inner {
    pub(super) compiled: Arc<Compiled>,
    /// Tenants' uploaded components.
    pub(super) components: Components,
    pub(super) services: Arc<Services>,
    pub(super) config: RuntimeConfig,
    pub(super) admission: Arc<Admission>,
    /// The accounts' and keys' limits spawns are admitted within.
    pub(super) limits: Box<dyn SpawnLimits>,
    /// Shared with each agent's context, whose journal notes its calls.
    pub(super) timings: Arc<Recorder>,
    /// Where agents' tasks run: the guests' own threads.
    guest_tasks: tokio::runtime::Handle,
    /// Their slots, shared fairly between accounts.
    pub(super) cpu: Arc<CpuGate>,
    /// This node among the nodes sharing PostgreSQL (none on the embedded backend).
    pub(super) cluster: Option<Arc<Cluster>>,
    /// Each account's component uploads of the last hour on this node, which compiles them.
    pub(super) uploads: RateLimiter,
}

/// The agent runtime; cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    pub(super) inner: Arc<Inner>,
    /// Held here, not in `Inner` (which agents' tasks hold), so the guests' threads are
    /// shut down from the API's side when the last handle goes.
    _guests: Arc<GuestThreads>,
}

/// How long a stopped agent may go on before it is dropped.
pub(super) fn grace(config: &RuntimeConfig) -> Duration {
    Duration::from_secs_f64(config.stop_grace_secs.max(0.0))
}

impl Runtime {
    /// Compiles the default agent component into `dir`'s cache and serves the uploaded
    /// components kept in the data dir, or with `cluster` in PostgreSQL, then resumes the
    /// agents a previous process (of this node) left alive from their journals; with
    /// `cluster`, starts keeping this node's claims, delivering stops and resuming the
    /// agents of lost nodes.
    pub async fn start(
        config: &RuntimeConfig,
        dir: &DataDir,
        services: Arc<Services>,
        cluster: Option<Cluster>,
    ) -> anyhow::Result<Self> {
        let cache_dir = config
            .artifact_cache_dir
            .clone()
            .unwrap_or_else(|| dir.cache_dir());
        let artifacts = Artifacts::open(&cache_dir)?;
        let compiled = engine::compile(config, artifacts)?;
        let admission = Admission::new(compiled.layout.cap, config.max_parked_agents);
        let cluster = cluster.map(Arc::new);
        let (components, limits): (_, Box<dyn SpawnLimits>) = match &cluster {
            None => (
                Components::embedded(dir.db().clone(), &dir.components_dir())?,
                Box::new(LocalLimits::new(
                    admission.clone(),
                    services.usage.clone(),
                    services.records.clone(),
                )),
            ),
            Some(cluster) => (
                Components::postgres(cluster.pool.clone()),
                Box::new(SharedLimits::new(
                    cluster.clone(),
                    admission.clone(),
                    services.records.clone(),
                )),
            ),
        };
        let threads = config.guest_threads();
        let guests = GuestThreads::start(threads)?;
        tracing::info!(
            admission_cap = compiled.layout.cap,
            copy_on_write = compiled.layout.cow,
            memory_reservation_mib = compiled.layout.reservation >> 20,
            guest_threads = threads,
            "agent runtime ready"
        );
        let runtime = Self {
            inner: Arc::new(Inner {
                guest_tasks: guests.handle(),
                cpu: CpuGate::new(threads, {
                    let engine = compiled.engine.clone();
                    move || engine.increment_epoch()
                }),
                admission,
                limits,
                compiled: Arc::new(compiled),
                components,
                services,
                config: config.clone(),
                timings: Arc::new(Recorder::new()),
                cluster: cluster.clone(),
                uploads: RateLimiter::default(),
            }),
            _guests: Arc::new(guests),
        };
        runtime.resume_orphans().await?;
        if let Some(cluster) = cluster {
            cluster.start(Arc::downgrade(&runtime.inner)).await?;
        }
        Ok(runtime)
    }

    /// The timings recorded since the last call, leaving none behind.
    #[cfg(feature = "bench")]
    pub fn take_timings(&self) -> super::Timings {
        self.inner.timings.take()
    }

    /// Asks a live agent to stop: its pending host calls return at once, it sees the stop
    /// flag, and after the grace period it is dropped wherever it is. The record is left
    /// to the caller ([`Runtime::stop`] turns it `stopped` first).
    pub fn signal_stop(&self, agent_id: &str) {
        self.inner.signal_stop(agent_id, false);
    }
}

impl Inner {
    /// Starts the agent of `record` (already stored as `spawning`) in its reserved slot,
    /// running `pre` on the guests' threads within its allowance, every write of its run
    /// fenced by `fence`; a `resumed` run replays its journal first. The journal begins
    /// with the run and is deleted when it ends (unless the claim is stale by then: the
    /// node holding the agent now resumes from it).
    pub(super) fn launch(
        self: &Arc<Self>,
        slot: Slot,
        record: &AgentRecord,
        fence: Fence,
        allowance: Allowance,
        pre: AgentPre<AgentState>,
        resumed: Option<Resumed>,
    ) {
        let begins = resumed.is_none();
        let (recorded, prior) =
            resumed.map_or((Vec::new(), Duration::ZERO), |r| (r.entries, r.prior));
        let run = Run {
            account: record.account.clone(),
            agent_id: record.agent_id.clone(),
            fence,
        };
        let store = self.services.journal.clone();
        let bounds = Bounds {
            total: self.config.max_journal_bytes,
            sandbox: self.config.max_journal_sandbox_bytes,
        };
        let journal = Arc::new(Journal::new(run.clone(), store, recorded, bounds));
        let now = Instant::now();
        let ctx = Arc::new(AgentCtx {
            agent_id: record.agent_id.clone(),
            account: record.account.clone(),
            fence,
            memory_quota: allowance.memory_quota,
            memory_mode: record.memory_mode,
            tools: record.tools.clone().map(Into::into),
            stop: StopSignal::default(),
            mind_failed: AtomicBool::new(false),
            token_budget: allowance.token_budget,
            over_tokens: AtomicBool::new(false),
            started: now.checked_sub(prior).unwrap_or(now),
            cpu: Arc::new(CpuMeter::new(allowance.cpu_budget)),
            journal,
            door: Door::new(self.services.clone()),
            parking: Parking::new(self.config.hibernate_after_ms, &self.admission),
            timings: self.timings.clone(),
        });
        self.admission.launched(&ctx);
        let inner = self.clone();
        let task = record.task.clone();
        self.guest_tasks.spawn(async move {
            let journals = &inner.services.journal;
            if begins && let Err(e) = journals.begin(&run, allowance).await {
                tracing::error!(agent = %ctx.agent_id, error = %e, "beginning the journal failed");
            }
            let mut slot = slot;
            supervise(&inner, &ctx, &pre, &task, &mut slot).await;
            if let Err(e) = journals.end(&run).await {
                tracing::error!(agent = %ctx.agent_id, error = %e, "deleting the journal failed");
            }
            inner.admission.ended(&ctx, slot);
        });
    }

    /// Launches an agent this node claimed from another node's offer, its component
    /// resolved here (loaded, or compiled once on a node without an artifact of it). One
    /// that cannot be loaded here fails (`instantiation_failed`).
    pub(super) async fn launch_claimed(
        self: &Arc<Self>,
        slot: Slot,
        record: AgentRecord,
        allowance: Allowance,
    ) {
        let spec = record.agent.as_ref().map(|a| a.component_id.clone());
        let fence = Some(FIRST_EPOCH);
        match self.agent_for(&record.account, spec).await {
            Ok((_, pre)) => self.launch(slot, &record, fence, allowance, pre, None),
            Err(refusal) => {
                let failure = Failure {
                    code: "instantiation_failed".into(),
                    message: format!(
                        "the node that took this agent could not load its component: {refusal:?}"
                    ),
                };
                let (account, id) = (&record.account, &record.agent_id);
                if let Err(e) = fail(&self.services.records, account, id, fence, failure).await {
                    tracing::error!(agent = %id, error = %e, "recording the agent's failure failed");
                }
            }
        }
    }

    /// [`Runtime::signal_stop`]; with `kill`, no grace: the agent is dropped at once (this
    /// node's claim on it is stale, and another node has or will have its say).
    pub(super) fn signal_stop(&self, agent_id: &str, kill: bool) {
        let Some(agent) = self.admission.agent(agent_id) else {
            return;
        };
        // Its record is (or is being made) terminal: the account may spawn in its place.
        self.admission.release(agent_id);
        let raised = match kill {
            true => agent.stop.kill(),
            false => agent.stop.request(),
        };
        if !raised {
            return;
        }
        self.timings.stop_requested(agent_id);
        // A CPU-bound guest holds its task until its slice ends, so the grace timer is seen
        // only at the next epoch tick (up to 10 ms late). Advancing the epoch when the
        // grace ends makes every running guest yield at once — this one is then dropped,
        // the others just start a new slice. (Called outside the async runtime, as at
        // shutdown, the next tick does it.)
        let engine = self.compiled.engine.clone();
        let grace = grace(&self.config);
        let Ok(tokio) = tokio::runtime::Handle::try_current() else {
            return;
        };
        tokio.spawn(async move {
            agent.stop.deadline(grace).await;
            engine.increment_epoch();
        });
    }
}

/// Marks the agent failed with `failure` unless it already ended, and logs its end.
pub(super) async fn fail(
    records: &AgentStore,
    account: &str,
    id: &str,
    fence: Fence,
    failure: Failure,
) -> Result<(), RecordError> {
    // The status and its `terminal` event in one transaction, as at a run's end; neither
    // when the agent had already ended.
    let updated = records.update_logged(
        account,
        id,
        fence,
        move |r| {
            let alive = !r.status.is_terminal();
            if alive {
                r.status = Status::Failed;
                r.ended_at = Some(now_ms());
                r.error = Some(failure);
            }
            alive
        },
        |r| {
            let data = json!({ "status": "failed", "error": r.error });
            LogEvent::new("terminal", "failed".into(), Some(data))
        },
    );
    updated.await?;
    Ok(())
}

/// Runs the agent, and again by replay each time it wakes from hibernation, until its run
/// ends.
async fn run_and_wake(
    inner: &Arc<Inner>,
    ctx: &Arc<AgentCtx>,
    pre: &AgentPre<AgentState>,
    task: &str,
) -> Ended {
    loop {
        // Boxed: the run's frames (the store's instantiation and call) are held only while
        // it runs, not by a parked agent's task.
        let Ended {
            outcome,
            usage,
            conversation,
        } = Box::pin(run(inner, ctx, pre, task)).await;
        let pending = match outcome {
            Outcome::Parked(pending) => pending,
            outcome => {
                return Ended {
                    outcome,
                    usage,
                    conversation,
                };
            }
        };
        if let Err(outcome) = inner.park(ctx, pending).await {
            let usage = Usage {
                cpu_ms: ctx.cpu.used().as_millis() as u64,
                ..usage
            };
            return Ended {
                outcome,
                usage,
                conversation: Vec::new(),
            };
        }
    }
}

/// The agent's task: marks it running, runs it unless already stopped, extracts, records.
async fn supervise(
    inner: &Arc<Inner>,
    ctx: &Arc<AgentCtx>,
    pre: &AgentPre<AgentState>,
    task: &str,
    slot: &mut Slot,
) {
    let records = &inner.services.records;
    let (account, id) = (&ctx.account, &ctx.agent_id);
    let started = records.update(account, id, ctx.fence, |r| {
        let starting = r.status == Status::Spawning;
        if starting {
            r.status = Status::Running;
            r.started_at = Some(now_ms());
        }
        starting
    });
    match started.await {
        Ok(Some(r)) if r.status == Status::Running => inner.timings.running(id),
        Ok(_) => {}
        Err(e) => tracing::error!(agent = %id, error = %e, "recording the agent as running failed"),
    }
    let Ended {
        outcome,
        mut usage,
        conversation,
    } = match ctx.stop.requested() {
        true => Ended {
            outcome: Outcome::Stopped,
            usage: Usage::default(),
            conversation: Vec::new(),
        },
        false => run_and_wake(inner, ctx, pre, task).await,
    };
    inner.admission.vacate_ended(slot);
    let run_ms = ctx.started.elapsed().as_millis() as u64;
    if let Outcome::Completed(answer) = &outcome
        && ctx.memory_mode.extracts()
    {
        let report = RunReport {
            task: task.to_string(),
            conversation,
            answer: answer.clone(),
        };
        usage += extraction::extract(&inner.services, ctx, report).await;
    }
    // Its record turns terminal next: once a client can read that, the account may spawn
    // in its place, though the journal's end is still to be written here.
    inner.admission.release(id);
    let steps = ctx.journal.steps();
    // The status and its `terminal` event in one transaction: a client that sees the
    // run ended finds the event in its log.
    let ended = records
        .update_logged(
            account,
            id,
            ctx.fence,
            move |r| {
                r.usage += usage;
                r.steps = steps;
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
                        Outcome::Parked(_) => unreachable!("run_and_wake resumes a parked agent"),
                    }
                }
                true
            },
            move |r| {
                let data =
                    json!({ "status": r.status.as_str(), "error": r.error, "run_ms": run_ms });
                LogEvent::new("terminal", r.status.as_str().into(), Some(data))
            },
        )
        .await
        .map(|ended| {
            if let Some(r) = ended {
                metrics::counter!(names::AGENTS_ENDED, "status" => r.status.as_str()).increment(1);
            }
        });
    match ended {
        Ok(()) => {}
        // Failed by another node, which metered the run up to this node's last heartbeat.
        Err(RecordError::Stale(_)) => {
            tracing::warn!(agent = %ctx.agent_id, "the agent's claim went stale: its end is another node's");
            return;
        }
        Err(e) => {
            tracing::error!(agent = %ctx.agent_id, error = %e, "recording the agent's end failed");
        }
    }
    let delta = usage.month(run_ms);
    if let Err(e) = inner
        .services
        .usage
        .add(&ctx.account, now_ms(), delta)
        .await
    {
        tracing::error!(error = %e, "recording agent usage failed");
    }
}
