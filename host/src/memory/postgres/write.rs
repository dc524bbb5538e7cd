//! Writes of one account in one PostgreSQL transaction. [`Txn::begin`] locks the account's
//! counter row first, so the writes of an account are serial across every node: the quota
//! check, the live-key check and the version chain read what no other write is changing.
//! Like the embedded batch, each operation checks everything before it changes anything,
//! and the caller commits or drops (rolls back) the whole transaction.

use std::collections::HashMap;

use sqlx::{AssertSqlSafe, PgPool, Postgres, Row, Transaction};
use tantivy::fieldnorm::FieldNormReader;

use super::{
    rows::{memories, memory, memory_columns},
    search::VectorSql,
};
use crate::memory::{
    MemoryError, Quota, Result,
    backend::{Merge, Merged, PutOutcome, RunFence},
    index::index_terms,
    input::PutInput,
    put,
    record::{Memory, Provenance},
};
use crate::storage::{bigint, unsigned};

/// Field numbers of `memory_terms`.
pub(super) const KEY_FIELD: i16 = 0;
pub(super) const VALUE_FIELD: i16 = 1;

/// Locks `account`'s counter row for the rest of `tx` — what every write of the account
/// does first — and reads its counted memories and its graph (see `indexer`), if it has
/// one; `None` when the account has never been written.
pub(super) async fn lock_account(
    tx: &mut Transaction<'static, Postgres>,
    account: &str,
) -> Result<Option<(u64, Option<i64>)>> {
    let row: Option<(i64, Option<i64>)> =
        sqlx::query_as("SELECT live, graph FROM memory_accounts WHERE account_id = $1 FOR UPDATE")
            .bind(account)
            .fetch_optional(&mut **tx)
            .await?;
    Ok(row.map(|(live, graph)| (unsigned(live), graph)))
}

/// Takes `what` (a kind of background work) of `account` for the rest of `tx`, with a
/// transaction-level advisory lock; false when another session has it.
pub(super) async fn claim(
    tx: &mut Transaction<'static, Postgres>,
    what: &str,
    account: &str,
) -> Result<bool> {
    Ok(
        sqlx::query_scalar("SELECT pg_try_advisory_xact_lock(hashtext($1), hashtext($2))")
            .bind(what)
            .bind(account)
            .fetch_one(&mut **tx)
            .await?,
    )
}

/// A write transaction of one account, its counter row locked.
pub(super) struct Txn {
    tx: Transaction<'static, Postgres>,
    account: String,
    now: u64,
    /// The account's counted memories (the quota's used), kept in step with the row.
    live: u64,
    /// The account's graph, whose rows go when their memories stop being counted.
    graph: Option<i64>,
}

impl Txn {
    /// Begins a write of `account` at `now`: locks its counter row (made by its first
    /// write), then reaps its memories whose expiry has passed, so the counts are exact.
    pub(super) async fn begin(pool: &PgPool, account: &str, now: u64) -> Result<Self> {
        let mut tx = pool.begin().await?;
        let mut row = lock_account(&mut tx, account).await?;
        if row.is_none() {
            sqlx::query(
                "INSERT INTO memory_accounts (account_id) VALUES ($1) ON CONFLICT DO NOTHING",
            )
            .bind(account)
            .execute(&mut *tx)
            .await?;
            row = lock_account(&mut tx, account).await?;
        }
        let (live, graph) = row.unwrap_or((0, None));
        let mut txn = Self {
            tx,
            account: account.to_string(),
            now,
            live,
            graph,
        };
        txn.reap().await?;
        Ok(txn)
    }

    /// Refuses the transaction's next write unless `fence` holds: the agent's row has its
    /// epoch, share-locked to the commit, so a claim of the agent by another node (which
    /// updates the row) waits for this write, and a write after such a claim finds the new
    /// epoch. Check and write are thus one step.
    pub(super) async fn fenced(&mut self, fence: &RunFence) -> Result<()> {
        let held: Option<i32> = sqlx::query_scalar(
            "SELECT 1 FROM agents WHERE account_id = $1 AND agent_id = $2 AND epoch = $3 FOR SHARE",
        )
        .bind(&self.account)
        .bind(&fence.agent_id)
        .bind(bigint(fence.epoch))
        .fetch_optional(&mut *self.tx)
        .await?;
        match held {
            Some(_) => Ok(()),
            None => Err(MemoryError::Stale(fence.agent_id.clone())),
        }
    }

    /// Makes every write of the transaction durable at once.
    pub(super) async fn commit(self) -> Result<()> {
        Ok(self.tx.commit().await?)
    }

    /// Creates, version-updates or (identical value) leaves a memory; refuses with
    /// `QuotaExceeded` when it would take the account past `limit` live memories.
    pub(super) async fn put(
        &mut self,
        input: &PutInput,
        embedding: &[f32],
        limit: u64,
    ) -> Result<PutOutcome> {
        input.validate()?;
        debug_assert_eq!(input.account, self.account);
        let previous = self.head(&input.namespace, &input.key).await?;
        if let Some(kept) = put::unchanged(input, previous.as_ref(), self.now) {
            return Ok(kept);
        }
        if let Some(applied) = self.applied(input).await? {
            return Ok(PutOutcome::kept(applied));
        }
        let mut memory = put::next_version(input, previous.as_ref(), self.now, (self.live, limit))?;
        if let Some(old) = &previous {
            sqlx::query("UPDATE memories SET is_latest = false WHERE account_id = $1 AND id = $2")
                .bind(&self.account)
                .bind(bigint(old.id))
                .execute(&mut *self.tx)
                .await?;
            self.unlist(&[old.id]).await?;
        }
        memory.id = self.insert(&memory, embedding).await?;
        Ok(PutOutcome {
            memory,
            created: true,
        })
    }

    /// The version `input` wrote already, if an agent's journaled put is made again (see
    /// [`PutInput::applied_as`]): the key's newest version by the same agent call.
    async fn applied(&mut self, input: &PutInput) -> Result<Option<Memory>> {
        let Some((agent_id, step)) = input.provenance.agent_call() else {
            return Ok(None);
        };
        let version = sqlx::query(concat!(
            "SELECT ",
            memory_columns!(),
            " FROM memories WHERE account_id = $1 AND namespace = $2 AND key = $3 \
             AND provenance->>'agent_id' = $4 AND provenance->'step' = to_jsonb($5::bigint) \
             ORDER BY id DESC LIMIT 1"
        ))
        .bind(&self.account)
        .bind(&input.namespace)
        .bind(&input.key)
        .bind(agent_id)
        .bind(bigint(step))
        .fetch_optional(&mut *self.tx)
        .await?
        .map(|row| memory(&row))
        .transpose()?;
        Ok(version.filter(|m| input.applied_as(m)))
    }

    /// [`Txn::put`] under `fence` when given ([`Txn::fenced`]) and within `quota`, pruning
    /// the key's older versions when it made one past those the quota keeps.
    pub(super) async fn put_fenced(
        &mut self,
        input: &PutInput,
        embedding: &[f32],
        quota: Quota,
        fence: Option<&RunFence>,
    ) -> Result<PutOutcome> {
        if let Some(fence) = fence {
            self.fenced(fence).await?;
        }
        let outcome = self.put(input, embedding, quota.memories).await?;
        if outcome.prunes(quota) {
            let key = [(input.namespace.clone(), input.key.clone())];
            self.prune(&key, quota.keep()).await?;
        }
        Ok(outcome)
    }

    /// [`Txn::put_fenced`] inside a savepoint, beside other writes in the same
    /// transaction: when it fails, the transaction is as it was before it and can go on.
    /// The outer error is the transaction's own failure (the savepoint could not be set or
    /// undone).
    pub(super) async fn put_apart(
        &mut self,
        input: &PutInput,
        embedding: &[f32],
        quota: Quota,
        fence: Option<&RunFence>,
    ) -> Result<Result<PutOutcome>> {
        sqlx::query("SAVEPOINT put").execute(&mut *self.tx).await?;
        let live = self.live;
        let outcome = self.put_fenced(input, embedding, quota, fence).await;
        let end = match outcome {
            Ok(_) => "RELEASE SAVEPOINT put",
            Err(_) => {
                self.live = live;
                "ROLLBACK TO SAVEPOINT put"
            }
        };
        sqlx::query(end).execute(&mut *self.tx).await?;
        Ok(outcome)
    }

    /// Soft delete of the live memory at (namespace, key), recording `by` who deleted it.
    /// A delete by an agent's journaled call that finds the version that same call deleted
    /// (made again by its resumed run) answers with it.
    pub(super) async fn soft_delete(
        &mut self,
        namespace: &str,
        key: &str,
        by: Option<&Provenance>,
    ) -> Result<Memory> {
        let by_json = by.map(serde_json::to_string).transpose()?;
        let row = sqlx::query(concat!(
            "UPDATE memories SET is_latest = false, deleted_at = $4, deleted_by = $5::jsonb \
             WHERE account_id = $1 AND namespace = $2 AND key = $3 AND counted \
             AND (expires_at IS NULL OR expires_at > $4) RETURNING ",
            memory_columns!()
        ))
        .bind(&self.account)
        .bind(namespace)
        .bind(key)
        .bind(bigint(self.now))
        .bind(by_json)
        .fetch_optional(&mut *self.tx)
        .await?;
        let Some(row) = row else {
            return match self.head(namespace, key).await? {
                Some(done) if by.is_some_and(|by| by.deleted(&done)) => Ok(done),
                _ => Err(MemoryError::not_found(namespace, key)),
            };
        };
        let retired = memory(&row)?;
        self.unlist(&[retired.id]).await?;
        Ok(retired)
    }

    /// The newest version of (namespace, key), live or not.
    async fn head(&mut self, namespace: &str, key: &str) -> Result<Option<Memory>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            memory_columns!(),
            " FROM memories WHERE account_id = $1 AND namespace = $2 AND key = $3 \
             ORDER BY id DESC LIMIT 1"
        ))
        .bind(&self.account)
        .bind(namespace)
        .bind(key)
        .fetch_optional(&mut *self.tx)
        .await?;
        row.map(|row| memory(&row)).transpose()
    }

    /// Soft-deletes those of `ids` still live; returns them in the order of `ids`.
    pub(super) async fn soft_delete_ids(&mut self, ids: &[u64]) -> Result<Vec<Memory>> {
        let rows = sqlx::query(concat!(
            "UPDATE memories SET is_latest = false, deleted_at = $3 \
             WHERE account_id = $1 AND id = ANY($2) AND counted \
             AND (expires_at IS NULL OR expires_at > $3) RETURNING ",
            memory_columns!()
        ))
        .bind(&self.account)
        .bind(ids.iter().map(|&id| bigint(id)).collect::<Vec<_>>())
        .bind(bigint(self.now))
        .fetch_all(&mut *self.tx)
        .await?;
        let mut retired = memories(&rows)?;
        retired.sort_by_key(|m| ids.iter().position(|&id| id == m.id));
        let gone: Vec<u64> = retired.iter().map(|m| m.id).collect();
        self.unlist(&gone).await?;
        Ok(retired)
    }

    /// Every version of (namespace, key) removed for good; returns how many.
    pub(super) async fn hard_delete(&mut self, namespace: &str, key: &str) -> Result<usize> {
        let ids: Vec<i64> = sqlx::query_scalar(
            "SELECT id FROM memories WHERE account_id = $1 AND namespace = $2 AND key = $3",
        )
        .bind(&self.account)
        .bind(namespace)
        .bind(key)
        .fetch_all(&mut *self.tx)
        .await?;
        if ids.is_empty() {
            return Err(MemoryError::not_found(namespace, key));
        }
        let ids: Vec<u64> = ids.into_iter().map(unsigned).collect();
        self.unlist(&ids).await?;
        sqlx::query(
            "WITH gone AS ( \
                DELETE FROM memories WHERE account_id = $1 AND namespace = $2 AND key = $3 \
                RETURNING id \
             ) DELETE FROM memory_past_terms t USING gone \
             WHERE t.account_id = $1 AND t.id = gone.id",
        )
        .bind(&self.account)
        .bind(namespace)
        .bind(key)
        .execute(&mut *self.tx)
        .await?;
        Ok(ids.len())
    }

    /// Removes the versions of each of `keys` (namespace, key) beyond its newest `keep`
    /// (at least 1), and unlinks the oldest kept from them; returns how many went. Only
    /// uncounted rows (superseded or deleted versions) are ever removed.
    pub(super) async fn prune(&mut self, keys: &[(String, String)], keep: u32) -> Result<usize> {
        let (namespaces, names): (Vec<&str>, Vec<&str>) = keys
            .iter()
            .map(|(namespace, key)| (namespace.as_str(), key.as_str()))
            .unzip();
        let removed: i64 = sqlx::query_scalar(
            "WITH old AS ( \
                SELECT id FROM ( \
                    SELECT id, row_number() OVER (PARTITION BY namespace, key ORDER BY id DESC) AS n \
                    FROM memories \
                    WHERE account_id = $1 \
                    AND (namespace, key) IN (SELECT * FROM unnest($2::text[], $3::text[])) \
                ) v WHERE v.n > $4 \
             ), gone AS ( \
                DELETE FROM memories m USING old \
                WHERE m.account_id = $1 AND m.id = old.id AND NOT m.counted \
                RETURNING m.id \
             ), postings AS ( \
                DELETE FROM memory_past_terms t USING gone \
                WHERE t.account_id = $1 AND t.id = gone.id \
             ), cut AS ( \
                UPDATE memories SET previous = NULL \
                WHERE account_id = $1 AND previous IN (SELECT id FROM gone) \
             ) SELECT count(*) FROM gone",
        )
        .bind(&self.account)
        .bind(namespaces)
        .bind(names)
        .bind(i64::from(keep.max(1)))
        .fetch_one(&mut *self.tx)
        .await?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }

    /// See [`MemoryBackend::consolidate`](crate::memory::MemoryBackend::consolidate).
    pub(super) async fn consolidate(&mut self, merges: &[Merge]) -> Result<Vec<Merged>> {
        for merge in merges {
            merge.summary.validate()?;
        }
        let mut retired = Vec::with_capacity(merges.len());
        for merge in merges {
            retired.push(self.soft_delete_ids(&merge.originals).await?);
        }
        let mut merged = Vec::with_capacity(merges.len());
        for (merge, mut replaced) in merges.iter().zip(retired) {
            let input = merge.naming(&replaced);
            let summary = self.put(&input, &merge.embedding, u64::MAX).await?.memory;
            sqlx::query(
                "UPDATE memories SET consolidated_into = $3 WHERE account_id = $1 AND id = ANY($2)",
            )
            .bind(&self.account)
            .bind(replaced.iter().map(|m| bigint(m.id)).collect::<Vec<_>>())
            .bind(&summary.memory_id)
            .execute(&mut *self.tx)
            .await?;
            for original in &mut replaced {
                original.consolidated_into = Some(summary.memory_id.clone());
            }
            merged.push(Merged { summary, replaced });
        }
        Ok(merged)
    }

    /// Takes the account's memories whose expiry has passed out of the counted set.
    async fn reap(&mut self) -> Result<()> {
        let due: Vec<i64> = sqlx::query_scalar(
            "SELECT id FROM memories WHERE account_id = $1 AND counted AND expires_at <= $2",
        )
        .bind(&self.account)
        .bind(bigint(self.now))
        .fetch_all(&mut *self.tx)
        .await?;
        if !due.is_empty() {
            let due: Vec<u64> = due.into_iter().map(unsigned).collect();
            self.unlist(&due).await?;
        }
        Ok(())
    }

    /// Inserts a new live version, its terms, and its share of the account's statistics;
    /// returns its id.
    async fn insert(&mut self, m: &Memory, embedding: &[f32]) -> Result<u64> {
        let key = Analyzed::new(KEY_FIELD, &m.key);
        let value = Analyzed::new(VALUE_FIELD, &m.value);
        let (mut fields, mut terms, mut tfs) = (Vec::new(), Vec::new(), Vec::new());
        for field in [&key, &value] {
            for (term, tf) in &field.freqs {
                fields.push(field.field);
                terms.push(term.as_str());
                tfs.push(*tf);
            }
        }
        let row = sqlx::query(
            "WITH row AS ( \
                INSERT INTO memories (account_id, id, memory_id, namespace, key, value, tags, \
                    importance, source, created_at, updated_at, access_count, expires_at, \
                    is_latest, deleted_at, version, previous, consolidated_into, counted, \
                    key_norm, value_norm, embedding, provenance, observed_at) \
                VALUES ($1, nextval('memory_ids'), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, \
                    $12, true, NULL, $13, $14, NULL, true, $15, $16, $17::real[]::vector, \
                    $21::jsonb, $22) \
                RETURNING id \
             ), given AS ( \
                SELECT * FROM unnest($18::smallint[], $19::text[], $20::int[]) AS g(field, term, tf) \
             ), postings AS ( \
                INSERT INTO memory_terms (account_id, field, term, id, tf, norm) \
                SELECT $1, given.field, given.term, row.id, given.tf, \
                    CASE given.field WHEN 0 THEN $15 ELSE $16 END FROM given, row \
             ), stats AS ( \
                INSERT INTO memory_term_stats (account_id, field, term, docs) \
                SELECT $1, field, term, 1 FROM given \
                ON CONFLICT (account_id, field, term) \
                DO UPDATE SET docs = memory_term_stats.docs + 1 \
             ), totals AS ( \
                UPDATE memory_accounts SET live = live + 1, key_tokens = key_tokens + $15, \
                    value_tokens = value_tokens + $16, ungraphed = ungraphed + 1 \
                WHERE account_id = $1 \
             ) SELECT id FROM row",
        )
        .bind(&m.account)
        .bind(&m.memory_id)
        .bind(&m.namespace)
        .bind(&m.key)
        .bind(&m.value)
        .bind(&m.tags)
        .bind(m.importance)
        .bind(m.source.as_str())
        .bind(bigint(m.created_at))
        .bind(bigint(m.updated_at))
        .bind(bigint(m.access_count))
        .bind(m.expires_at.map(bigint))
        .bind(i32::try_from(m.version).unwrap_or(i32::MAX))
        .bind(m.previous.map(bigint))
        .bind(key.norm)
        .bind(value.norm)
        .bind(embedding)
        .bind(&fields)
        .bind(&terms)
        .bind(&tfs)
        .bind(m.provenance.as_ref().map(serde_json::to_string).transpose()?)
        .bind(m.observed_at.map(bigint))
        .fetch_one(&mut *self.tx)
        .await?;
        self.live += 1;
        Ok(unsigned(row.get("id")))
    }

    /// Takes `ids` out of the counted set (those in it), each ended now (or when it expired,
    /// if that was earlier): their terms go to the past's (`memory_past_terms`), their share
    /// of the account's statistics with them, and their rows of the account's graph.
    async fn unlist(&mut self, ids: &[u64]) -> Result<()> {
        let ids: Vec<i64> = ids.iter().map(|&id| bigint(id)).collect();
        if let Some(graph) = self.graph {
            sqlx::query(AssertSqlSafe(VectorSql::delete(graph)))
                .bind(&ids)
                .execute(&mut *self.tx)
                .await?;
        }
        let gone: i64 = sqlx::query_scalar(
            "WITH gone AS ( \
                UPDATE memories SET counted = false, ended_at = least($3, expires_at) \
                WHERE account_id = $1 AND id = ANY($2) AND counted \
                RETURNING id, key_norm, value_norm \
             ), postings AS ( \
                DELETE FROM memory_terms t USING gone \
                WHERE t.account_id = $1 AND t.id = gone.id \
                RETURNING t.field, t.term, t.id, t.tf, t.norm \
             ), past AS ( \
                INSERT INTO memory_past_terms (account_id, field, term, id, tf, norm) \
                SELECT $1, field, term, id, tf, norm FROM postings ON CONFLICT DO NOTHING \
             ), stats AS ( \
                UPDATE memory_term_stats s SET docs = s.docs - n.docs \
                FROM (SELECT field, term, count(*) AS docs FROM postings GROUP BY field, term) n \
                WHERE s.account_id = $1 AND s.field = n.field AND s.term = n.term \
             ), totals AS ( \
                UPDATE memory_accounts SET live = live - (SELECT count(*) FROM gone), \
                    key_tokens = key_tokens - (SELECT coalesce(sum(key_norm), 0) FROM gone), \
                    value_tokens = value_tokens - (SELECT coalesce(sum(value_norm), 0) FROM gone) \
                WHERE account_id = $1 \
             ) SELECT count(*) FROM gone",
        )
        .bind(&self.account)
        .bind(&ids)
        .bind(bigint(self.now))
        .fetch_one(&mut *self.tx)
        .await?;
        self.live = self.live.saturating_sub(unsigned(gone));
        Ok(())
    }
}

/// One field's analyzed terms as the keyword index would store them.
pub(super) struct Analyzed {
    pub(super) field: i16,
    /// Distinct terms with their frequencies.
    pub(super) freqs: HashMap<String, i32>,
    /// The token count quantized as tantivy's fieldnorms are (BM25's length).
    pub(super) norm: i32,
}

impl Analyzed {
    pub(super) fn new(field: i16, text: &str) -> Self {
        let tokens = index_terms(text);
        let count = u32::try_from(tokens.len()).unwrap_or(u32::MAX);
        let mut freqs = HashMap::with_capacity(tokens.len());
        for token in tokens {
            *freqs.entry(token).or_insert(0) += 1;
        }
        let quantized = FieldNormReader::id_to_fieldnorm(FieldNormReader::fieldnorm_to_id(count));
        Self {
            field,
            freqs,
            norm: i32::try_from(quantized).unwrap_or(i32::MAX),
        }
    }
}
