//! Where memories are kept: the seam between the memory API's operations
//! ([`MemoryService`](super::MemoryService): validation, embedding, the ranking formula,
//! dedupe's and consolidation's policies) and a storage backend.
//!
//! Two backends implement [`MemoryBackend`]: [`Embedded`](super::embedded::Embedded) (redb,
//! tantivy and usearch in the data dir: one machine) and
//! [`PgMemory`](super::postgres::PgMemory) (PostgreSQL with pgvector, shared by every node).
//! Both keep every version, tombstone and access count, count an account's live memories
//! for its quota in the write's own transaction, and score keywords with BM25 over the
//! account's own documents, so a search's breakdown means the same on either.

use std::sync::Arc;

use async_trait::async_trait;
use futures_util::future::BoxFuture;

use super::{
    ImportReport, ListQuery, Quota, Result,
    input::PutInput,
    record::{Memory, Provenance},
    search::Candidate,
    transfer::Prepared,
};

/// The claim an agent's write is made under, where nodes share the store (the postgres
/// backend, whose nodes claim agents under an epoch bumped at each claim: see
/// `runtime::cluster`): the write lands only while the agent's row holds `epoch`, checked
/// in the write's own transaction under a share lock of that row, which a claim waits
/// for. So a node that lost its claim — paused past its lease while another node took the
/// agent over — cannot land a late write. The embedded backend has one process and no
/// claims: its writes carry none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFence {
    pub agent_id: String,
    pub epoch: u64,
}

/// What a put did.
#[derive(Debug, Clone, PartialEq)]
pub struct PutOutcome {
    /// The latest version after the put.
    pub memory: Memory,
    /// False when the put was identical to the live version (nothing written).
    pub created: bool,
}

impl PutOutcome {
    /// A put that wrote nothing: `memory` already is what it asked for.
    pub fn kept(memory: Memory) -> Self {
        Self {
            memory,
            created: false,
        }
    }

    /// Whether the put made a version past those `quota` keeps of its key: the older ones
    /// are to be pruned, in the put's own transaction.
    pub fn prunes(&self, quota: Quota) -> bool {
        self.created && self.memory.version > quota.keep()
    }
}

/// One page of a list.
#[derive(Debug)]
pub struct ListPage {
    /// Newest first.
    pub memories: Vec<Memory>,
    /// The id to continue below, when more remain.
    pub next_before: Option<u64>,
}

impl ListPage {
    /// The page of the first `limit` of `memories`, which were read one past the page to
    /// tell whether more remain.
    pub fn of(mut memories: Vec<Memory>, limit: usize) -> Self {
        let next_before = match memories.len() > limit {
            true => {
                memories.truncate(limit);
                memories.last().map(|m| m.id)
            }
            false => None,
        };
        Self {
            memories,
            next_before,
        }
    }
}

/// One summary of a consolidation: the put that writes it and the originals it replaces.
#[derive(Debug, Clone, PartialEq)]
pub struct Merge {
    pub summary: PutInput,
    pub embedding: Vec<f32>,
    /// Internal ids of the live memories the summary replaces.
    pub originals: Vec<u64>,
}

impl Merge {
    /// The summary's put, its provenance naming the originals `replaced` at the write
    /// (those of the plan still live then).
    pub fn naming(&self, replaced: &[Memory]) -> PutInput {
        let mut input = self.summary.clone();
        input.provenance.replaced = replaced.iter().map(|m| m.memory_id.clone()).collect();
        input
    }
}

/// What one merge did.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// The summary's version after the put (the existing one when it was identical).
    pub summary: Memory,
    /// The originals soft-deleted and linked to it (those still live at the write).
    pub replaced: Vec<Memory>,
}

/// What a search asks the backend for: candidates from both the keyword and the vector
/// side, each restricted to the account, namespace, tags and expiry inside the search.
#[derive(Debug, Clone)]
pub struct CandidateQuery {
    pub account: String,
    pub namespace: Option<String>,
    /// AND filter.
    pub tags: Vec<String>,
    /// Searched by BM25 when `keywords` is set.
    pub query: String,
    pub keywords: bool,
    /// The query's embedding, when the mode uses vectors.
    pub vector: Option<Arc<Vec<f32>>>,
    /// Candidates asked of each side.
    pub k: usize,
    /// Epoch ms: memories expired at this instant are not candidates.
    pub now: u64,
    /// Search the versions live at this instant (epoch ms, then also `now`) instead.
    pub as_of: Option<u64>,
}

/// The storage operations of the memory domain. Every one is scoped to one account the
/// caller authenticated; writes are all-or-nothing and durable when they return.
#[async_trait]
pub trait MemoryBackend: Send + Sync {
    /// The live memory at (namespace, key), if any.
    async fn live(&self, account: &str, namespace: &str, key: &str) -> Result<Option<Memory>>;

    /// Creates, version-updates or (identical value) leaves a memory; refuses with
    /// `QuotaExceeded` when it would take the account past `quota.memories` live memories,
    /// and with `Stale` (writing nothing) when `fence` is given and no longer holds. A new
    /// version past those `quota` keeps of the key has the older ones pruned in the same
    /// transaction (see [`Quota`]): done by the writer, whether or not the caller still
    /// waits for the answer.
    async fn put(
        &self,
        input: PutInput,
        embedding: Vec<f32>,
        quota: Quota,
        fence: Option<RunFence>,
    ) -> Result<PutOutcome>;

    /// Counts an access of the live memory at (namespace, key) and returns it.
    async fn touch(&self, account: &str, namespace: &str, key: &str) -> Result<Memory>;

    /// The live version gets `deletedAt` (and `by`, who deleted it) and leaves every view
    /// but history. A delete `by` an agent's journaled call that finds the version that
    /// same call deleted (made again by the resumed run) answers with it, not `NotFound`.
    /// Refused with `Stale` (deleting nothing) when `fence` is given and no longer holds.
    async fn soft_delete(
        &self,
        account: &str,
        namespace: &str,
        key: &str,
        by: Option<Provenance>,
        fence: Option<RunFence>,
    ) -> Result<Memory>;

    /// Every version of (namespace, key) removed for good; returns how many.
    async fn hard_delete(&self, account: &str, namespace: &str, key: &str) -> Result<usize>;

    /// A page of the stored versions of (namespace, key), newest first: at most `limit`,
    /// older than version `before` (the page's `next_before`) when given.
    async fn history(
        &self,
        account: &str,
        namespace: &str,
        key: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<ListPage>;

    /// One page of live memories, newest first.
    async fn list(&self, account: &str, q: &ListQuery) -> Result<ListPage>;

    /// (namespace, live count) of the account, by namespace name.
    async fn namespaces(&self, account: &str) -> Result<Vec<(String, u64)>>;

    /// (account, live memories) of every account with any (an expired memory counts until
    /// its account's next read reaps it).
    async fn live_counts(&self) -> Result<Vec<(String, u64)>>;

    /// Every live memory of `account` (in `namespace` when given), oldest first.
    async fn live_in(&self, account: &str, namespace: Option<&str>) -> Result<Vec<Memory>>;

    /// Every version of `account` (in `namespace` when given) live at `at`, oldest first,
    /// each with the cosine of its stored embedding to `toward` when given (computed where
    /// the embeddings are, so none is carried out): per key, the newest version written by
    /// `at`, unless deleted or expired by then (see `time::version_at`). A scan of the
    /// account's keys, for reads with a time filter only; versions removed for good (a
    /// hard delete, pruning) are not there.
    async fn versions_at(
        &self,
        account: &str,
        namespace: Option<&str>,
        at: u64,
        toward: Option<Arc<Vec<f32>>>,
    ) -> Result<Vec<(Memory, Option<f32>)>>;

    /// Writes `items` in order as puts within `quota` (each pruning as [`put`](Self::put)
    /// does, in its own transaction), halting at the quota of live memories: on postgres
    /// in one transaction, on the embedded backend in pieces of
    /// [`BULK_PIECE`](super::writer::BULK_PIECE) items, each its own transaction, so the
    /// single writer can take other accounts' puts between them. Either way an error may
    /// leave the items before it written, as a quota halt does; sent again, they are
    /// counted imported without new versions (a put of the live value changes nothing).
    async fn import(
        &self,
        account: &str,
        items: Vec<Prepared>,
        quota: Quota,
    ) -> Result<ImportReport>;

    /// Soft-deletes those of `ids` still live in `account`; returns how many.
    async fn soft_delete_ids(&self, account: &str, ids: Vec<u64>) -> Result<usize>;

    /// Consolidation's write, all in one transaction: every original still live is
    /// soft-deleted, then each summary is put (no quota room needed: each merge replaces
    /// at least as many memories as it adds) and its originals linked to it.
    async fn consolidate(&self, account: &str, merges: Vec<Merge>) -> Result<Vec<Merged>>;

    /// Candidates for a search with what each side found: BM25 from the keyword side, the
    /// cosine from the vector side — and, for a keyword-only candidate when the query has a
    /// vector, its cosine from the stored embedding. Of the live memories, or with `as_of`
    /// of the versions live then, from indexes of the past too (the embedded backend's own
    /// tantivy and usearch indexes of them; on postgres the table's index of the versions
    /// no longer counted), never a scan of the account.
    async fn candidates(&self, q: &CandidateQuery) -> Result<Vec<(Memory, Candidate)>>;

    /// [`candidates`](Self::candidates) of a query whose embedding is still being made:
    /// `vector` gives it (`q.vector` is not read). A backend that can start on the rest
    /// meanwhile does — postgres asks for the keyword candidates on another connection
    /// while the embedder works; by default the embedding is awaited first.
    async fn candidates_embedding<'a>(
        &'a self,
        mut q: CandidateQuery,
        vector: BoxFuture<'a, Result<Arc<Vec<f32>>>>,
    ) -> Result<Vec<(Memory, Candidate)>> {
        q.vector = Some(vector.await?);
        self.candidates(&q).await
    }

    /// Up to `k` nearest other memories of each of `ids` at or above `threshold`:
    /// `(memory, neighbour, cosine)`.
    async fn neighbours(
        &self,
        account: &str,
        ids: Vec<u64>,
        k: usize,
        threshold: f32,
    ) -> Result<Vec<(u64, u64, f32)>>;

    /// Makes derived state durable (the embedded indexes); blocking.
    fn checkpoint(&self) -> Result<()>;
}
