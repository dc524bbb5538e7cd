//! One agent's run: instantiate its component (the default agent or an uploaded one) in a
//! fresh `Store`, call its `run` export,
//! and say how it ended. The run is raced against the stop grace and the run-time limit,
//! and the store is dropped at the end wherever the guest is.
//!
//! Failure codes on `error.code`: `agent_error` (the agent returned an error, its message
//! clipped to 2,000 characters), `mind_unavailable` (the Mind failed after retries),
//! `guest_trap` (a trap or panic, a stack overflow included), `memory_limit_exceeded`,
//! `table_limit_exceeded`, `run_time_exceeded` (instantiation included: a start function
//! that never returns is interrupted like a `run` that never does), `instantiation_failed`,
//! `result_too_large` (the final result is over `[runtime] max_result_bytes`),
//! `cpu_limit_exceeded` (the run used more CPU time than its plan's `cpu_seconds_per_run`),
//! `token_limit_exceeded` (its Mind calls spent more tokens than its plan's
//! `tokens_per_run`), and from its journal `replay_diverged` (a resumed guest made another call than the
//! recorded one), `journal_limit_exceeded` (over `[runtime] max_journal_bytes`) and
//! `journal_failed` (the journal could not be stored). A node whose claim on the agent
//! went stale ends its run with `claim_lost`, which no record carries: the node that took
//! the run over ends it, and this node's write of the end is fenced off like the journal's.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use wasmtime::{Store, UpdateDeadline};

use super::{
    bindings::AgentPre,
    bounds::{MAX_ERROR_CHARS, check_result, clip},
    cpu::{OverBudget, metered},
    journal::Fault as JournalFault,
    lifecycle::{Inner, grace},
    park::Pending,
    records::{Failure, Usage},
    state::{AgentCtx, AgentState},
};
use crate::mind::Message;

/// How a run ended.
pub(super) enum Outcome {
    Completed(String),
    Failed(Failure),
    Stopped,
    /// Not ended: the agent hibernated in the call it waits on (see `park`).
    Parked(Pending),
}

pub(super) fn failure(code: &str, message: impl Into<String>) -> Outcome {
    Outcome::Failed(Failure {
        code: code.into(),
        message: message.into(),
    })
}

/// Where a run that did not return went wrong.
enum Fault {
    /// The component could not be instantiated.
    Instantiation(wasmtime::Error),
    /// The guest trapped (or panicked) while running.
    Trap(wasmtime::Error),
    /// The guest used its CPU budget up.
    OverBudget,
}

impl Fault {
    /// A trap while instantiating (in a start function) is the guest's fault, like one in
    /// `run`; anything else is the host's.
    fn instantiation(e: wasmtime::Error) -> Self {
        match e.downcast_ref::<wasmtime::Trap>() {
            Some(_) => Fault::Trap(e),
            None => Fault::Instantiation(e),
        }
    }
}

/// What a run leaves behind.
pub(super) struct Ended {
    pub outcome: Outcome,
    /// Tokens the agent's Mind calls spent.
    pub usage: Usage,
    /// The last conversation the guest sent the Mind, for extraction.
    pub conversation: Vec<Message>,
}

/// Instantiates and runs the guest until it returns, fails, runs out of time, or its stop
/// grace ends — then drops the store, wherever the guest is.
pub(super) async fn run(
    inner: &Inner,
    ctx: &Arc<AgentCtx>,
    pre: &AgentPre<AgentState>,
    task: &str,
) -> Ended {
    let config = &inner.config;
    let mut store = Store::new(&inner.compiled.engine, AgentState::new(ctx.clone(), config));
    store.limiter(|state| &mut state.limits);
    store.set_epoch_deadline(1);
    // At each tick the guest's slice ends: its task goes behind the agents waiting for a
    // CPU slot (see `cpu`), and lets the scheduler poll its I/O and timers first.
    store.epoch_deadline_callback(|store| {
        let cpu = store.data().agent.cpu.clone();
        Ok(UpdateDeadline::YieldCustom(1, Box::pin(cpu.end_slice())))
    });
    let grace = grace(config);
    // A resumed run's time before the restart counts (`ctx.started` is that much earlier).
    let ends = ctx.started + Duration::from_secs(config.max_run_secs);
    let result = {
        let run = async {
            let instantiating = Instant::now();
            let agent = pre
                .instantiate_async(&mut store)
                .await
                .map_err(Fault::instantiation)?;
            inner
                .timings
                .instantiated(&ctx.agent_id, instantiating.elapsed());
            agent.call_run(&mut store, task).await.map_err(Fault::Trap)
        };
        // Polled in a fair share of the guests' CPU, and metered.
        let run = async {
            match metered(inner.cpu.clone(), &ctx.account, ctx.cpu.clone(), run).await {
                Ok(result) => result,
                Err(OverBudget) => Err(Fault::OverBudget),
            }
        };
        // Biased, the ends first: once the grace or the run time is over, the guest gets
        // no further slice.
        tokio::select! {
            biased;
            () = ctx.stop.deadline(grace) => None,
            () = tokio::time::sleep_until(ends.into()) => None,
            result = run => Some(result),
        }
    };
    // A hibernated agent's run unwound for its parked call, whatever else came meanwhile
    // (a stop, the time limit): parking sees to those.
    if let Some(pending) = store.data_mut().parked.take() {
        let usage = store.data().usage;
        drop(store);
        return Ended {
            outcome: Outcome::Parked(pending),
            usage,
            conversation: Vec::new(),
        };
    }
    let state = store.data();
    // A journal fault ends the run by its own code, whatever the guest made of it.
    let journal_fault = match &result {
        Some(Err(Fault::Trap(e))) => e.downcast_ref::<JournalFault>().cloned(),
        Some(Ok(_)) => ctx.journal.finish().err(),
        _ => None,
    };
    let outcome = match (result, journal_fault) {
        _ if ctx.stop.requested() => Outcome::Stopped,
        _ if ctx.over_tokens() => failure(
            "token_limit_exceeded",
            format!(
                "the agent's Mind calls spent {} tokens, past its plan's {} per run",
                state.usage.tokens(),
                ctx.token_budget
            ),
        ),
        (_, Some(fault)) => failure(fault.code(), fault.to_string()),
        (result, None) => match result {
            None => failure(
                "run_time_exceeded",
                format!("the agent ran longer than {} s", config.max_run_secs),
            ),
            Some(Ok(Ok(text))) => match check_result(&text, config.max_result_bytes) {
                Ok(()) => Outcome::Completed(text),
                Err(message) => failure("result_too_large", message),
            },
            Some(Ok(Err(message))) if ctx.mind_failed() => {
                failure("mind_unavailable", clip(&message, MAX_ERROR_CHARS))
            }
            Some(Ok(Err(message))) => failure("agent_error", clip(&message, MAX_ERROR_CHARS)),
            Some(Err(Fault::Instantiation(e))) => {
                tracing::error!(error = %e, agent = %ctx.agent_id, "instantiation failed");
                failure(
                    "instantiation_failed",
                    "the agent could not be started; try again",
                )
            }
            Some(Err(Fault::OverBudget)) => failure(
                "cpu_limit_exceeded",
                format!(
                    "the agent used more than its plan's {} CPU seconds per run",
                    ctx.cpu.budget().as_secs_f64()
                ),
            ),
            Some(Err(Fault::Trap(_))) if state.limits.memory_denied => failure(
                "memory_limit_exceeded",
                format!(
                    "the agent exceeded its memory limit of {} MiB",
                    config.memory_limit_mib
                ),
            ),
            Some(Err(Fault::Trap(_))) if state.limits.table_denied => failure(
                "table_limit_exceeded",
                format!(
                    "the agent exceeded its table limit of {} elements",
                    config.table_elements_limit
                ),
            ),
            Some(Err(Fault::Trap(e))) => {
                let trap = e
                    .downcast_ref::<wasmtime::Trap>()
                    .map_or_else(|| "trap".to_string(), ToString::to_string);
                let message = match state.stderr_tail() {
                    Some(tail) => format!("the agent crashed ({trap}): {tail}"),
                    None => format!("the agent crashed ({trap})"),
                };
                failure("guest_trap", message)
            }
        },
    };
    let usage = Usage {
        cpu_ms: ctx.cpu.used().as_millis() as u64,
        ..state.usage
    };
    let dropped = [
        ("progress_reports", state.bounds.progress.dropped()),
        ("log_events", state.bounds.log.dropped()),
    ];
    let conversation = std::mem::take(&mut store.data_mut().conversation);
    drop(store);
    note_dropped(inner, ctx, dropped).await;
    inner.timings.dropped(&ctx.agent_id);
    Ended {
        outcome,
        usage,
        conversation,
    }
}

/// Says in the log, once at the end, how many reports past the run's bounds were dropped
/// (nothing when none were).
async fn note_dropped(inner: &Inner, ctx: &AgentCtx, dropped: [(&'static str, u64); 2]) {
    if dropped.iter().all(|(_, n)| *n == 0) {
        return;
    }
    let message = dropped
        .iter()
        .map(|(what, n)| format!("{n} {}", what.replace('_', " ")))
        .collect::<Vec<_>>()
        .join(" and ");
    let data = serde_json::Value::Object(
        dropped
            .iter()
            .map(|(what, n)| (format!("dropped_{what}"), (*n).into()))
            .collect(),
    );
    let message = format!("dropped past the run's bounds: {message}");
    let logged = (inner.services.records).append_log(
        &ctx.account,
        &ctx.agent_id,
        ctx.fence,
        "limit",
        message,
        Some(data),
    );
    if let Err(e) = logged.await {
        tracing::error!(agent = %ctx.agent_id, error = %e, "logging the dropped reports failed");
    }
}
