//! The postgres backend of the memory domain: every version, tombstone, access count and
//! quota count in tables shared by every node, vectors in pgvector, keyword scores as BM25
//! in SQL (see [`search`]). Nodes keep nothing of it in memory, so a put acknowledged by
//! one node is found by the next search on any other (read-your-writes across nodes).
//!
//! Writes of an account run in one transaction that first locks the account's counter row
//! ([`write::Txn`]); an account's concurrent puts share one ([`group`]). Reads are single
//! statements on the pool.

mod group;
mod indexer;
mod past;
mod rows;
mod search;
mod write;

use std::{collections::HashSet, pin::pin, sync::Arc, task::Poll};

use async_trait::async_trait;
use futures_util::{
    FutureExt,
    future::{self, BoxFuture},
};
use sqlx::{AssertSqlSafe, PgPool, Row};

use self::group::Groups;
use self::indexer::{Indexer, Job};
use self::rows::{cosine_to, memories, memories_with_cosines, memory, memory_columns};
use self::search::{Due, VectorSql, Vectors};
use self::write::Txn;
use super::{
    ImportReport, ListQuery, MemoryError, Quota, Result,
    backend::{CandidateQuery, ListPage, MemoryBackend, Merge, Merged, PutOutcome, RunFence},
    embed::EmbedError,
    input::PutInput,
    record::{Memory, Provenance},
    scan,
    search::Candidate,
    transfer::{Importing, Prepared},
};
use crate::{
    clock::now_ms,
    storage::{bigint, unsigned},
};

/// Accounts holding more counted memories than this get a graph of their own (see
/// [`indexer`]); smaller ones are searched by an exact scan of their rows, which at this
/// size costs what a graph search costs (BENCHMARKS.md, "The postgres backend as fast as
/// one node").
const GRAPH_PAST: u64 = 2_000;

/// A graph is brought up to date once more than this many memories were written to its
/// account since; a search scans those exactly meanwhile.
const TAIL_UP_TO: u64 = 500;

/// Memories in PostgreSQL with pgvector.
pub struct PgMemory {
    pool: PgPool,
    /// Concurrent puts of an account, committed together.
    groups: Arc<Groups>,
    /// Accounts being given a graph, or theirs brought up to date.
    indexer: Arc<Indexer>,
    vectors: VectorSql,
    /// Accounts with more counted memories than this get a graph.
    graph_past: u64,
    /// Graphs are brought up to date past this many memories written since.
    tail_up_to: u64,
}

impl PgMemory {
    /// The memory domain on `pool` (migrated): records which embedder (`identity`,
    /// `kind:model:dims`) makes the database's vectors on first use and refuses any other
    /// afterwards, then fits the table to its dimensions (see [`VectorSql::schema`]).
    pub async fn open(pool: PgPool, identity: &str, dims: usize) -> Result<Self> {
        let mut tx = pool.begin().await?;
        // Nodes starting together: one creates the index, the others wait for it.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('wasmind.memory_embedder'))")
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO memory_embedder (identity) VALUES ($1) ON CONFLICT DO NOTHING")
            .bind(identity)
            .execute(&mut *tx)
            .await?;
        let recorded: String = sqlx::query_scalar("SELECT identity FROM memory_embedder")
            .fetch_one(&mut *tx)
            .await?;
        if recorded != identity {
            let kind = recorded.split(':').next().unwrap_or_default().to_owned();
            return Err(MemoryError::Embed(EmbedError::Mismatch {
                recorded,
                current: identity.to_owned(),
                kind,
            }));
        }
        for statement in VectorSql::schema(dims) {
            sqlx::query(AssertSqlSafe(statement))
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        retire_index(&pool, dims).await?;
        Ok(Self {
            groups: Groups::new(pool.clone()),
            indexer: Indexer::new(pool.clone(), dims),
            pool,
            vectors: VectorSql::new(dims),
            graph_past: GRAPH_PAST,
            tail_up_to: TAIL_UP_TO,
        })
    }

    /// Past how many counted memories an account gets a graph, and past how many written
    /// since a graph is brought up to date (tests use small ones to exercise graphs on
    /// small data).
    #[cfg(test)]
    pub(crate) fn graph_past(mut self, memories: u64, tail: u64) -> Self {
        self.graph_past = memories;
        self.tail_up_to = tail;
        self
    }

    /// Runs `f` in a write transaction of `account` and commits it.
    async fn write<T>(
        &self,
        account: &str,
        f: impl AsyncFnOnce(&mut Txn) -> Result<T>,
    ) -> Result<T> {
        let mut txn = Txn::begin(&self.pool, account, now_ms()).await?;
        let out = f(&mut txn).await?;
        txn.commit().await?;
        Ok(out)
    }

    /// Reaps the account's due expiries first, so counts and lists are exact.
    async fn reap_if_due(&self, account: &str) -> Result<()> {
        let due: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM memories \
             WHERE account_id = $1 AND counted AND expires_at <= $2)",
        )
        .bind(account)
        .bind(bigint(now_ms()))
        .fetch_one(&self.pool)
        .await?;
        if due {
            // Beginning a write reaps.
            self.write(account, async |_| Ok(())).await?;
        }
        Ok(())
    }

    /// Where `account`'s vectors are searched (for the neighbours of consolidation; a
    /// search finds its account's graph in the database, see [`search::NEAREST`]).
    async fn vectors(&self, account: &str) -> Result<Vectors> {
        let row: Option<(i64, Option<i64>, i64, i64)> = sqlx::query_as(
            "SELECT live, graph, graphed_upto, ungraphed FROM memory_accounts \
             WHERE account_id = $1",
        )
        .bind(account)
        .fetch_optional(&self.pool)
        .await?;
        let Some((live, graph, upto, ungraphed)) = row else {
            return Ok(Vectors {
                graph: None,
                upto: 0,
            });
        };
        self.index_if_due(
            account,
            Due {
                live: unsigned(live),
                graph,
                ungraphed: unsigned(ungraphed),
            },
        );
        Ok(Vectors {
            graph,
            upto: graph.map_or(0, |_| upto),
        })
    }

    /// Starts indexing `account` in the background when it is past the exact-scan size
    /// without a graph, or its graph lags more than [`TAIL_UP_TO`] memories behind.
    fn index_if_due(&self, account: &str, due: Due) {
        let due = match due.graph {
            None => due.live > self.graph_past,
            Some(_) => due.ungraphed > self.tail_up_to,
        };
        if due {
            let job = Job::Graph {
                past: self.graph_past,
            };
            self.indexer.start(account, job);
        }
    }

    /// A search's candidates, its query's embedding given by `vector` when it has one. The
    /// keyword list is asked for at once, while the query is still being embedded; the
    /// nearest memories come with their rows from one statement ([`search::NEAREST`]),
    /// beside the past's candidates with `as_of`. When the keyword list came before the
    /// embedding (as it does when the query is embedded now), that statement returns its
    /// rows too; else it does not wait for the list, and the rows of the list's memories
    /// not among the nearest are read after both (a hybrid search waits for the slower of
    /// its two lists, not for both one after the other).
    ///
    /// With `as_of`, the live memories already written then come from the indexes as
    /// always, and the past versions live then from their own index (`memories_ended`),
    /// scored exactly as a scan scores them (BM25 over those versions alone, as the
    /// embedded index of the past keeps statistics of its own; see [`Self::past`]).
    async fn gather(
        &self,
        q: CandidateQuery,
        vector: Option<BoxFuture<'_, Result<Arc<Vec<f32>>>>>,
    ) -> Result<Vec<(Memory, Candidate)>> {
        let keyword = async {
            match q.keywords {
                true => search::keyword(&self.pool, &q).await,
                false => Ok(Vec::new()),
            }
        };
        let Some(mut vector) = vector else {
            let keyword = keyword.await?;
            let ids = ids(&keyword);
            let rows = search::rows(&self.pool, &q, &ids);
            let (rows, past) = tokio::try_join!(rows, self.past(&q))?;
            let mut found = search::merged(&keyword, &[], rows);
            found.extend(past);
            return Ok(found);
        };
        let mut keyword = pin!(keyword);
        let mut listed = None;
        let vector = future::poll_fn(|cx| {
            if listed.is_none()
                && let Poll::Ready(list) = keyword.as_mut().poll(cx)
            {
                listed = Some(list);
            }
            vector.as_mut().poll(cx)
        })
        .await?;
        let q = CandidateQuery {
            vector: Some(vector.clone()),
            ..q.clone()
        };
        let lists = async {
            if let Some(list) = listed {
                let list = list?;
                let found = search::nearest(&self.pool, &q, &vector, &ids(&list)).await?;
                return Ok((list, found));
            }
            let nearest = search::nearest(&self.pool, &q, &vector, &[]);
            let (list, mut found) = tokio::try_join!(keyword, nearest)?;
            let have: HashSet<u64> = found.rows.iter().map(|(m, _)| m.id).collect();
            let missing: Vec<u64> = ids(&list)
                .into_iter()
                .filter(|id| !have.contains(id))
                .collect();
            if !missing.is_empty() {
                found
                    .rows
                    .extend(search::rows(&self.pool, &q, &missing).await?);
            }
            Ok((list, found))
        };
        let ((keyword, found), past) = tokio::try_join!(lists, self.past(&q))?;
        if let Some(due) = found.due {
            self.index_if_due(&q.account, due);
        }
        let mut found = search::merged(&keyword, &found.semantic, found.rows);
        found.extend(past);
        Ok(found)
    }

    /// With `as_of`, the best candidates of the versions of the past live then, ranked in
    /// the database ([`search::PAST_BEST`]) — or, while the account still has versions
    /// retired before their ends and postings were kept (filled in meanwhile, in the
    /// background), all of them read and ranked here, as before.
    async fn past(&self, q: &CandidateQuery) -> Result<Vec<(Memory, Candidate)>> {
        let Some(at) = q.as_of else {
            return Ok(Vec::new());
        };
        if search::past_ended(&self.pool, &q.account).await? {
            return search::past_best(&self.pool, q, at).await;
        }
        self.indexer.start(&q.account, Job::Past);
        let (memories, cosines) = search::past(&self.pool, q, at).await?.into_iter().unzip();
        let query = q.keywords.then(|| q.query.clone());
        let scored = scan::candidates_apart(memories, cosines, query).await?;
        Ok(scan::best(scored, q.k))
    }

    /// Gives `account` a graph now, whatever its size, and brings it up to date (what a
    /// search starts in the background once the account is past the exact-scan size): for
    /// a loader that wants the graph from the first search.
    pub async fn index_now(&self, account: &str) -> Result<()> {
        indexer::index_account(&self.pool, self.vectors.dims(), account, 0).await
    }
}

#[async_trait]
impl MemoryBackend for PgMemory {
    async fn live(&self, account: &str, namespace: &str, key: &str) -> Result<Option<Memory>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            memory_columns!(),
            " FROM memories WHERE account_id = $1 AND namespace = $2 AND key = $3 \
             AND counted AND (expires_at IS NULL OR expires_at > $4)"
        ))
        .bind(account)
        .bind(namespace)
        .bind(key)
        .bind(bigint(now_ms()))
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| memory(&r)).transpose()
    }

    async fn put(
        &self,
        input: PutInput,
        embedding: Vec<f32>,
        quota: Quota,
        fence: Option<RunFence>,
    ) -> Result<PutOutcome> {
        self.groups.put(input, embedding, quota, fence).await
    }

    async fn touch(&self, account: &str, namespace: &str, key: &str) -> Result<Memory> {
        let row = sqlx::query(concat!(
            "UPDATE memories SET access_count = access_count + 1 \
             WHERE account_id = $1 AND namespace = $2 AND key = $3 AND counted \
             AND (expires_at IS NULL OR expires_at > $4) RETURNING ",
            memory_columns!()
        ))
        .bind(account)
        .bind(namespace)
        .bind(key)
        .bind(bigint(now_ms()))
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| MemoryError::not_found(namespace, key))?;
        memory(&row)
    }

    async fn soft_delete(
        &self,
        account: &str,
        namespace: &str,
        key: &str,
        by: Option<Provenance>,
        fence: Option<RunFence>,
    ) -> Result<Memory> {
        let by = by.as_ref();
        self.write(account, async |txn| {
            if let Some(fence) = &fence {
                txn.fenced(fence).await?;
            }
            txn.soft_delete(namespace, key, by).await
        })
        .await
    }

    async fn hard_delete(&self, account: &str, namespace: &str, key: &str) -> Result<usize> {
        self.write(account, async |txn| txn.hard_delete(namespace, key).await)
            .await
    }

    async fn history(
        &self,
        account: &str,
        namespace: &str,
        key: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<ListPage> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            memory_columns!(),
            " FROM memories WHERE account_id = $1 AND namespace = $2 AND key = $3 \
             AND id < $4 ORDER BY id DESC LIMIT $5"
        ))
        .bind(account)
        .bind(namespace)
        .bind(key)
        .bind(before.map_or(i64::MAX, bigint))
        .bind(bigint(limit.saturating_add(1)))
        .fetch_all(&self.pool)
        .await?;
        Ok(ListPage::of(memories(&rows)?, limit))
    }

    async fn list(&self, account: &str, q: &ListQuery) -> Result<ListPage> {
        self.reap_if_due(account).await?;
        let rows = sqlx::query(concat!(
            "SELECT ",
            memory_columns!(),
            " FROM memories WHERE account_id = $1 AND counted \
             AND (expires_at IS NULL OR expires_at > $2) AND id < $3 \
             AND ($4::text IS NULL OR namespace = $4) AND tags @> $5 \
             AND coalesce(observed_at, updated_at) >= $7 \
             AND coalesce(observed_at, updated_at) < $8 \
             ORDER BY id DESC LIMIT $6"
        ))
        .bind(account)
        .bind(bigint(now_ms()))
        .bind(q.before.map_or(i64::MAX, bigint))
        .bind(q.namespace.as_deref())
        .bind(&q.tags)
        .bind(bigint(q.limit.saturating_add(1)))
        .bind(q.time.observed_after.map_or(0, bigint))
        .bind(q.time.observed_before.map_or(i64::MAX, bigint))
        .fetch_all(&self.pool)
        .await?;
        Ok(ListPage::of(memories(&rows)?, q.limit))
    }

    async fn namespaces(&self, account: &str) -> Result<Vec<(String, u64)>> {
        self.reap_if_due(account).await?;
        let rows = sqlx::query(
            "SELECT namespace, count(*) AS live FROM memories \
             WHERE account_id = $1 AND counted GROUP BY namespace ORDER BY namespace COLLATE \"C\"",
        )
        .bind(account)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .map(|r| (r.get("namespace"), unsigned(r.get("live"))))
            .collect())
    }

    async fn live_counts(&self) -> Result<Vec<(String, u64)>> {
        let rows = sqlx::query("SELECT account_id, live FROM memory_accounts WHERE live > 0")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .map(|r| (r.get("account_id"), unsigned(r.get("live"))))
            .collect())
    }

    async fn live_in(&self, account: &str, namespace: Option<&str>) -> Result<Vec<Memory>> {
        self.reap_if_due(account).await?;
        let rows = sqlx::query(concat!(
            "SELECT ",
            memory_columns!(),
            " FROM memories WHERE account_id = $1 AND counted \
             AND (expires_at IS NULL OR expires_at > $2) \
             AND ($3::text IS NULL OR namespace = $3) ORDER BY id"
        ))
        .bind(account)
        .bind(bigint(now_ms()))
        .bind(namespace)
        .fetch_all(&self.pool)
        .await?;
        memories(&rows)
    }

    async fn versions_at(
        &self,
        account: &str,
        namespace: Option<&str>,
        at: u64,
        toward: Option<Arc<Vec<f32>>>,
    ) -> Result<Vec<(Memory, Option<f32>)>> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            memory_columns!(),
            cosine_to!("$4"),
            "FROM ( \
                SELECT DISTINCT ON (namespace, key) * FROM memories \
                WHERE account_id = $1 AND ($2::text IS NULL OR namespace = $2) \
                AND updated_at <= $3 ORDER BY namespace, key, id DESC \
             ) v WHERE (deleted_at IS NULL OR deleted_at > $3) \
             AND (expires_at IS NULL OR expires_at > $3) ORDER BY id"
        ))
        .bind(account)
        .bind(namespace)
        .bind(bigint(at))
        .bind(toward.as_deref().map(Vec::as_slice))
        .fetch_all(&self.pool)
        .await?;
        memories_with_cosines(&rows)
    }

    async fn import(
        &self,
        account: &str,
        items: Vec<Prepared>,
        quota: Quota,
    ) -> Result<ImportReport> {
        self.write(account, async |txn| {
            let mut report = Importing::default();
            for (index, key, item) in items {
                let put = match item {
                    Ok((input, embedding)) => {
                        let put = txn.put_fenced(&input, &embedding, quota, None).await;
                        Ok((input.key, put))
                    }
                    Err(rejected) => Err(rejected),
                };
                if !report.record(index, key, put)? {
                    break;
                }
            }
            Ok(report.done())
        })
        .await
    }

    async fn soft_delete_ids(&self, account: &str, ids: Vec<u64>) -> Result<usize> {
        self.write(account, async |txn| txn.soft_delete_ids(&ids).await)
            .await
            .map(|removed| removed.len())
    }

    async fn consolidate(&self, account: &str, merges: Vec<Merge>) -> Result<Vec<Merged>> {
        self.write(account, async |txn| txn.consolidate(&merges).await)
            .await
    }

    async fn candidates(&self, q: &CandidateQuery) -> Result<Vec<(Memory, Candidate)>> {
        let vector = q.vector.clone().map(|v| future::ready(Ok(v)).boxed());
        self.gather(q.clone(), vector).await
    }

    async fn candidates_embedding<'a>(
        &'a self,
        q: CandidateQuery,
        vector: BoxFuture<'a, Result<Arc<Vec<f32>>>>,
    ) -> Result<Vec<(Memory, Candidate)>> {
        self.gather(q, Some(vector)).await
    }

    async fn neighbours(
        &self,
        account: &str,
        ids: Vec<u64>,
        k: usize,
        threshold: f32,
    ) -> Result<Vec<(u64, u64, f32)>> {
        let at = self.vectors(account).await?;
        search::neighbours(&self.pool, &self.vectors, at, account, &ids, k, threshold).await
    }

    /// Nothing to do: every write is durable in PostgreSQL when it returns.
    fn checkpoint(&self) -> Result<()> {
        Ok(())
    }
}

/// The ids of a list of candidates.
fn ids(list: &[(u64, f32)]) -> Vec<u64> {
    list.iter().map(|h| h.0).collect()
}

/// Drops the HNSW index of earlier versions over large accounts' rows in the memories
/// table, which the graphs replace ([`VectorSql::retired_index`]), when it is there: once,
/// under a session-level advisory lock so nodes starting together do not collide. It waits
/// for the transactions using the table, as `CONCURRENTLY` does, without holding up any.
async fn retire_index(pool: &PgPool, dims: usize) -> Result<()> {
    let index = format!("memories_indexed_hnsw_{dims}");
    let there: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_class WHERE relname = $1)")
            .bind(&index)
            .fetch_one(pool)
            .await?;
    if !there {
        return Ok(());
    }
    let mut conn = pool.acquire().await?;
    sqlx::query("SELECT pg_advisory_lock(hashtext('wasmind.memory_embedder'))")
        .execute(&mut *conn)
        .await?;
    let dropped = sqlx::query(AssertSqlSafe(VectorSql::retired_index(dims)))
        .execute(&mut *conn)
        .await;
    sqlx::query("SELECT pg_advisory_unlock(hashtext('wasmind.memory_embedder'))")
        .execute(&mut *conn)
        .await?;
    dropped?;
    tracing::info!(%index, "dropped the HNSW index the accounts' graphs replace");
    Ok(())
}

#[cfg(test)]
mod tests;
