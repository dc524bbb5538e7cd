//! Fills in, for the versions an account retired before their ends and the past's postings
//! were kept (migration 0018), both: so its `as_of` searches can rank the past in the
//! database ([`search::PAST_BEST`](super::search::PAST_BEST)). Started in the background
//! by an `as_of` search that finds such versions (answered the old way meanwhile), a chunk
//! per transaction: each version's key and value analysed here as the keyword index does,
//! its postings stored, and its end computed as the old search found it — its key's next
//! version written, its delete, or its expiry, whichever came first. Each chunk holds the
//! account's writes (a prune or a hard delete must not remove a version whose postings are
//! being stored); nodes doing this at once leave it to the first.

use sqlx::PgPool;

use super::write::{Analyzed, KEY_FIELD, VALUE_FIELD, claim, lock_account};
use crate::{memory::Result, storage::bigint};

/// Versions filled in per transaction (their texts analysed while it holds the writes).
const CHUNK: usize = 500;

/// Fills in every version of `account`'s past lacking its end; returns early when another
/// session is at it.
pub(super) async fn fill(pool: &PgPool, account: &str) -> Result<()> {
    loop {
        let mut tx = pool.begin().await?;
        if !claim(&mut tx, "wasmind.memory_past", account).await? {
            return Ok(());
        }
        lock_account(&mut tx, account).await?;
        let versions: Vec<(i64, String, String)> = sqlx::query_as(
            "SELECT id, key, value FROM memories \
             WHERE account_id = $1 AND NOT counted AND ended_at IS NULL ORDER BY id LIMIT $2",
        )
        .bind(account)
        .bind(bigint(CHUNK))
        .fetch_all(&mut *tx)
        .await?;
        if versions.is_empty() {
            return Ok(());
        }
        let (mut fields, mut terms, mut ids, mut tfs, mut norms) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (id, key, value) in &versions {
            for field in [
                Analyzed::new(KEY_FIELD, key),
                Analyzed::new(VALUE_FIELD, value),
            ] {
                for (term, tf) in field.freqs {
                    fields.push(field.field);
                    terms.push(term);
                    ids.push(*id);
                    tfs.push(tf);
                    norms.push(field.norm);
                }
            }
        }
        sqlx::query(
            "INSERT INTO memory_past_terms (account_id, field, term, id, tf, norm) \
             SELECT $1, * FROM unnest($2::smallint[], $3::text[], $4::bigint[], $5::int[], $6::int[]) \
             ON CONFLICT DO NOTHING",
        )
        .bind(account)
        .bind(&fields)
        .bind(&terms)
        .bind(&ids)
        .bind(&tfs)
        .bind(&norms)
        .execute(&mut *tx)
        .await?;
        // A version with none of the three (there should be none) was found live at any
        // instant after it was written: so it stays.
        sqlx::query(
            "UPDATE memories m SET ended_at = coalesce(least(m.deleted_at, m.expires_at, ( \
                SELECT min(n.updated_at) FROM memories n WHERE n.account_id = m.account_id \
                AND n.namespace = m.namespace AND n.key = m.key AND n.id > m.id \
             )), 9223372036854775807) \
             WHERE m.account_id = $1 AND m.id = ANY($2)",
        )
        .bind(account)
        .bind(versions.iter().map(|(id, ..)| *id).collect::<Vec<_>>())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
    }
}
