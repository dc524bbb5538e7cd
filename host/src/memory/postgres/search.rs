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
//! **Vectors.** An account is searched through a graph of its own once it has one (see
//! [`indexer`](super::indexer)): its table `memory_graph_<n>` holds its vectors alone, with
//! an HNSW index over them, so a search walks no other account's vectors however many share
//! the database. The rows an account gained since its graph was last brought up to date
//! (the tail, ids above `graphed_upto`; a few hundred at most while it is searched) are
//! scanned exactly in the same statement, and the two lists merged. An account without a
//! graph — at most [`GRAPH_PAST`](super::GRAPH_PAST) memories — is all tail: its rows are
//! scanned exactly (through the `memories_counted` index, every distance computed), which at
//! that size costs what a graph search costs and never misses. The graph's rows are checked
//! against the account's live memories (and the search's namespace, tags, expiry and
//! `as_of`) as the HNSW scan yields them, with `hnsw.iterative_scan = relaxed_order` so that
//! it keeps scanning until `k` pass.
//!
//! A search is one statement ([`NEAREST`]): the database function `memory_nearest`
//! (migration 0021) looks up the account's graph and searches it with the scan's settings,
//! and the statement around it returns the rows found with their cosines, and those of the
//! keyword candidates. Before, a search sent the account lookup, a transaction for the
//! settings (`BEGIN`, the settings, the search, `COMMIT`) and the rows' fetch one after the
//! other, each a round trip and a turn of the node and the database's backend on the cores
//! (BENCHMARKS.md, "one round trip per search").

use std::sync::Arc;

use sqlx::{
    AssertSqlSafe, PgPool, Postgres, Row, Transaction,
    postgres::{PgArguments, PgRow},
    query::Query,
};

use super::rows::{cosine_to, memories_with_cosines, memory, memory_columns};
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

/// Where an account's vectors are: its graph's table (`memory_graph_<graph>`) when it has
/// one, holding every counted memory with an id up to `upto`; the rows above are its tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Vectors {
    pub(super) graph: Option<i64>,
    pub(super) upto: i64,
}

/// The vector queries for the recorded embedder's dimensions (a graph's column is a
/// `vector(dims)`). The query vector is made from its `real[]` once per statement, in a
/// subquery (see [`cosine_to`]).
pub(super) struct VectorSql {
    dims: usize,
    neighbours_exact: Arc<str>,
}

impl VectorSql {
    pub(super) fn new(dims: usize) -> Self {
        Self {
            dims,
            neighbours_exact: Self::neighbours_of(Self::NEIGHBOURS_TAIL).into(),
        }
    }

    /// The dimensions of the embedder's vectors.
    pub(super) fn dims(&self) -> usize {
        self.dims
    }

    /// The account's rows above `$5` nearest `m`'s, exactly: the best `$3` of them.
    const NEIGHBOURS_TAIL: &str = "SELECT o.id, o.embedding <=> m.embedding AS distance \
        FROM memories o WHERE o.account_id = $1 AND o.counted AND o.id > $5 AND o.id <> m.id \
        ORDER BY distance LIMIT $3";

    /// `(memory, neighbour, cosine)`: up to `$3` nearest other counted memories of each of
    /// account `$1`'s `$2` at or above `$4`, from the `graph` and above id `$5`.
    pub(super) fn neighbours(&self, graph: Option<i64>) -> Arc<str> {
        let Some(graph) = graph else {
            return self.neighbours_exact.clone();
        };
        let dims = self.dims;
        Self::neighbours_of(&format!(
            "SELECT id, min(distance) AS distance FROM ( \
                (SELECT g.id, g.embedding <=> m.embedding::vector({dims}) AS distance \
                 FROM memory_graph_{graph} g WHERE g.id <> m.id AND EXISTS ( \
                    SELECT 1 FROM memories c WHERE c.account_id = $1 AND c.id = g.id AND c.counted) \
                 ORDER BY g.embedding <=> m.embedding::vector({dims}) LIMIT $3) \
                UNION ALL ({tail}) \
             ) found GROUP BY id",
            tail = Self::NEIGHBOURS_TAIL,
        ))
        .into()
    }

    /// The neighbours statement around `nearest`, the (id, distance) candidates of `m`.
    fn neighbours_of(nearest: &str) -> String {
        format!(
            "SELECT m.id AS memory, n.id AS neighbour, n.cosine FROM memories m \
             CROSS JOIN LATERAL ( \
                SELECT id, (1 - distance)::float4 AS cosine FROM ({nearest}) c \
                ORDER BY distance, id DESC LIMIT $3 \
             ) n WHERE m.account_id = $1 AND m.id = ANY($2) AND n.cosine >= $4"
        )
    }

    /// The statements fitting the memories table to the recorded embedder's `dims`: every
    /// vector of that length (most rows are in no index whose expression would check it).
    /// The HNSW indexes of earlier versions over the memories table itself go too: the one
    /// over every row here, the one over large accounts' rows by [`Self::retired_index`].
    pub(super) fn schema(dims: usize) -> [String; 2] {
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
        ]
    }

    /// Dropping the HNSW index over the memories of large accounts, which the graphs
    /// replace: `CONCURRENTLY`, so the table's reads and writes go on meanwhile (it cannot
    /// run in a transaction). While it stood, every update of such a row — a new version,
    /// an access counted — was a graph insertion.
    pub(super) fn retired_index(dims: usize) -> String {
        format!("DROP INDEX CONCURRENTLY IF EXISTS memories_indexed_hnsw_{dims}")
    }

    /// The table of graph `graph`, for vectors of `dims` (filled before its index is built:
    /// a bulk build costs a fraction of inserting the rows one by one into the graph).
    pub(super) fn graph_table(dims: usize, graph: i64) -> String {
        format!(
            "CREATE TABLE memory_graph_{graph} (id bigint PRIMARY KEY, embedding vector({dims}) NOT NULL)"
        )
    }

    /// The HNSW index of graph `graph`'s table.
    pub(super) fn graph_index(graph: i64) -> String {
        format!(
            "CREATE INDEX memory_graph_{graph}_hnsw ON memory_graph_{graph} \
             USING hnsw (embedding vector_cosine_ops)"
        )
    }

    /// Deleting from graph `graph`'s table the rows (with ids in `range`, `(from, to]`, when
    /// given) whose memory of account `$1` is no longer counted.
    pub(super) fn uncounted(graph: i64, range: Option<(i64, i64)>) -> String {
        let within = range.map_or_else(String::new, |(from, to)| {
            format!("g.id > {from} AND g.id <= {to} AND ")
        });
        format!(
            "DELETE FROM memory_graph_{graph} g WHERE {within}NOT EXISTS ( \
                SELECT 1 FROM memories m WHERE m.account_id = $1 AND m.id = g.id AND m.counted)"
        )
    }

    /// Deleting rows `$1` (`bigint[]`) from graph `graph`'s table: a write's, whose memories
    /// stopped being counted.
    pub(super) fn delete(graph: i64) -> String {
        format!("DELETE FROM memory_graph_{graph} WHERE id = ANY($1)")
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

/// A vector search in one statement: the `$6` nearest `$2` (`real[]`) of account `$1`'s
/// memories passing the filters (live at `$3`, in namespace `$4` when given, holding tags
/// `$5`, written by `$7` when given), found by `memory_nearest` (migration 0021: the
/// account's graph looked up and searched, with the HNSW scan's settings, in the
/// database), each returned with its row and cosine, and with them the rows of `$8`
/// (`bigint[]`, the keyword candidates) with theirs; `nearest` tells the two apart. Every
/// row also carries the account's size and graph (`account_*`, for [`Due`]), and an
/// account with no row found still answers one, of those alone.
pub(super) const NEAREST: &str = concat!(
    "WITH q AS MATERIALIZED (SELECT $2::real[]::vector AS v), \
     nearest AS MATERIALIZED ( \
        SELECT n.id AS nearest_id, n.distance \
        FROM q, memory_nearest($1, q.v, $3, $4, $5, $6, $7) n \
     ) \
     SELECT a.live AS account_live, a.graph AS account_graph, \
            a.ungraphed AS account_ungraphed, found.* \
     FROM memory_accounts a LEFT JOIN LATERAL ( \
        SELECT ",
    memory_columns!(),
    ", (1 - coalesce(distance, embedding <=> (SELECT v FROM q)))::float4 AS cosine, \
           nearest_id IS NOT NULL AS nearest \
        FROM memories m LEFT JOIN nearest ON nearest_id = m.id \
        WHERE m.account_id = $1 \
          AND m.id = ANY(ARRAY(SELECT nearest_id FROM nearest) || $8::int8[]) \
          AND m.counted AND (m.expires_at IS NULL OR m.expires_at > $3) \
     ) found ON true WHERE a.account_id = $1"
);

/// What a search found of an account that tells whether its graph is due: its counted
/// memories, its graph, and how many were written since the graph was brought up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Due {
    pub(super) live: u64,
    pub(super) graph: Option<i64>,
    pub(super) ungraphed: u64,
}

/// What [`nearest`] found.
#[derive(Debug, Default)]
pub(super) struct Nearest {
    /// (id, cosine) of the nearest memories.
    pub(super) semantic: Vec<(u64, f32)>,
    /// Their rows and those of the other ids asked for, each with its cosine.
    pub(super) rows: Vec<(Memory, Option<f32>)>,
    /// None when the account has no row (it never wrote).
    pub(super) due: Option<Due>,
}

/// [`NEAREST`] for `q` and `vector`, with the rows of `others` too.
pub(super) async fn nearest(
    pool: &PgPool,
    q: &CandidateQuery,
    vector: &[f32],
    others: &[u64],
) -> Result<Nearest> {
    let rows = sqlx::query(NEAREST)
        .bind(&q.account)
        .bind(vector)
        .bind(bigint(q.now))
        .bind(q.namespace.as_deref())
        .bind(&q.tags)
        .bind(bigint(q.k))
        .bind(q.as_of.map(bigint))
        .bind(others.iter().map(|&id| bigint(id)).collect::<Vec<_>>())
        .fetch_all(pool)
        .await?;
    let mut found = Nearest::default();
    for r in &rows {
        found.due.get_or_insert(Due {
            live: unsigned(r.try_get("account_live")?),
            graph: r.try_get("account_graph")?,
            ungraphed: unsigned(r.try_get("account_ungraphed")?),
        });
        if r.try_get::<Option<i64>, _>("id")?.is_none() {
            continue;
        }
        let (memory, cosine) = (memory(r)?, r.try_get("cosine")?);
        if r.try_get("nearest")? {
            found.semantic.push((memory.id, cosine));
        }
        found.rows.push((memory, Some(cosine)));
    }
    Ok(found)
}

/// `(memory, neighbour, cosine)`: up to `k` nearest other counted memories of each of
/// `ids` at or above `threshold`, from `at`.
pub(super) async fn neighbours(
    pool: &PgPool,
    sql: &VectorSql,
    at: Vectors,
    account: &str,
    ids: &[u64],
    k: usize,
    threshold: f32,
) -> Result<Vec<(u64, u64, f32)>> {
    let query = sqlx::query(AssertSqlSafe(sql.neighbours(at.graph)))
        .bind(account)
        .bind(ids.iter().map(|&id| bigint(id)).collect::<Vec<_>>())
        .bind(bigint(k))
        .bind(threshold)
        .bind(at.upto);
    let rows = fetch_nearest(pool, at.graph.map(|_| k), query).await?;
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

/// Runs a neighbours `query`: through a graph's HNSW index for `k` when given, which takes
/// a transaction for [`use_index`]'s settings, else (an exact scan) as one statement.
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

/// The best candidates of the versions of the account's past live at `$2` that pass the
/// namespace (`$4`) and tags (`$5`) — written by `$2` and ended after it (`memories_ended`)
/// — ranked in the database as [`scan`](crate::memory::scan) ranks them: the `$6` nearest
/// `$3` (when given) and the `$6` best by BM25 of terms `$7` over those versions alone
/// (their own count, lengths and document frequencies, from the past's postings), each
/// row with its cosine and its BM25 (NULL when it holds no term). Only these rows leave the
/// database, where before every version live then did, to be analysed in Rust.
pub(super) const PAST_BEST: &str = concat!(
    "WITH s AS MATERIALIZED ( \
        SELECT id, key_norm, value_norm, \
               CASE WHEN $3::real[] IS NULL THEN NULL \
                    ELSE embedding <=> (SELECT $3::real[]::vector) END AS distance \
        FROM memories WHERE account_id = $1 AND NOT counted AND ended_at > $2 \
        AND updated_at <= $2 AND ($4::text IS NULL OR namespace = $4) AND tags @> $5 \
     ), totals AS ( \
        SELECT greatest(count(*), 1)::float8 AS n, \
               greatest(sum(key_norm), 1)::float8 / greatest(count(*), 1) AS key_avg, \
               greatest(sum(value_norm), 1)::float8 / greatest(count(*), 1) AS value_avg \
        FROM s \
     ), postings AS MATERIALIZED ( \
        SELECT t.field, t.term, t.id, t.tf, t.norm FROM memory_past_terms t \
        WHERE t.account_id = $1 AND t.field = ANY('{0,1}'::smallint[]) AND t.term = ANY($7) \
        AND t.id IN (SELECT id FROM s) \
     ), weights AS MATERIALIZED ( \
        SELECT p.field, p.term, \
               ln(1 + (totals.n - count(*) + 0.5::float8) / (count(*) + 0.5::float8)) \
                   * 2.2::float8 AS weight, \
               0.9::float8 / CASE p.field WHEN 0 THEN totals.key_avg ELSE totals.value_avg END \
                   AS per_norm \
        FROM postings p, totals GROUP BY p.field, p.term, totals.n, totals.key_avg, totals.value_avg \
     ), scored AS ( \
        SELECT p.id, sum(w.weight * p.tf / (p.tf + 0.3::float8 + w.per_norm * p.norm))::float4 \
               AS bm25 \
        FROM postings p JOIN weights w ON w.field = p.field AND w.term = p.term GROUP BY p.id \
     ), best AS ( \
        (SELECT id FROM s WHERE distance IS NOT NULL ORDER BY distance, id LIMIT $6) \
        UNION (SELECT id FROM scored ORDER BY bm25 DESC, id LIMIT $6) \
     ) SELECT ",
    memory_columns!(),
    ", cosine, bm25 FROM ( \
        SELECT m.*, (1 - s.distance)::float4 AS cosine, scored.bm25 FROM best \
        JOIN s ON s.id = best.id JOIN memories m ON m.account_id = $1 AND m.id = best.id \
        LEFT JOIN scored ON scored.id = best.id \
     ) found ORDER BY id"
);

/// [`PAST_BEST`] for `q` at `at`.
pub(super) async fn past_best(
    pool: &PgPool,
    q: &CandidateQuery,
    at: u64,
) -> Result<Vec<(Memory, Candidate)>> {
    let terms: Vec<String> = match q.keywords {
        true => query_terms(&q.query).into_iter().collect(),
        false => Vec::new(),
    };
    let rows = sqlx::query(PAST_BEST)
        .bind(&q.account)
        .bind(bigint(at))
        .bind(q.vector.as_deref().map(Vec::as_slice))
        .bind(q.namespace.as_deref())
        .bind(&q.tags)
        .bind(bigint(q.k))
        .bind(&terms)
        .fetch_all(pool)
        .await?;
    rows.iter()
        .map(|r| {
            let candidate = Candidate {
                cosine: r.try_get("cosine")?,
                bm25: r.try_get("bm25")?,
            };
            Ok((memory(r)?, candidate))
        })
        .collect()
}

/// Whether every version of `account`'s past has its end and its postings (see
/// [`PAST_BEST`]): false while some retired before those existed are left to fill in.
pub(super) async fn past_ended(pool: &PgPool, account: &str) -> Result<bool> {
    Ok(sqlx::query_scalar(
        "SELECT NOT EXISTS ( \
            SELECT 1 FROM memories WHERE account_id = $1 AND NOT counted AND ended_at IS NULL)",
    )
    .bind(account)
    .fetch_one(pool)
    .await?)
}

/// Makes the next query of `tx` go through a graph's HNSW index with its filter: the
/// planner is told not to sort (else, for a graph it guesses small, it may read and sort
/// every row of it), the scan is iterative, and its candidate list no shorter than what is
/// asked for.
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
