//! The memory operations whose rules are more than one call of the memory service: a
//! write and an import within the plan's live-memory quota, a consolidation within the
//! month's Mind tokens (metered as it goes, whichever door asked), and the account's memory
//! as the agents' memory tools reach it (MCP's); with the memory routes' typed requests
//! and responses.

mod request;
mod response;

use serde_json::Value;
use wasmind_sdk::Memory as ToolMemory;

pub use self::{request::*, response::*};
use super::{AppError, AppResult, AppState, Kind, cursor::Pager, views::TokenUsage};
use crate::{
    accounts::Principal,
    memory::{
        ConsolidateQuery, Door, ImportItem, MemoryDraft, Provenance, PutInput, PutOutcome, Quota,
        Rejected,
    },
    runtime::account_memory,
};

/// Cursor kinds of memory list and history pages.
pub const LIST_CURSOR: Pager = Pager::new("m1");
pub const HISTORY_CURSOR: Pager = Pager::new("h1");

/// The live-memory quota of `who`'s plan.
fn quota(state: &AppState, who: &Principal) -> Quota {
    state.limits(who.plan).memory_quota()
}

/// Writes `draft` for `who`, through `door`, within its plan's quota.
pub async fn put(
    state: &AppState,
    who: &Principal,
    door: Door,
    draft: MemoryDraft,
) -> AppResult<PutOutcome> {
    let input = PutInput::new(&who.account, draft, Provenance::keyed(door, &who.key_id))?;
    Ok(state.memory.put(input, quota(state, who)).await?)
}

/// `who`'s memory as the agents' memory tools reach it (the guest SDK's), through `door`
/// within its plan's quota.
pub fn tool_memory(state: &AppState, who: &Principal, door: Door) -> ToolMemory {
    let provenance = Provenance::keyed(door, &who.key_id);
    account_memory(
        state.memory.clone(),
        who.account.to_string(),
        quota(state, who),
        provenance,
    )
}

/// Consolidates what `body` asks for `who`, within the month's Mind tokens of its plan:
/// the memory service checks them before each summary and charges what each spends as it
/// arrives, so what a consolidation spent is metered whatever happens after.
pub async fn consolidate(
    state: &AppState,
    who: &Principal,
    body: ConsolidateBody,
) -> AppResult<ConsolidateResponse> {
    let q = ConsolidateQuery {
        key_id: Some(who.key_id.to_string()),
        ..ConsolidateQuery::new(
            body.namespace,
            body.threshold,
            body.min_cluster_size,
            body.dry_run,
        )?
    };
    let tokens = state.budgets.of(&who.account, who.plan);
    let (spent, result) = (state.memory)
        .consolidate(&who.account, &q, state.mind.as_ref(), &tokens)
        .await;
    let report = result?;
    Ok(ConsolidateResponse {
        dry_run: q.dry_run,
        clusters: report.clusters.len(),
        skipped: report.skipped,
        consolidated: report
            .clusters
            .into_iter()
            .map(|c| {
                let (memory_id, key) = c.summary.unzip();
                ConsolidatedCluster {
                    memory_id,
                    key,
                    namespace: c.namespace,
                    replaced: c.replaced,
                }
            })
            .collect(),
        usage: TokenUsage {
            input_tokens: spent.input_tokens.into(),
            output_tokens: spent.output_tokens.into(),
        },
    })
}

/// Imports `body`'s memories for `who` in order, within its plan's quota: each refused
/// item is reported and the rest go on; at the quota the import halts with 402 and what it
/// did so far.
pub async fn import(
    state: &AppState,
    who: &Principal,
    body: ImportBody,
) -> AppResult<ImportResult> {
    let Some(raw) = body.memories else {
        return Err(AppError::invalid_field(
            "memories",
            format!("memories must be {MEMORIES_RULE}"),
        ));
    };
    if raw.len() > IMPORT_MAX_ITEMS {
        return Err(AppError::invalid_field(
            "memories",
            format!(
                "{} memories given; one import takes at most {IMPORT_MAX_ITEMS}",
                raw.len()
            ),
        ));
    }
    let items = raw
        .into_iter()
        .enumerate()
        .map(|(index, item)| import_item(who, index, item))
        .collect();
    let report = (state.memory)
        .import(&who.account, items, quota(state, who))
        .await?;
    let counts = ImportResult {
        imported: report.imported,
        failed: report.failed,
        errors: report
            .errors
            .into_iter()
            .map(|e| ImportItemError {
                index: e.index,
                key: e.key,
                code: e.rejected.code,
                message: e.rejected.message,
            })
            .collect(),
    };
    match report.halted {
        None => Ok(counts),
        Some((limit, used)) => Err(AppError::new(
            Kind::PaymentRequired,
            "memory_quota_exceeded",
            format!(
                "memory quota exceeded after importing {} item(s): {used} of {limit} live memories in use; \
                 run POST /api/v1/memory/dedupe first, otherwise delete memories or upgrade the plan",
                counts.imported
            ),
        )
        .with_details(ImportQuotaDetails {
            counts,
            limit,
            used,
        })),
    }
}

/// One import item, read on its own so a bad one is reported and the rest go on.
fn import_item(who: &Principal, index: usize, item: Value) -> ImportItem {
    let key = item.get("key").and_then(Value::as_str).map(str::to_string);
    let input = match item {
        Value::Object(object) => MemoryDraft::from_object(object)
            .and_then(|draft| {
                let provenance = Provenance::keyed(Door::Import, &who.key_id);
                PutInput::new(&who.account, draft, provenance)
            })
            .map_err(Rejected::from),
        _ => Err(Rejected {
            code: "invalid_memory".into(),
            message: "each memory must be a JSON object".into(),
        }),
    };
    ImportItem { index, key, input }
}
