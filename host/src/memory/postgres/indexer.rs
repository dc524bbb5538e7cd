//! Puts an account into the HNSW index once it is past the exact-scan size. Only such
//! accounts' rows are in the index, so the puts of every smaller account — most of them —
//! skip the graph insertion, a write's dearest part (BENCHMARKS.md).
//!
//! The first search that finds an account past the size and not indexed starts this in
//! the background (once per node) and is answered by an exact scan, as are the searches
//! until it ends. The account's counted rows are marked `indexed` (which inserts them into
//! the partial index) a chunk per transaction, newest first, each transaction holding the
//! account's counter row like any write of it, so a chunk neither races the account's
//! writes nor holds them up for long; the last transaction marks whatever rows were written
//! meanwhile and the account itself, after which its new rows go in as they are written
//! and its searches use the index. Nodes doing this at once share the work: each chunk
//! takes rows no other has marked. A node that dies halfway leaves marked rows and an
//! unmarked account; the next search anywhere starts again where it stopped.

use std::{collections::HashSet, sync::Arc};

use parking_lot::Mutex;
use sqlx::PgPool;

use super::write::lock_account;
use crate::{memory::Result, storage::bigint};

/// Rows marked per transaction: each costs an HNSW insertion (~2.5 ms), and the account's
/// writes wait for the chunk.
const CHUNK: usize = 100;

/// The accounts this node is putting into the index.
pub(super) struct Indexer {
    pool: PgPool,
    running: Mutex<HashSet<String>>,
}

impl Indexer {
    pub(super) fn new(pool: PgPool) -> Arc<Self> {
        Arc::new(Self {
            pool,
            running: Mutex::new(HashSet::new()),
        })
    }

    /// Starts putting `account` into the index in the background, unless this node
    /// already is.
    pub(super) fn start(self: &Arc<Self>, account: &str) {
        if !self.running.lock().insert(account.to_string()) {
            return;
        }
        let (indexer, account) = (Arc::downgrade(self), account.to_string());
        let pool = self.pool.clone();
        tokio::spawn(async move {
            if let Err(e) = index_account(&pool, &account).await {
                tracing::warn!(%account, error = %e, "putting an account into the vector index failed; the next search retries");
            }
            if let Some(indexer) = indexer.upgrade() {
                indexer.running.lock().remove(&account);
            }
        });
    }
}

/// Puts every counted row of `account` into the index, then marks the account indexed.
pub(super) async fn index_account(pool: &PgPool, account: &str) -> Result<()> {
    let mut below = i64::MAX;
    loop {
        let mut tx = pool.begin().await?;
        let Some((_, false)) = lock_account(&mut tx, account).await? else {
            return Ok(());
        };
        let marked: Option<i64> = sqlx::query_scalar(
            "WITH marked AS ( \
                UPDATE memories SET indexed = true \
                WHERE account_id = $1 AND id IN ( \
                    SELECT id FROM memories \
                    WHERE account_id = $1 AND counted AND NOT indexed AND id < $2 \
                    ORDER BY id DESC LIMIT $3) \
                RETURNING id \
             ) SELECT min(id) FROM marked",
        )
        .bind(account)
        .bind(below)
        .bind(bigint(CHUNK))
        .fetch_one(&mut *tx)
        .await?;
        let Some(lowest) = marked else {
            // None left below the cursor: the rows written meanwhile, and the account.
            sqlx::query(
                "WITH rest AS ( \
                    UPDATE memories SET indexed = true \
                    WHERE account_id = $1 AND counted AND NOT indexed \
                 ) UPDATE memory_accounts SET indexed = true WHERE account_id = $1",
            )
            .bind(account)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            return Ok(());
        };
        tx.commit().await?;
        below = lowest;
    }
}
