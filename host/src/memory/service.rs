//! `MemoryService`: the operations of the memory API over store, indexes and embedder.

use std::{collections::HashMap, sync::Arc, time::Duration, time::Instant};

use futures_util::FutureExt;
use tokio::sync::RwLock;

use super::MemoryConfig;
use super::{
    Class, MemoryError, PutInput, Quota, Result,
    backend::{CandidateQuery, ListPage, MemoryBackend, Merge, PutOutcome, RunFence},
    consolidate::{
        self, DEFAULT_MIN_CLUSTER_SIZE, DEFAULT_THRESHOLD as DEFAULT_CLUSTER_THRESHOLD, Gate,
    },
    dedupe::{self, Pair},
    embed::EmbedService,
    embedded::Embedded,
    fair::Bounds,
    input::{optional_namespace, optional_unit},
    record::{Memory, Provenance},
    reembed::{self, ReembedReport, ReembedStore, Upgrade},
    scan,
    search::{self, Candidate, SearchHit, SearchQuery},
    store,
    time::{self, TimeFilter},
    transfer::{ImportItem, ImportReport},
};
use crate::{
    accounts::MonthTokens,
    clock::now_ms,
    metrics::names,
    mind::{Mind, Note, Usage},
};

/// Neighbours asked of the vector index per memory by dedupe.
const DEDUPE_NEIGHBOURS: usize = 16;

/// A list request: live memories newest first.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub namespace: Option<String>,
    /// AND filter.
    pub tags: Vec<String>,
    pub limit: usize,
    /// Continue below this internal id (from a previous page).
    pub before: Option<u64>,
    /// The versions live at `as_of` instead of the live ones; only those observed in the
    /// window.
    pub time: TimeFilter,
}

/// What a delete did.
#[derive(Debug, Clone, PartialEq)]
pub enum Deleted {
    /// The live version, now soft-deleted.
    Soft(Box<Memory>),
    /// How many versions were removed for good.
    Hard(usize),
}

/// What a dedupe did (or, dry, would do).
#[derive(Debug, Clone, PartialEq)]
pub struct DedupeReport {
    pub scanned: usize,
    pub pairs: Vec<(Pair, String, String)>,
    pub removed: usize,
}

/// A consolidation request (§4.2).
#[derive(Debug, Clone, PartialEq)]
pub struct ConsolidateQuery {
    /// Only this namespace; every namespace (each on its own) when `None`.
    pub namespace: Option<String>,
    pub threshold: f32,
    pub min_cluster_size: usize,
    /// Only report the clusters: no Mind calls, no writes, and not held by the gate.
    pub dry_run: bool,
    /// The API key that asked for it, recorded in the summaries' provenance.
    pub key_id: Option<String>,
}

impl ConsolidateQuery {
    /// A consolidation of the fields as given, checked (an absent one is its default):
    /// `namespace` a valid one, `threshold` in `[0, 1]`, `min_cluster_size` a whole number
    /// of at least 2. No key: a door that has one names it in `key_id`.
    pub fn new(
        namespace: Option<String>,
        threshold: Option<f64>,
        min_cluster_size: Option<f64>,
        dry_run: Option<bool>,
    ) -> Result<Self> {
        let min_cluster_size = match min_cluster_size {
            None => DEFAULT_MIN_CLUSTER_SIZE,
            // A size past any account's memories forms no cluster: it saturates, as `as` does.
            Some(n) if n.fract() == 0.0 && n >= 2.0 => n as usize,
            Some(_) => {
                return Err(MemoryError::invalid(
                    "min_cluster_size",
                    "min_cluster_size must be a whole number of at least 2",
                ));
            }
        };
        Ok(ConsolidateQuery {
            namespace: optional_namespace(namespace)?,
            threshold: optional_unit("threshold", threshold)?
                .map_or(DEFAULT_CLUSTER_THRESHOLD, |t| t as f32),
            min_cluster_size,
            dry_run: dry_run.unwrap_or(false),
            key_id: None,
        })
    }
}

/// One cluster and what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterOutcome {
    pub namespace: String,
    /// The summary's (memory_id, key); `None` on a dry run.
    pub summary: Option<(String, String)>,
    /// memory_ids of the originals replaced (on a dry run: that would be).
    pub replaced: Vec<String>,
}

/// What a consolidation did (or, dry, would do).
#[derive(Debug, Clone, PartialEq)]
pub struct ConsolidateReport {
    pub clusters: Vec<ClusterOutcome>,
    /// Groups of similar memories left alone (see `consolidate`).
    pub skipped: usize,
}

/// The memory domain's entry point; cheap to clone.
#[derive(Clone)]
pub struct MemoryService {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Arc<dyn MemoryBackend>,
    /// The embedder whose vectors the store holds: every operation that embeds, or reads
    /// the vector indexes, holds it (shared) from its embedding to its store call, so a
    /// re-embedding's flip, which holds it exclusively while it swaps the vectors and
    /// then the embedder, never falls between the two.
    embed: RwLock<EmbedService>,
    decay_half_life_days: f64,
    consolidations: Gate,
    /// A re-embedding asked for and not done: its store, and until it is started, its
    /// target and progress.
    reembed: Option<Reembedding>,
}

/// A re-embedding of this service's store.
struct Reembedding {
    store: Arc<dyn ReembedStore>,
    upgrade: parking_lot::Mutex<Option<Upgrade>>,
    progress: Arc<reembed::Progress>,
}

impl MemoryService {
    /// The embedded backend: the memory tables in `db` and the indexes under `index_dir`,
    /// replaying what the indexes miss, with the writer and the checkpoint thread started.
    /// Side vectors of an abandoned re-embedding are dropped.
    pub fn open(
        db: Arc<redb::Database>,
        index_dir: &std::path::Path,
        embed: EmbedService,
        config: &MemoryConfig,
    ) -> Result<Self> {
        Self::open_upgrading(db, index_dir, embed, config, None)
    }

    /// [`open`](Self::open), `embed` serving while `upgrade`, when given, is the
    /// re-embedding asked for, run by [`reembed`](Self::reembed).
    pub fn open_upgrading(
        db: Arc<redb::Database>,
        index_dir: &std::path::Path,
        embed: EmbedService,
        config: &MemoryConfig,
        upgrade: Option<Upgrade>,
    ) -> Result<Self> {
        store::init(&db)?;
        if upgrade.as_ref().is_none_or(|u| u.fresh) {
            store::reset_next(&db)?;
        }
        if let Some(upgrade) = &upgrade {
            upgrade
                .progress
                .counted(store::Reader::new(&db)?.standing()?);
        }
        let every = Duration::from_secs(config.checkpoint_interval_secs);
        let bounds = Bounds {
            per_account: config.write_queue_per_account.max(1),
            total: config.write_queue_total.max(1),
        };
        let backend = Embedded::open(db, index_dir, embed.dims(), every, bounds)?;
        let reembed = upgrade.map(|upgrade| Reembedding {
            store: backend.clone(),
            progress: upgrade.progress.clone(),
            upgrade: parking_lot::Mutex::new(Some(upgrade)),
        });
        Ok(Self::made(backend, embed, config, reembed))
    }

    /// The service over any backend.
    pub fn over(
        backend: Arc<dyn MemoryBackend>,
        embed: EmbedService,
        config: &MemoryConfig,
    ) -> Self {
        Self::made(backend, embed, config, None)
    }

    fn made(
        backend: Arc<dyn MemoryBackend>,
        embed: EmbedService,
        config: &MemoryConfig,
        reembed: Option<Reembedding>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                backend,
                embed: RwLock::new(embed),
                reembed,
                decay_half_life_days: config.decay_half_life_days,
                consolidations: Gate::new(Duration::from_secs(config.consolidate_cooldown_secs)),
            }),
        }
    }

    /// Creates or version-updates a memory (idempotent on identical value) within `quota`:
    /// the account's live memories, and the versions kept of the key, older ones pruned in
    /// the new one's transaction.
    pub async fn put(&self, input: PutInput, quota: Quota) -> Result<PutOutcome> {
        self.put_fenced(input, quota, None).await
    }

    /// [`MemoryService::put`] by an agent under its node's claim `fence` (see [`RunFence`]):
    /// refused with `Stale`, writing nothing, once the claim is no longer the node's.
    pub async fn put_fenced(
        &self,
        input: PutInput,
        quota: Quota,
        fence: Option<RunFence>,
    ) -> Result<PutOutcome> {
        input.validate()?;
        let embed = self.inner.embed.read().await;
        // Served: the bulk lane leaves a core to it (see `EmbedService::request`).
        let _serving = embed.request();
        let backend = &self.inner.backend;
        if let Some(live) = backend
            .live(&input.account, &input.namespace, &input.key)
            .await?
            && live.value == input.value
        {
            return Ok(PutOutcome {
                memory: live,
                created: false,
            });
        }
        let embedding = embed_one(&embed, &input.account, &input.value).await?;
        backend.put(input, embedding, quota, fence).await
    }

    /// The live memory at (namespace, key), counting the access.
    pub async fn get(&self, account: &str, namespace: &str, key: &str) -> Result<Memory> {
        self.inner.backend.touch(account, namespace, key).await
    }

    /// The version of (namespace, key) live at `at` (epoch ms), with its value then; not
    /// counted as an access (the past is read, not used).
    pub async fn get_at(
        &self,
        account: &str,
        namespace: &str,
        key: &str,
        at: u64,
    ) -> Result<Memory> {
        TimeFilter {
            as_of: Some(at),
            ..TimeFilter::default()
        }
        .validate(now_ms())?;
        let versions = (self.inner.backend)
            .history(account, namespace, key, None, usize::MAX)
            .await?;
        time::version_at(versions.memories, at)
            .ok_or_else(|| MemoryError::not_found(namespace, key))
    }

    /// Soft (default) or hard delete of (namespace, key).
    pub async fn delete(
        &self,
        account: &str,
        namespace: &str,
        key: &str,
        hard: bool,
    ) -> Result<Deleted> {
        let backend = &self.inner.backend;
        match hard {
            true => backend
                .hard_delete(account, namespace, key)
                .await
                .map(Deleted::Hard),
            false => backend
                .soft_delete(account, namespace, key, None, None)
                .await
                .map(|m| Deleted::Soft(Box::new(m))),
        }
    }

    /// A soft delete by an agent's tool call, `by` naming the agent and the call's journal
    /// step: made again by the agent's resumed run (the call was in flight at a crash), it
    /// finds the version it deleted and answers with it instead of `NotFound`. Under the
    /// node's claim `fence` when given, as [`MemoryService::put_fenced`].
    pub async fn delete_by(
        &self,
        account: &str,
        namespace: &str,
        key: &str,
        by: &Provenance,
        fence: Option<RunFence>,
    ) -> Result<Memory> {
        (self.inner.backend)
            .soft_delete(account, namespace, key, Some(by.clone()), fence)
            .await
    }

    /// A page of the stored versions of (namespace, key), newest first, including
    /// superseded and soft-deleted ones: at most `limit`, older than version `before` when
    /// given.
    pub async fn history(
        &self,
        account: &str,
        namespace: &str,
        key: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<ListPage> {
        let backend = &self.inner.backend;
        backend
            .history(account, namespace, key, before, limit)
            .await
    }

    /// One page of live memories (of those live at `as_of`, when given), newest first.
    pub async fn list(&self, account: &str, q: ListQuery) -> Result<ListPage> {
        q.time.validate(now_ms())?;
        if q.time.is_empty_window() {
            return Ok(ListPage::of(Vec::new(), q.limit));
        }
        let Some(at) = q.time.as_of else {
            return self.inner.backend.list(account, &q).await;
        };
        let versions = (self.inner.backend)
            .versions_at(account, q.namespace.as_deref(), at, None)
            .await?;
        let mut memories: Vec<Memory> = versions
            .into_iter()
            .map(|(m, _)| m)
            .filter(|m| {
                m.has_all_tags(&q.tags) && q.time.keeps(m) && q.before.is_none_or(|b| m.id < b)
            })
            .collect();
        memories.reverse();
        memories.truncate(q.limit.saturating_add(1));
        Ok(ListPage::of(memories, q.limit))
    }

    /// (namespace, live count) of the account.
    pub async fn namespaces(&self, account: &str) -> Result<Vec<(String, u64)>> {
        self.inner.backend.namespaces(account).await
    }

    /// (account, live memories) of every account with any, read from the per-account
    /// counts the quota keeps (O(accounts)); an expired memory counts until its account's
    /// next read reaps it.
    pub async fn live_counts(&self) -> Result<Vec<(String, u64)>> {
        self.inner.backend.live_counts().await
    }

    /// Every live memory, oldest first (the order an import recreates them in).
    pub async fn export(&self, account: &str) -> Result<Vec<Memory>> {
        self.inner.backend.live_in(account, None).await
    }

    /// Writes items in order as puts, halting at the quota; each prunes its key to the
    /// versions the quota keeps, as a put does, in its own transaction (so the pruning is
    /// done with the write, even when the client goes away before the answer).
    pub async fn import(
        &self,
        account: &str,
        mut items: Vec<ImportItem>,
        quota: Quota,
    ) -> Result<ImportReport> {
        for item in &mut items {
            if let Ok(input) = &item.input
                && let Err(e) = input.validate()
            {
                item.input = Err(e.into());
            }
        }
        let valid: Vec<String> = items
            .iter()
            .filter_map(|i| i.input.as_ref().ok().map(|p| p.value.clone()))
            .collect();
        let embed = self.inner.embed.read().await;
        let mut embeddings = embed
            .embed_documents(account, Class::Bulk, valid)
            .await?
            .into_iter();
        let prepared = items
            .into_iter()
            .map(|item| {
                let input = item.input.and_then(|input| {
                    debug_assert_eq!(input.account, account);
                    let embedding = embeddings.next().ok_or(MemoryError::Stopped)?;
                    Ok((input, embedding))
                });
                (item.index, item.key, input)
            })
            .collect();
        (self.inner.backend).import(account, prepared, quota).await
    }

    /// Ranked search over live memories, timed by mode and whether it was reranked.
    pub async fn search(&self, account: &str, q: SearchQuery) -> Result<Vec<SearchHit>> {
        let embed = self.inner.embed.read().await;
        let _serving = embed.request();
        let (started, mode) = (Instant::now(), q.mode);
        let rerank = if q.rerank { "true" } else { "false" };
        let hits = self.search_untimed(&embed, account, q).await;
        metrics::histogram!(names::SEARCH_DURATION, "mode" => mode.as_str(), "rerank" => rerank)
            .record(started.elapsed());
        hits
    }

    async fn search_untimed(
        &self,
        embed: &EmbedService,
        account: &str,
        q: SearchQuery,
    ) -> Result<Vec<SearchHit>> {
        let now = now_ms();
        q.time.validate(now)?;
        if q.time.is_empty_window() {
            return Ok(Vec::new());
        }
        // A reranked search first ranks the pool the cross-encoder reads.
        let ranked = match q.rerank {
            true => search::rerank_pool(q.limit),
            false => q.limit,
        };
        let found = match q.time.has_window() {
            false => self.candidates(embed, account, &q, ranked, now).await?,
            true => {
                let vector = match q.mode.uses_vectors() {
                    true => Some(embed.embed_query(account, &q.query).await?),
                    false => None,
                };
                self.scan(account, &q, vector, now).await?
            }
        };
        // Scored at the instant looked at: decay is measured from then.
        let now = q.time.as_of.unwrap_or(now);
        let best_bm25 = found.iter().filter_map(|(_, c)| c.bm25).fold(0.0, f32::max);
        let fusion = embed.fusion();
        let hits = found
            .into_iter()
            .map(|(memory, candidate)| {
                let (score, breakdown) = search::score(
                    q.mode,
                    fusion,
                    &memory,
                    candidate,
                    best_bm25,
                    now,
                    self.inner.decay_half_life_days,
                );
                SearchHit {
                    memory,
                    score,
                    breakdown,
                }
            })
            .collect();
        if !q.rerank {
            return Ok(search::finish(hits, q.min_score, q.limit));
        }
        let best = search::finish(hits, 0.0, ranked);
        if best.is_empty() {
            return Ok(best);
        }
        let passages = best.iter().map(|h| h.memory.value.clone()).collect();
        let logits = embed.rerank(account, &q.query, passages).await?;
        Ok(search::finish(
            search::reranked(best, &logits),
            q.min_score,
            q.limit,
        ))
    }

    /// A search's candidates from the indexes, enough to rank its best `ranked`: of the
    /// live versions, and of the past when it is `as_of`. The query is embedded while the
    /// backend starts on what needs no vector.
    async fn candidates(
        &self,
        embed: &EmbedService,
        account: &str,
        q: &SearchQuery,
        ranked: usize,
        now: u64,
    ) -> Result<Vec<(Memory, Candidate)>> {
        let query = CandidateQuery {
            account: account.to_string(),
            namespace: q.namespace.clone(),
            tags: q.tags.clone(),
            query: q.query.clone(),
            keywords: q.mode.uses_keywords(),
            vector: None,
            k: search::candidates_for(ranked),
            now: q.time.as_of.unwrap_or(now),
            as_of: q.time.as_of,
        };
        let backend = &self.inner.backend;
        if !q.mode.uses_vectors() {
            return backend.candidates(&query).await;
        }
        let vector = async move { Ok(embed.embed_query(account, &q.query).await?) };
        backend.candidates_embedding(query, vector.boxed()).await
    }

    /// A search's candidates when no index answers it (an observation window: no index
    /// knows observation times): every version its filters keep, read from the store and
    /// scored exactly (see `scan`).
    async fn scan(
        &self,
        account: &str,
        q: &SearchQuery,
        vector: Option<Arc<Vec<f32>>>,
        now: u64,
    ) -> Result<Vec<(Memory, Candidate)>> {
        let at = q.time.as_of.unwrap_or(now);
        let versions = (self.inner.backend)
            .versions_at(account, q.namespace.as_deref(), at, vector)
            .await?;
        let (memories, cosines) = versions
            .into_iter()
            .filter(|(m, _)| m.has_all_tags(&q.tags) && q.time.keeps(m))
            .unzip();
        let query = q.mode.uses_keywords().then(|| q.query.clone());
        scan::candidates_apart(memories, cosines, query).await
    }

    /// Finds near-duplicate pairs and (unless `dry_run`) soft-deletes the less useful copies.
    pub async fn dedupe(
        &self,
        account: &str,
        namespace: Option<&str>,
        threshold: f32,
        dry_run: bool,
    ) -> Result<DedupeReport> {
        let memories = self.live_in(account, namespace).await?;
        let candidates = self
            .neighbour_pairs(account, &memories, DEDUPE_NEIGHBOURS, threshold)
            .await?;
        let pairs = dedupe::plan(&memories, candidates, threshold);
        let public_id = |id: u64| {
            memories
                .iter()
                .find(|m| m.id == id)
                .map(|m| m.memory_id.clone())
                .unwrap_or_default()
        };
        let removed = match dry_run {
            true => pairs.len(),
            false => {
                let ids: Vec<u64> = pairs.iter().map(|p| p.removed).collect();
                self.inner.backend.soft_delete_ids(account, ids).await?
            }
        };
        Ok(DedupeReport {
            scanned: memories.len(),
            pairs: pairs
                .into_iter()
                .map(|p| (p, public_id(p.kept), public_id(p.removed)))
                .collect(),
            removed,
        })
    }

    /// Folds each cluster of similar live memories into one summary the Mind writes
    /// (see `consolidate` for the clusters and the summaries). All or nothing: every
    /// summary is asked for first, and only when all arrived are they and the retirement
    /// of their originals written in one batch. The Mind's tokens are the account's
    /// month's (`tokens`): checked before the consolidation starts and before each summary
    /// (once they are spent, it is refused and writes nothing), and each summary's charged
    /// to the month as it arrives, whatever happens after. Returns the tokens spent with
    /// the outcome.
    pub async fn consolidate(
        &self,
        account: &str,
        q: &ConsolidateQuery,
        mind: &dyn Mind,
        tokens: &MonthTokens,
    ) -> (Usage, Result<ConsolidateReport>) {
        let mut spent = Usage::default();
        let result = (self.consolidate_metered(account, q, mind, tokens, &mut spent)).await;
        (spent, result)
    }

    async fn consolidate_metered(
        &self,
        account: &str,
        q: &ConsolidateQuery,
        mind: &dyn Mind,
        tokens: &MonthTokens,
        spent: &mut Usage,
    ) -> Result<ConsolidateReport> {
        if !q.dry_run {
            tokens.check().await?;
        }
        let gate = &self.inner.consolidations;
        let mut permit = match q.dry_run {
            true => None,
            false => Some(
                gate.enter(account, q.namespace.as_deref())
                    .map_err(|refusal| MemoryError::ConsolidateRefused {
                        refusal,
                        cooldown: gate.cooldown(),
                    })?,
            ),
        };
        let memories = self.live_in(account, q.namespace.as_deref()).await?;
        let candidates = self
            .neighbour_pairs(account, &memories, consolidate::NEIGHBOURS, q.threshold)
            .await?;
        let pairs = dedupe::similar_pairs(&memories, candidates, q.threshold);
        let plan = consolidate::plan(&memories, &pairs, q.min_cluster_size);
        let by_id: HashMap<u64, &Memory> = memories.iter().map(|m| (m.id, m)).collect();
        let clusters: Vec<Vec<&Memory>> = plan
            .clusters
            .iter()
            .map(|ids| ids.iter().map(|id| by_id[id]).collect())
            .collect();
        let mut report = ConsolidateReport {
            clusters: clusters
                .iter()
                .map(|members| ClusterOutcome {
                    namespace: members[0].namespace.clone(),
                    summary: None,
                    replaced: members.iter().map(|m| m.memory_id.clone()).collect(),
                })
                .collect(),
            skipped: plan.skipped,
        };
        // A dry run, or nothing to consolidate: the report is all there is.
        let Some(permit) = permit.as_mut().filter(|_| !clusters.is_empty()) else {
            return Ok(report);
        };
        let mut inputs = Vec::with_capacity(clusters.len());
        for members in &clusters {
            // The first call was admitted as the consolidation started.
            if !inputs.is_empty() {
                tokens.check().await?;
            }
            let notes: Vec<Note> = members
                .iter()
                .map(|m| Note {
                    key: m.key.clone(),
                    value: m.value.clone(),
                })
                .collect();
            let summary = mind.summarize(&notes).await?;
            let (input, output) = (summary.usage.input_tokens, summary.usage.output_tokens);
            tokens.charge(input.into(), output.into()).await;
            spent.input_tokens = spent.input_tokens.saturating_add(input);
            spent.output_tokens = spent.output_tokens.saturating_add(output);
            inputs.push(consolidate::summary_input(
                members,
                &summary,
                now_ms(),
                q.key_id.as_deref(),
            )?);
        }
        consolidate::distinct_keys(&mut inputs);
        let values = inputs.iter().map(|i| i.value.clone()).collect();
        let embed = self.inner.embed.read().await;
        let embeddings = embed.embed_documents(account, Class::Bulk, values).await?;
        let merges: Vec<Merge> = inputs
            .into_iter()
            .zip(embeddings)
            .zip(&plan.clusters)
            .map(|((summary, embedding), originals)| Merge {
                summary,
                embedding,
                originals: originals.clone(),
            })
            .collect();
        permit.writing();
        let merged = self.inner.backend.consolidate(account, merges).await?;
        for (outcome, done) in report.clusters.iter_mut().zip(merged) {
            outcome.summary = Some((done.summary.memory_id, done.summary.key));
            outcome.replaced = done.replaced.into_iter().map(|m| m.memory_id).collect();
        }
        Ok(report)
    }

    /// Makes the backend's derived state durable (the embedded indexes: saves the vectors
    /// and forgets the oplog entries both indexes now hold). Blocking: call it from a
    /// blocking context (the checkpoint thread, shutdown).
    pub fn checkpoint(&self) -> Result<()> {
        self.inner.backend.checkpoint()
    }

    /// Every live memory of `account` (in `namespace` when given), oldest first.
    async fn live_in(&self, account: &str, namespace: Option<&str>) -> Result<Vec<Memory>> {
        self.inner.backend.live_in(account, namespace).await
    }

    /// Candidate similar pairs `(memory, neighbour, similarity)` among `memories`: up to
    /// `k` nearest neighbours of each at or above `threshold` (to be normalized by
    /// `dedupe::similar_pairs`).
    async fn neighbour_pairs(
        &self,
        account: &str,
        memories: &[Memory],
        k: usize,
        threshold: f32,
    ) -> Result<Vec<(u64, u64, f32)>> {
        let ids = memories.iter().map(|m| m.id).collect();
        // The vector index is rebuilt at a re-embedding's flip: not read meanwhile.
        let _embed = self.inner.embed.read().await;
        self.inner
            .backend
            .neighbours(account, ids, k, threshold)
            .await
    }

    /// Where the re-embedding asked for at open stands; `None` when none was asked for.
    pub fn reembedding(&self) -> Option<ReembedReport> {
        Some(self.inner.reembed.as_ref()?.progress.report())
    }

    /// Runs the re-embedding asked for at open to its end (see [`reembed`]): walks the
    /// versions with the target model, then, holding off every search and write that
    /// embeds, takes what was written meanwhile, flips the store and serves with the
    /// target. Returns the identity now recorded; `None` when none was asked for or it is
    /// done. After a failure, call it again: it goes on from the last committed batch.
    pub async fn reembed(&self) -> Result<Option<String>> {
        let Some(r) = &self.inner.reembed else {
            return Ok(None);
        };
        let Some(target) = r.upgrade.lock().as_ref().map(|u| u.target.clone()) else {
            return Ok(None);
        };
        r.progress.stood(r.store.standing().await?);
        reembed::walk(&*r.store, &target, &r.progress).await?;
        let mut serving = self.inner.embed.write().await;
        let held = Instant::now();
        let last = reembed::walk(&*r.store, &target, &r.progress).await?;
        let identity = r.store.flip().await?;
        *serving = target;
        drop(serving);
        let held_ms = held.elapsed().as_millis();
        tracing::info!(%identity, last, held_ms, "re-embedded: the target serves (searches and writes that embed waited held_ms for the last pass of `last` versions and the flip)");
        r.upgrade.lock().take();
        r.progress.finished(r.store.standing().await?.total);
        Ok(Some(identity))
    }

    /// [`reembed`](Self::reembed) until it succeeds, each failure logged, reported and
    /// waited out: for the server's background task.
    pub async fn reembed_in_background(&self) {
        loop {
            match self.reembed().await {
                Ok(_) | Err(MemoryError::Stopped) => return,
                Err(e) => match &self.inner.reembed {
                    Some(r) => reembed::pause(&r.progress, &e).await,
                    None => return,
                },
            }
        }
    }
}

/// The vector of one text of `account`'s, embedded as interactive work.
async fn embed_one(embed: &EmbedService, account: &str, text: &str) -> Result<Vec<f32>> {
    let mut v = (embed)
        .embed_documents(account, Class::Interactive, vec![text.to_string()])
        .await?;
    v.pop().ok_or(MemoryError::Stopped)
}

#[cfg(test)]
pub(crate) mod tests;
