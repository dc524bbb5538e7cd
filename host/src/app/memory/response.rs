//! What the memory routes answer, beside the memory views they share.

use serde::Serialize;
use utoipa::ToSchema;

use super::super::views::{ExportItem, MemoryView, SearchHitView, TokenUsage};

/// POST /api/v1/memory/search
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResponse {
    /// Best first.
    pub results: Vec<SearchHitView>,
}

/// GET /api/v1/memory/list
#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryList {
    /// Newest first.
    pub data: Vec<MemoryView>,
    /// Pass back as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// GET /api/v1/memory/history: a page of the versions, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct History {
    /// Newest first.
    pub data: Vec<MemoryView>,
    /// Pass back as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// DELETE /api/v1/memory
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DeleteResult)]
pub struct DeleteResponse {
    pub deleted: bool,
    pub hard: bool,
    pub key: String,
    pub namespace: String,
    /// Versions removed for good (0 on a soft delete).
    pub versions_removed: usize,
    /// The memory as soft-deleted; absent on a hard delete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryView>,
}

/// A pair of near-duplicates: which memory stayed and which went.
#[derive(Debug, Serialize, ToSchema)]
pub struct DedupePair {
    pub kept: String,
    pub removed: String,
    #[schema(minimum = 0, maximum = 1)]
    pub similarity: f32,
}

/// POST /api/v1/memory/dedupe
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DedupeResult)]
pub struct DedupeResponse {
    pub removed: usize,
    pub kept: usize,
    pub dry_run: bool,
    pub pairs: Vec<DedupePair>,
}

/// One cluster consolidation summarized (or, dry, would summarize).
#[derive(Debug, Serialize, ToSchema)]
pub struct ConsolidatedCluster {
    /// The summary memory; null on a dry run.
    pub memory_id: Option<String>,
    pub key: Option<String>,
    pub namespace: String,
    /// memory_ids of the originals replaced.
    pub replaced: Vec<String>,
}

/// POST /api/v1/memory/consolidate
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ConsolidateResult)]
pub struct ConsolidateResponse {
    pub dry_run: bool,
    pub clusters: usize,
    /// Groups of similar memories left alone.
    pub skipped: usize,
    pub consolidated: Vec<ConsolidatedCluster>,
    /// The Mind's tokens, metered to the account.
    pub usage: TokenUsage,
}

/// A namespace and how many live memories it holds.
#[derive(Debug, Serialize, ToSchema)]
pub struct NamespaceEntry {
    pub namespace: String,
    pub count: u64,
}

/// GET /api/v1/memory/namespaces
#[derive(Debug, Serialize, ToSchema)]
pub struct Namespaces {
    pub namespaces: Vec<NamespaceEntry>,
}

/// The format name of an export document.
pub const EXPORT_FORMAT: &str = "wasmind.memory.export";

/// GET /api/v1/memory/export
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportDocument {
    /// Always "wasmind.memory.export".
    pub format: &'static str,
    /// Always 1.
    pub version: u32,
    /// Epoch milliseconds.
    pub exported_at: u64,
    pub count: usize,
    pub memories: Vec<ExportItem>,
}

/// Why one import item was not imported.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportItemError {
    /// Its position in `memories`.
    pub index: usize,
    /// Its key, when it had a string one.
    pub key: Option<String>,
    /// `invalid_<field>`, or `invalid_memory` for an item that is not an object.
    pub code: String,
    pub message: String,
}

/// POST /api/v1/memory/import
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportResult {
    pub imported: usize,
    pub failed: usize,
    pub errors: Vec<ImportItemError>,
}

/// `details` of an import that halted at the memory quota: what it did, and the quota.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportQuotaDetails {
    #[serde(flatten)]
    pub counts: ImportResult,
    pub limit: u64,
    pub used: u64,
}

/// `details` of 402 `memory_quota_exceeded`.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuotaDetails {
    /// Live memories the plan allows.
    pub limit: u64,
    /// Live memories in use.
    pub used: u64,
}

/// `details` of 429 `rate_limited` on consolidation.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConsolidateRateLimitDetails {
    /// `in_progress` (one is running) or `cooldown` (one wrote recently).
    #[schema(schema_with = refusal_reason)]
    pub reason: &'static str,
    /// The configured cooldown after a consolidation that wrote.
    #[serde(rename = "cooldownSecs")]
    pub cooldown_secs: u64,
}

fn refusal_reason() -> utoipa::openapi::Schema {
    super::super::schema::one_of(["in_progress", "cooldown"]).into()
}

/// `details` of 402 `monthly_quota_exceeded` on consolidation: the month's Mind tokens
/// against the plan's, in the words of the spawn's `MonthlyQuotaDetails` (consolidation
/// spends no agent-hours, so only the token budget can refuse it).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenQuotaDetails {
    pub plan: &'static str,
    /// The budget that is spent: always `tokens`.
    #[schema(schema_with = token_budget)]
    pub budget: &'static str,
    /// Mind tokens (input plus output) spent this month.
    pub used_tokens: u64,
    /// The plan's `tokens_per_month`.
    pub limit_tokens: u64,
    #[schema(format = DateTime)]
    pub resets_at: String,
}

fn token_budget() -> utoipa::openapi::Schema {
    super::super::schema::one_of(["tokens"]).into()
}
