//! One agent's run: instantiate its component (the default agent or an uploaded one) in a
//! fresh `Store`, call its `run` export,
//! and say how it ended. The run is raced against the stop grace and the run-time limit,
//! and the store is dropped at the end wherever the guest is.
//!
//! Failure codes on `error.code`: `agent_error` (the agent returned an error),
//! `mind_unavailable` (the Mind failed after retries), `guest_trap` (a trap or panic),
//! `memory_limit_exceeded`, `run_time_exceeded`, `instantiation_failed`.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use wasmtime::{Store, UpdateDeadline};

use super::{
    bindings::AgentPre,
    lifecycle::{Inner, grace},
    records::{Failure, Usage},
    state::{AgentCtx, AgentState},
};
use crate::mind::Message;

/// How a run ended.
pub(super) enum Outcome {
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

/// Where a run that did not return went wrong.
enum Fault {
    /// The component could not be instantiated.
    Instantiation(wasmtime::Error),
    /// The guest trapped (or panicked) while running.
    Trap(wasmtime::Error),
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
            let agent = pre
                .instantiate_async(&mut store)
                .await
                .map_err(Fault::Instantiation)?;
            inner
                .timings
                .instantiated(&ctx.agent_id, instantiating.elapsed());
            agent.call_run(&mut store, task).await.map_err(Fault::Trap)
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
        Some(Err(Fault::Instantiation(e))) => {
            tracing::error!(error = %e, agent = %ctx.agent_id, "instantiation failed");
            failure(
                "instantiation_failed",
                "the agent could not be started; try again",
            )
        }
        Some(Err(Fault::Trap(_))) if state.limits.memory_denied => failure(
            "memory_limit_exceeded",
            format!(
                "the agent exceeded its memory limit of {} MiB",
                config.memory_limit_mib
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
    };
    let usage = state.usage;
    let conversation = std::mem::take(&mut store.data_mut().conversation);
    drop(store);
    inner.timings.dropped(&ctx.agent_id);
    Ended {
        outcome,
        usage,
        conversation,
    }
}
