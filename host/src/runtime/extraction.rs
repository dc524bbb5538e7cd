//! Automatic extraction (§4.4): after a run completes in `auto` or `both` mode, the Mind
//! reads the run and proposes memories, and each goes through the API's put path (same
//! validation, versioning, idempotency and quota) with source `auto_extracted`.
//!
//! A proposal is read like an import item: into the same `MemoryDraft` a put body is, then
//! into a `PutInput` by the one constructor that validates.
//!
//! The run has already succeeded, so nothing here can fail it: a Mind failure, a proposal
//! the put path rejects and a full quota are each logged on the agent as an `extraction`
//! event, and what was written is logged too (with its `memory_id`). A stop requested
//! meanwhile abandons the rest. Extraction is a Mind job of the host's for the account:
//! once the month's Mind tokens are spent it is skipped (logged, not asked of the Mind);
//! what it spends counts in the run's usage and so in the month's.

use serde_json::json;

use super::{
    records::{Progress, RecordError, Usage},
    state::{AgentCtx, Services},
};
use crate::{
    clock::now_ms,
    memory::{Door, MemoryDraft, MemoryError, Provenance, PutInput},
    mind::RunReport,
};

/// The log event kind of everything extraction does.
pub const LOG_KIND: &str = "extraction";

/// Extracts and writes the memories of `run` with the runtime's `services` (the host's
/// work, not the agent's: its door stays closed); returns the tokens the Mind spent.
pub async fn extract(services: &Services, ctx: &AgentCtx, run: RunReport) -> Usage {
    if let Err(why) = admitted(services, ctx).await {
        tracing::info!(agent = %ctx.agent_id, reason = %why, "extraction skipped");
        log(services, ctx, format!("extraction skipped: {why}"), None).await;
        return Usage::default();
    }
    let proposals = tokio::select! {
        proposals = services.mind.extract(&run) => proposals,
        _ = ctx.stop.wait() => return Usage::default(),
    };
    let proposals = match proposals {
        Ok(p) => p,
        Err(e) => {
            log(services, ctx, format!("extraction failed: {e}"), None).await;
            return Usage::default();
        }
    };
    let provenance = Provenance {
        agent_id: Some(ctx.agent_id.clone()),
        ..Provenance::door(Door::AutoExtraction)
    };
    let mut written = 0;
    for proposal in proposals.memories {
        if ctx.stop.requested() {
            break;
        }
        let input = MemoryDraft::from_object(proposal.clone())
            .and_then(|draft| PutInput::new(&ctx.account, draft, provenance.clone()));
        let put = match input {
            Ok(input) => {
                let (quota, fence) = (ctx.memory_quota, ctx.memory_fence());
                services.memory.put_fenced(input, quota, fence).await
            }
            Err(e) => Err(e),
        };
        match put {
            Ok(outcome) => {
                written += 1;
                let m = &outcome.memory;
                let data = json!({ "memory_id": m.memory_id, "key": m.key, "namespace": m.namespace, "created": outcome.created });
                log(
                    services,
                    ctx,
                    format!("remembered {:?} in {:?}", m.key, m.namespace),
                    Some(data),
                )
                .await;
            }
            // Another node runs the agent now: nothing more is written or logged here.
            Err(e @ MemoryError::Stale(_)) => {
                tracing::warn!(agent = %ctx.agent_id, error = %e, "extraction stopped");
                break;
            }
            Err(e @ MemoryError::QuotaExceeded { .. }) => {
                log(
                    services,
                    ctx,
                    format!("extraction stopped: {e}"),
                    Some(json!({ "proposal": proposal })),
                )
                .await;
                break;
            }
            Err(e) => {
                let data = json!({ "proposal": proposal, "error": e.to_string() });
                log(services, ctx, format!("proposal rejected: {e}"), Some(data)).await;
            }
        }
    }
    let summary = Progress {
        ts: now_ms(),
        kind: "info".into(),
        message: format!("automatic extraction remembered {written} memories"),
        step: None,
    };
    let summarized = (services.records).update(&ctx.account, &ctx.agent_id, ctx.fence, |r| {
        r.progress.push(summary);
        true
    });
    record(ctx, "the extraction summary", summarized.await);
    proposals.usage.into()
}

/// Whether the extraction may call the Mind, or why not: this node's claim on the agent
/// holds (on the postgres backend), and the account's month has Mind tokens left (on the
/// plan it has now).
async fn admitted(services: &Services, ctx: &AgentCtx) -> Result<(), String> {
    ctx.journal.holds().await.map_err(|e| e.to_string())?;
    let tokens = (services.budgets.current(&ctx.account).await).map_err(|e| e.to_string())?;
    tokens.check().await.map_err(|e| e.to_string())
}

async fn log(
    services: &Services,
    ctx: &AgentCtx,
    message: String,
    data: Option<serde_json::Value>,
) {
    let logged = (services.records).append_log(
        &ctx.account,
        &ctx.agent_id,
        ctx.fence,
        LOG_KIND,
        message,
        data,
    );
    record(ctx, "an extraction event", logged.await);
}

/// Logs a failure to record `what`, and only logs it: nothing of extraction may fail the
/// run.
fn record<T>(ctx: &AgentCtx, what: &'static str, written: Result<T, RecordError>) {
    if let Err(e) = written {
        tracing::error!(agent = %ctx.agent_id, error = %e, "recording {what} failed");
    }
}
