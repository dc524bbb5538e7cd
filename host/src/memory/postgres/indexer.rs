//! Gives an account a graph of its own once it is past the exact-scan size, and brings the
//! graph up to date with the account's new memories. Puts never touch a graph — an HNSW
//! insertion costs the database ~2.5 ms of CPU, several times the rest of a put —, so the
//! rows are added here, in the background, and a search meanwhile scans the few written
//! since exactly (see [`search`](super::search)).
//!
//! A search that finds an account past the size without a graph, or with more than a bound
//! of rows written since its graph was last brought up to date, starts this (once per node)
//! and is answered as things stand. Both steps take a transaction-level advisory lock of
//! the account first, so nodes doing this at once leave it to whichever got there first.
//!
//! **Building** is one transaction: a new table, every counted row of the account copied
//! into it, then its HNSW index built over them (built at once, a fraction of the cost of
//! inserting them one by one; 100,000 rows in about half a minute here), then — holding the
//! account's writes for a moment, as each of them does — the rows deleted meanwhile taken
//! out again, and the account pointed at the table. Until that commits nobody sees the
//! table, so a node dying halfway leaves nothing behind.
//!
//! **Catching up** adds the rows written since, [`CHUNK`] per transaction, oldest first:
//! copied without holding the account's writes (the insertions are the slow part), then the
//! account's row locked, the copied rows deleted meanwhile taken out, and the mark moved on.
//! A write that deletes a memory deletes its graph row with it; one that raced a copy made
//! before the lock is caught by it, since the write had to commit before the lock was had.

use std::{collections::HashSet, sync::Arc};

use parking_lot::Mutex;
use sqlx::{AssertSqlSafe, PgPool, Postgres, Transaction};

use super::{
    past,
    search::VectorSql,
    write::{claim, lock_account},
};
use crate::{
    memory::Result,
    storage::{bigint, unsigned},
};

/// Rows added to a graph per transaction while catching up: each is an HNSW insertion.
const CHUNK: usize = 1_000;

/// The advisory lock of an account's graph work (see [`claim`]).
const GRAPH: &str = "wasmind.memory_graph";

/// Work on an account this node does in the background.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Job {
    /// A graph once past this many counted memories, or the graph brought up to date.
    Graph { past: u64 },
    /// The ends and postings of the versions it retired before those were kept.
    Past,
}

/// `maintenance_work_mem` a graph's build asks for per row, so that pgvector builds it in
/// memory (a build that outgrows it goes on by inserting the rest one by one, several
/// times slower): a 384-dimension vector and its neighbour lists, with room to spare.
const BUILD_BYTES_PER_ROW: u64 = 4 * 1024;
/// The least and most a build asks for (the first is PostgreSQL's default).
const BUILD_MEMORY: (u64, u64) = (64 << 20, 1 << 30);

/// The accounts this node is doing background work on.
pub(super) struct Indexer {
    pool: PgPool,
    dims: usize,
    running: Mutex<HashSet<(String, bool)>>,
}

impl Indexer {
    pub(super) fn new(pool: PgPool, dims: usize) -> Arc<Self> {
        Arc::new(Self {
            pool,
            dims,
            running: Mutex::new(HashSet::new()),
        })
    }

    /// Starts `job` on `account` in the background, unless this node already is at it.
    pub(super) fn start(self: &Arc<Self>, account: &str, job: Job) {
        let running = (account.to_string(), matches!(job, Job::Past));
        if !self.running.lock().insert(running.clone()) {
            return;
        }
        let (indexer, account) = (Arc::downgrade(self), account.to_string());
        let (pool, dims) = (self.pool.clone(), self.dims);
        tokio::spawn(async move {
            let done = match job {
                Job::Graph { past } => index_account(&pool, dims, &account, past).await,
                Job::Past => past::fill(&pool, &account).await,
            };
            if let Err(e) = done {
                tracing::warn!(%account, ?job, error = %e, "background work on an account failed; the next search retries");
            }
            if let Some(indexer) = indexer.upgrade() {
                indexer.running.lock().remove(&running);
            }
        });
    }
}

/// Gives `account` a graph when it has more than `past` counted memories and none yet,
/// then adds every row written since to it. Returns early when another node is at it.
pub(super) async fn index_account(
    pool: &PgPool,
    dims: usize,
    account: &str,
    past: u64,
) -> Result<()> {
    loop {
        let row: Option<(i64, Option<i64>)> =
            sqlx::query_as("SELECT live, graph FROM memory_accounts WHERE account_id = $1")
                .bind(account)
                .fetch_optional(pool)
                .await?;
        let more = match row {
            Some((_, Some(graph))) => catch_up(pool, account, graph).await?,
            Some((live, None)) if unsigned(live) > past => build(pool, dims, account).await?,
            _ => false,
        };
        if !more {
            return Ok(());
        }
    }
}

/// Makes `account`'s graph from its counted rows; true when it has one now.
async fn build(pool: &PgPool, dims: usize, account: &str) -> Result<bool> {
    let mut tx = pool.begin().await?;
    if !claim(&mut tx, GRAPH, account).await? {
        return Ok(false);
    }
    let made: Option<i64> =
        sqlx::query_scalar("SELECT graph FROM memory_accounts WHERE account_id = $1")
            .bind(account)
            .fetch_one(&mut *tx)
            .await?;
    if made.is_some() {
        return Ok(true);
    }
    let graph: i64 = sqlx::query_scalar("SELECT nextval('memory_graphs')")
        .fetch_one(&mut *tx)
        .await?;
    run(&mut tx, &VectorSql::graph_table(dims, graph)).await?;
    // The account's writes are serial and ids grow with them, so every row above this
    // mark was written after it and is the tail.
    let upto: i64 =
        sqlx::query_scalar("SELECT coalesce(max(id), 0) FROM memories WHERE account_id = $1")
            .bind(account)
            .fetch_one(&mut *tx)
            .await?;
    let copied = sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO memory_graph_{graph} (id, embedding) SELECT id, embedding FROM memories \
         WHERE account_id = $1 AND counted AND id <= $2"
    )))
    .persistent(false)
    .bind(account)
    .bind(upto)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    let memory = (copied * BUILD_BYTES_PER_ROW).clamp(BUILD_MEMORY.0, BUILD_MEMORY.1);
    sqlx::query("SELECT set_config('maintenance_work_mem', $1, true)")
        .bind(format!("{}kB", memory >> 10))
        .execute(&mut *tx)
        .await?;
    run(&mut tx, &VectorSql::graph_index(graph)).await?;
    lock_account(&mut tx, account).await?;
    run_for(&mut tx, &VectorSql::uncounted(graph, None), account).await?;
    sqlx::query(
        "UPDATE memory_accounts SET graph = $2, graphed_upto = $3, ungraphed = ( \
            SELECT count(*) FROM memories WHERE account_id = $1 AND counted AND id > $3 \
         ) WHERE account_id = $1",
    )
    .bind(account)
    .bind(graph)
    .bind(upto)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// Adds the next [`CHUNK`] counted rows past `account`'s mark to its `graph`; true when
/// there may be more.
async fn catch_up(pool: &PgPool, account: &str, graph: i64) -> Result<bool> {
    let mut tx = pool.begin().await?;
    if !claim(&mut tx, GRAPH, account).await? {
        return Ok(false);
    }
    let (from, to): (i64, Option<i64>) = sqlx::query_as(
        "SELECT a.graphed_upto, ( \
            SELECT max(id) FROM ( \
                SELECT id FROM memories WHERE account_id = $1 AND counted AND id > a.graphed_upto \
                ORDER BY id LIMIT $2 \
            ) c \
         ) FROM memory_accounts a WHERE a.account_id = $1",
    )
    .bind(account)
    .bind(bigint(CHUNK))
    .fetch_one(&mut *tx)
    .await?;
    let Some(to) = to else {
        // Nothing counted past the mark: what was written since is gone again.
        lock_account(&mut tx, account).await?;
        sqlx::query("UPDATE memory_accounts SET ungraphed = 0 WHERE account_id = $1")
            .bind(account)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        return Ok(false);
    };
    let copied = sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO memory_graph_{graph} (id, embedding) SELECT id, embedding FROM memories \
         WHERE account_id = $1 AND counted AND id > $2 AND id <= $3"
    )))
    .persistent(false)
    .bind(account)
    .bind(from)
    .bind(to)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    lock_account(&mut tx, account).await?;
    run_for(
        &mut tx,
        &VectorSql::uncounted(graph, Some((from, to))),
        account,
    )
    .await?;
    sqlx::query(
        "UPDATE memory_accounts SET graphed_upto = $2, ungraphed = greatest(ungraphed - $3, 0) \
         WHERE account_id = $1",
    )
    .bind(account)
    .bind(to)
    .bind(bigint(copied))
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// Runs a statement of no parameters (DDL) in `tx`.
async fn run(tx: &mut Transaction<'static, Postgres>, sql: &str) -> Result<()> {
    sqlx::query(AssertSqlSafe(sql.to_owned()))
        .persistent(false)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Runs a statement whose one parameter is the account in `tx`.
async fn run_for(tx: &mut Transaction<'static, Postgres>, sql: &str, account: &str) -> Result<()> {
    sqlx::query(AssertSqlSafe(sql.to_owned()))
        .persistent(false)
        .bind(account)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
