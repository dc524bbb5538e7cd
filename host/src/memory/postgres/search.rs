//! Search on PostgreSQL: BM25 over the account's own documents computed in SQL, and
//! pgvector nearest neighbours.
//!
//! **Keywords.** Each counted memory's key and value are analyzed in Rust by the embedded
//! index's own analyzer ([`query_terms`], `index_terms`) and stored as (term, frequency)
//! rows with the token counts quantized as tantivy's fieldnorms; the writes keep per-account
//! document frequencies and token totals in the same transaction. The query below is
//! tantivy's BM25 (k1 = 1.2, b = 0.75, idf = ln(1 + (N − n + 0.5) / (n + 0.5)), summed over
//! the query's terms in key and value), so both backends give the same scores for the same
//! documents. It is summed over the postings alone (each carries its field's norm), and
//! only the best-scored memories, in order, are read to check the search's filters, until
//! `limit` pass: a query term held by tens of thousands of an account's memories costs an
//! index scan of its postings, not a visit to every memory holding it. One difference:
//! tantivy counts a deleted document in N and n until a merge drops it, here a document
//! leaves the statistics when it stops being live.
//!
//! **Vectors.** An account holding at most [`PgMemory::exact_up_to`](super::PgMemory)
//! memories is scanned exactly (its rows through the `memories_counted` index, every
//! distance computed): at that size it is as fast as an index and never misses. A larger
//! account is put into the HNSW index (see [`indexer`](super::indexer); only such
//! accounts' rows are in it) and, once it is, searched through it, with
//! `hnsw.iterative_scan = relaxed_order` so that the filter on the account (and namespace,
//! tags, expiry) keeps scanning until `k` rows pass it, the rows re-sorted afterwards
//! (relaxed order may return them slightly out of order).

use std::sync::Arc;

use sqlx::{
    AssertSqlSafe, PgPool, Postgres, Row, Transaction,
    postgres::{PgArguments, PgRow},
    query::Query,
};

use super::rows::{cosine_to, memories_with_cosines, memory_columns};
use crate::{
    memory::{
        Result, backend::CandidateQuery, index::query_terms, record::Memory, search::Candidate,
    },
    storage::{bigint, unsigned},
};

/// BM25 as tantivy scores it, over one account's statistics. Written for the planner (each
/// cut measured on an account of 100,000 memories, BENCHMARKS.md): the statistics are
/// looked up by both fields explicitly, as their key begins (account, field, term) and
/// PostgreSQL 16 cannot skip over a leading column it is not given — without it every
/// statistics row of the account is read, one per distinct key term, about one per memory;
/// each term's weight and length factor are computed once (`MATERIALIZED`), not once per
/// posting; every constant is a float8, so no posting is scored in `numeric`. Per posting
/// this is `weight · tf / (tf + k1 · (1 − b + b · norm / avg))` with k1 = 1.2, b = 0.75:
/// `0.3` is k1 · (1 − b) and `per_norm` k1 · b / avg.
/// `$7` bounds the scored memories whose filters are checked (NULL: all of them), which
/// lets the sort keep only that many best instead of ordering every memory holding a term;
/// each row also carries how many postings the query's terms have, to tell whether the
/// bound may have cut off memories that would have passed. `$8`, an `as_of` instant, keeps
/// the live memories already written then (NULL: all).
pub(super) const BM25: &str = "\
WITH totals AS (
    SELECT greatest(live, 1)::float8 AS n,
           greatest(key_tokens, 1)::float8 / greatest(live, 1) AS key_avg,
           greatest(value_tokens, 1)::float8 / greatest(live, 1) AS value_avg
    FROM memory_accounts WHERE account_id = $1
), weights AS MATERIALIZED (
    SELECT s.field, s.term, s.docs,
           ln(1 + (totals.n - s.docs + 0.5::float8) / (s.docs + 0.5::float8)) * 2.2::float8
               AS weight,
           0.9::float8 / CASE s.field WHEN 0 THEN totals.key_avg ELSE totals.value_avg END
               AS per_norm
    FROM memory_term_stats s, totals
    WHERE s.account_id = $1 AND s.field = ANY('{0,1}'::smallint[]) AND s.term = ANY($2)
      AND s.docs > 0
), scored AS (
    SELECT t.id, sum(w.weight * t.tf / (t.tf + 0.3::float8 + w.per_norm * t.norm))::float4
               AS bm25
    FROM weights w
    JOIN memory_terms t ON t.account_id = $1 AND t.field = w.field AND t.term = w.term
    GROUP BY t.id
)
SELECT s.id, s.bm25, (SELECT sum(docs) FROM weights)::int8 AS postings
FROM (SELECT id, bm25 FROM scored ORDER BY bm25 DESC, id DESC LIMIT $7) s
CROSS JOIN LATERAL (
    SELECT 1 FROM memories m
    WHERE m.account_id = $1 AND m.id = s.id AND m.counted
      AND (m.expires_at IS NULL OR m.expires_at > $3)
      AND ($4::text IS NULL OR m.namespace = $4) AND m.tags @> $5
      AND ($8::int8 IS NULL OR m.updated_at <= $8)
    LIMIT 1
) passes
ORDER BY s.bm25 DESC, s.id DESC LIMIT $6";

/// The vector queries, built once for the recorded embedder's dimensions: the HNSW index
/// is on `embedding::vector(dims)`, and only that expression in an `ORDER BY` uses it.
pub(super) struct VectorSql {
    pub(super) search_exact: Arc<str>,
    pub(super) search_index: Arc<str>,
    pub(super) neighbours_exact: Arc<str>,
    pub(super) neighbours_index: Arc<str>,
}

impl VectorSql {
    pub(super) fn new(dims: usize) -> Self {
        // `only` keeps an index path to the rows in the (partial) index.
        let search = |order: &str, only: &str| -> Arc<str> {
            format!(
                "SELECT id, (1 - (embedding <=> $2::real[]::vector))::float4 AS cosine FROM ( \
                    SELECT id, embedding, {order} AS distance FROM memories \
                    WHERE account_id = $1 AND counted {only} \
                    AND (expires_at IS NULL OR expires_at > $3) \
                    AND ($4::text IS NULL OR namespace = $4) AND tags @> $5 \
                    AND ($7::int8 IS NULL OR updated_at <= $7) \
                    ORDER BY {order} LIMIT $6 \
                 ) found ORDER BY distance, id DESC"
            )
            .into()
        };
        let neighbours = |order: &str, only: &str| -> Arc<str> {
            format!(
                "SELECT m.id AS memory, n.id AS neighbour, n.cosine FROM memories m \
                 CROSS JOIN LATERAL ( \
                    SELECT o.id, (1 - (o.embedding <=> m.embedding))::float4 AS cosine \
                    FROM memories o WHERE o.account_id = $1 AND o.counted {only} AND o.id <> m.id \
                    ORDER BY {order} LIMIT $3 \
                 ) n WHERE m.account_id = $1 AND m.id = ANY($2) AND n.cosine >= $4"
            )
            .into()
        };
        Self {
            search_exact: search("embedding <=> $2::real[]::vector", ""),
            search_index: search(
                &format!("embedding::vector({dims}) <=> $2::real[]::vector({dims})"),
                "AND indexed",
            ),
            neighbours_exact: neighbours("o.embedding <=> m.embedding", ""),
            neighbours_index: neighbours(
                &format!("o.embedding::vector({dims}) <=> m.embedding::vector({dims})"),
                "AND o.indexed",
            ),
        }
    }

    /// The statements fitting the memories table to the recorded embedder's `dims`: every
    /// vector of that length (most rows are in no index whose expression would check it),
    /// and the HNSW index the `*_index` queries use over the rows of indexed accounts, in
    /// place of the one over every row that came before it.
    pub(super) fn schema(dims: usize) -> [String; 3] {
        let check = format!("memories_embedding_dims_{dims}");
        [
            format!(
                "DO $$ BEGIN \
                    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = '{check}') THEN \
                        ALTER TABLE memories ADD CONSTRAINT {check} \
                            CHECK (vector_dims(embedding) = {dims}); \
                    END IF; \
                 END $$"
            ),
            format!("DROP INDEX IF EXISTS memories_hnsw_{dims}"),
            format!(
                "CREATE INDEX IF NOT EXISTS {} ON memories \
                 USING hnsw ((embedding::vector({dims})) vector_cosine_ops) \
                 WHERE counted AND indexed",
                Self::index_name(dims)
            ),
        ]
    }

    /// The HNSW index's name.
    pub(super) fn index_name(dims: usize) -> String {
        format!("memories_indexed_hnsw_{dims}")
    }
}

/// Top `k` (id, BM25) of the account's live memories for `q`'s text.
///
/// Without a namespace or tags to match, only a memory expired since the account's last
/// write (which reaps them) fails the filters, so the best `2k` scored memories nearly
/// always hold `k` that pass, and keeping those is much cheaper than sorting every memory
/// that holds a query term (BENCHMARKS.md). When they did not hold `k` and there were more,
/// the search is run again over all of them.
pub(super) async fn keyword(pool: &PgPool, q: &CandidateQuery) -> Result<Vec<(u64, f32)>> {
    let terms: Vec<String> = query_terms(&q.query).into_iter().collect();
    if terms.is_empty() || q.k == 0 {
        return Ok(Vec::new());
    }
    let best = (q.namespace.is_none() && q.tags.is_empty()).then_some(2 * q.k);
    let (hits, postings) = bm25(pool, q, &terms, best).await?;
    match best {
        // No row says how many postings there were: run it whole, cheap when there were none.
        Some(best) if hits.len() < q.k && postings.is_none_or(|n| n > best) => {
            Ok(bm25(pool, q, &terms, None).await?.0)
        }
        _ => Ok(hits),
    }
}

/// The best `q.k` of the `best` (None: all) best-scored memories holding `terms` that pass
/// `q`'s filters, and how many postings the terms have (None when no row came back).
async fn bm25(
    pool: &PgPool,
    q: &CandidateQuery,
    terms: &[String],
    best: Option<usize>,
) -> Result<(Vec<(u64, f32)>, Option<usize>)> {
    let rows = sqlx::query(BM25)
        .bind(&q.account)
        .bind(terms)
        .bind(bigint(q.now))
        .bind(q.namespace.as_deref())
        .bind(&q.tags)
        .bind(bigint(q.k))
        .bind(best.map(bigint))
        .bind(q.as_of.map(bigint))
        .fetch_all(pool)
        .await?;
    let postings = rows
        .first()
        .map(|r| usize::try_from(unsigned(r.get("postings"))).unwrap_or(usize::MAX));
    let hits = rows
        .iter()
        .map(|r| (unsigned(r.get("id")), r.get("bm25")))
        .collect();
    Ok((hits, postings))
}

/// Top `k` (id, cosine) of the account's live memories nearest `vector`.
pub(super) async fn vector(
    pool: &PgPool,
    sql: &VectorSql,
    exact: bool,
    q: &CandidateQuery,
    vector: &[f32],
) -> Result<Vec<(u64, f32)>> {
    let statement = match exact {
        true => &sql.search_exact,
        false => &sql.search_index,
    };
    let query = sqlx::query(AssertSqlSafe(statement.clone()))
        .bind(&q.account)
        .bind(vector)
        .bind(bigint(q.now))
        .bind(q.namespace.as_deref())
        .bind(&q.tags)
        .bind(bigint(q.k))
        .bind(q.as_of.map(bigint));
    let rows = fetch_nearest(pool, (!exact).then_some(q.k), query).await?;
    Ok(rows
        .iter()
        .map(|r| (unsigned(r.get("id")), r.get("cosine")))
        .collect())
}

/// `(memory, neighbour, cosine)`: up to `k` nearest other counted memories of each of
/// `ids` at or above `threshold`.
pub(super) async fn neighbours(
    pool: &PgPool,
    sql: &VectorSql,
    exact: bool,
    account: &str,
    ids: &[u64],
    k: usize,
    threshold: f32,
) -> Result<Vec<(u64, u64, f32)>> {
    let statement = match exact {
        true => &sql.neighbours_exact,
        false => &sql.neighbours_index,
    };
    let query = sqlx::query(AssertSqlSafe(statement.clone()))
        .bind(account)
        .bind(ids.iter().map(|&id| bigint(id)).collect::<Vec<_>>())
        .bind(bigint(k))
        .bind(threshold);
    let rows = fetch_nearest(pool, (!exact).then_some(k), query).await?;
    Ok(rows
        .iter()
        .map(|r| {
            (
                unsigned(r.get("memory")),
                unsigned(r.get("neighbour")),
                r.get("cosine"),
            )
        })
        .collect())
}

/// Runs a nearest-neighbour `query`: through the HNSW index for `k` when given, which
/// takes a transaction for [`use_index`]'s settings, else (an exact scan) as one statement.
/// The exact path, most accounts', is two statements fewer for the database (a
/// transaction's `BEGIN` and `COMMIT`); its latency did not measurably change
/// (BENCHMARKS.md, "Fair memory work, fourth pass").
async fn fetch_nearest(
    pool: &PgPool,
    index_k: Option<usize>,
    query: Query<'_, Postgres, PgArguments>,
) -> Result<Vec<PgRow>> {
    let Some(k) = index_k else {
        return Ok(query.fetch_all(pool).await?);
    };
    let mut tx = pool.begin().await?;
    use_index(&mut tx, k).await?;
    let rows = query.fetch_all(&mut *tx).await?;
    tx.commit().await?;
    Ok(rows)
}

/// The live rows of `ids` with each one's cosine to `vector` (when given).
pub(super) async fn rows(
    pool: &PgPool,
    q: &CandidateQuery,
    ids: &[u64],
) -> Result<Vec<(Memory, Option<f32>)>> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        memory_columns!(),
        cosine_to!("$3"),
        "FROM memories WHERE account_id = $1 AND id = ANY($2) AND counted \
         AND (expires_at IS NULL OR expires_at > $4)"
    ))
    .bind(&q.account)
    .bind(ids.iter().map(|&id| bigint(id)).collect::<Vec<_>>())
    .bind(q.vector.as_deref().map(Vec::as_slice))
    .bind(bigint(q.now))
    .fetch_all(pool)
    .await?;
    memories_with_cosines(&rows)
}

/// The versions of the account's past live at `$2` that pass the namespace (`$4`) and tags
/// (`$5`), each with its cosine to `$3` (when given): no longer counted, written by `$2`,
/// neither deleted nor expired then, and with no newer version of their key written by
/// then. With the live memories written by `$2` (the indexes), they are the world as of
/// `$2`; read through `memories_past`, they cost what the account's past holds.
pub(super) const PAST: &str = concat!(
    "SELECT ",
    memory_columns!(),
    cosine_to!("$3"),
    "FROM memories m WHERE account_id = $1 AND NOT counted AND updated_at <= $2 \
     AND (deleted_at IS NULL OR deleted_at > $2) AND (expires_at IS NULL OR expires_at > $2) \
     AND ($4::text IS NULL OR namespace = $4) AND tags @> $5 \
     AND NOT EXISTS ( \
        SELECT 1 FROM memories n WHERE n.account_id = m.account_id \
        AND n.namespace = m.namespace AND n.key = m.key AND n.id > m.id \
        AND n.updated_at <= $2 \
     )"
);

/// [`PAST`] for `q` at `at`.
pub(super) async fn past(
    pool: &PgPool,
    q: &CandidateQuery,
    at: u64,
) -> Result<Vec<(Memory, Option<f32>)>> {
    let rows = sqlx::query(PAST)
        .bind(&q.account)
        .bind(bigint(at))
        .bind(q.vector.as_deref().map(Vec::as_slice))
        .bind(q.namespace.as_deref())
        .bind(&q.tags)
        .fetch_all(pool)
        .await?;
    memories_with_cosines(&rows)
}

/// Makes the next query of `tx` go through the HNSW index with its filter: the planner
/// is told not to sort (else, guessing the account's rows few, it scans and sorts them
/// all), the scan is iterative, and its candidate list no shorter than what is asked for.
pub(super) async fn use_index(tx: &mut Transaction<'static, Postgres>, k: usize) -> Result<()> {
    let ef_search = k.clamp(100, 1000).to_string();
    sqlx::query(
        "SELECT set_config('enable_sort', 'off', true), \
                set_config('hnsw.iterative_scan', 'relaxed_order', true), \
                set_config('hnsw.ef_search', $1, true)",
    )
    .bind(ef_search)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Both sides merged into candidates with their rows (see [`MemoryBackend::candidates`]).
///
/// [`MemoryBackend::candidates`]: crate::memory::MemoryBackend::candidates
pub(super) fn merged(
    keyword: &[(u64, f32)],
    semantic: &[(u64, f32)],
    rows: Vec<(Memory, Option<f32>)>,
) -> Vec<(Memory, Candidate)> {
    let mut found = crate::memory::search::merge(keyword, semantic);
    rows.into_iter()
        .filter_map(|(memory, cosine)| {
            let mut candidate = found.remove(&memory.id)?;
            candidate.cosine = candidate.cosine.or(cosine);
            Some((memory, candidate))
        })
        .collect()
}
