//! All mutations of the memory tables, applied inside one redb write transaction (a
//! "batch" of commands that the writer commits together). Each operation checks
//! everything before it mutates anything, so a refused operation leaves no trace even
//! though it shares the transaction with others.

use redb::{ReadableTable, Table, WriteTransaction};

use super::{
    ACCOUNT_COUNTS, EMBEDDINGS, EXPIRIES, HEADS, MEMORIES, META, NEXT_ID, NEXT_SEQ, NS_COUNTS,
    OPLOG, OPLOG_FLOOR, TIMELINE, decode_embedding, encode_embedding, load,
};
use crate::memory::{
    MemoryError, Quota, Result,
    backend::{Merge, Merged, PutOutcome},
    derived::{Changes, belongs_to_past, index_doc, past_doc},
    index::IndexOp,
    input::PutInput,
    put,
    record::{Memory, Provenance},
};

/// Open tables of one write transaction plus the index changes it produced.
pub struct Batch<'t> {
    pub(super) txn: &'t WriteTransaction,
    pub(super) memories: Table<'t, u64, &'static [u8]>,
    pub(super) embeddings: Table<'t, u64, &'static [u8]>,
    heads: Table<'t, (&'static str, &'static str, &'static str), u64>,
    timeline: Table<'t, (&'static str, u64), ()>,
    ns_counts: Table<'t, (&'static str, &'static str), u64>,
    account_counts: Table<'t, &'static str, u64>,
    expiries: Table<'t, (&'static str, u64, u64), ()>,
    oplog: Table<'t, u64, (u64, &'static str)>,
    pub(super) meta: Table<'t, &'static str, u64>,
    next_id: u64,
    next_seq: u64,
    now: u64,
    changes: Changes,
}

impl<'t> Batch<'t> {
    /// Opens the tables in `txn`; `now` (epoch ms) stamps every write of the batch.
    pub fn open(txn: &'t WriteTransaction, now: u64) -> Result<Self> {
        let meta = txn.open_table(META)?;
        let next_id = meta.get(NEXT_ID)?.map_or(1, |v| v.value());
        let next_seq = meta.get(NEXT_SEQ)?.map_or(1, |v| v.value());
        Ok(Self {
            txn,
            memories: txn.open_table(MEMORIES)?,
            embeddings: txn.open_table(EMBEDDINGS)?,
            heads: txn.open_table(HEADS)?,
            timeline: txn.open_table(TIMELINE)?,
            ns_counts: txn.open_table(NS_COUNTS)?,
            account_counts: txn.open_table(ACCOUNT_COUNTS)?,
            expiries: txn.open_table(EXPIRIES)?,
            oplog: txn.open_table(OPLOG)?,
            meta,
            next_id,
            next_seq,
            now,
            changes: Changes::default(),
        })
    }

    /// Saves the counters; returns the index changes and the last oplog seq they reach.
    pub fn finish(mut self) -> Result<(Changes, u64)> {
        self.meta.insert(NEXT_ID, self.next_id)?;
        self.meta.insert(NEXT_SEQ, self.next_seq)?;
        Ok((self.changes, self.next_seq - 1))
    }

    /// Creates, version-updates or (identical value) leaves a memory; refuses with
    /// `QuotaExceeded` when it would take the account past `limit` live memories.
    pub fn put(&mut self, input: &PutInput, embedding: &[f32], limit: u64) -> Result<PutOutcome> {
        input.validate()?;
        let account = input.account.as_str();
        self.reap(account)?;
        let head_key = (account, input.namespace.as_str(), input.key.as_str());
        let previous = self.head(account, &input.namespace, &input.key)?;
        if let Some(kept) = put::unchanged(input, previous.as_ref(), self.now) {
            return Ok(kept);
        }
        if let Some(applied) = self.applied(input, previous.as_ref())? {
            return Ok(PutOutcome::kept(applied));
        }
        let used = self.account_counts.get(account)?.map_or(0, |v| v.value());
        let mut memory = put::next_version(input, previous.as_ref(), self.now, (used, limit))?;
        memory.id = self.next_id;
        self.next_id += 1;
        let id = memory.id;
        if let Some(mut old) = previous {
            if old.is_latest {
                old.is_latest = false;
                self.save(&old)?;
            }
            if self.unlist(&old)? {
                self.leave_live(&old, Some(self.now))?;
            }
        }
        self.save(&memory)?;
        self.embeddings
            .insert(id, encode_embedding(embedding).as_slice())?;
        self.heads.insert(head_key, id)?;
        self.list(&memory)?;
        self.index_upsert(&memory, embedding.to_vec())?;
        Ok(PutOutcome {
            memory,
            created: true,
        })
    }

    /// The version `input` wrote already, if an agent's journaled put is made again (see
    /// [`PutInput::applied_as`]): looked for down the key's chain from `head`, which the
    /// versions kept per key bound. Agents' writes only; others never repeat.
    fn applied(&self, input: &PutInput, head: Option<&Memory>) -> Result<Option<Memory>> {
        if input.provenance.agent_call().is_none() {
            return Ok(None);
        }
        let mut version = head.cloned();
        while let Some(m) = version {
            if input.applied_as(&m) {
                return Ok(Some(m));
            }
            version = match m.previous {
                Some(id) => load(&self.memories, id)?,
                None => None,
            };
        }
        Ok(None)
    }

    /// Increments the access count of the live memory at (namespace, key) and returns it.
    pub fn touch(&mut self, account: &str, namespace: &str, key: &str) -> Result<Memory> {
        let mut memory = self.live_head(account, namespace, key)?;
        memory.access_count += 1;
        self.save(&memory)?;
        Ok(memory)
    }

    /// Soft delete: the live version gets `deletedAt` (and `by`, who deleted it) and leaves
    /// every view but history. An agent's journaled delete made again by its resumed run
    /// finds the version it deleted and answers with it.
    pub fn soft_delete(
        &mut self,
        account: &str,
        namespace: &str,
        key: &str,
        by: Option<&Provenance>,
    ) -> Result<Memory> {
        match self.head(account, namespace, key)? {
            Some(mut live) if live.is_live(self.now) => {
                live.deleted_by = by.cloned();
                self.retire(live)
            }
            Some(done) if by.is_some_and(|by| by.deleted(&done)) => Ok(done),
            _ => Err(MemoryError::not_found(namespace, key)),
        }
    }

    /// Soft-deletes the given live memories of `account` (dedupe); returns those removed.
    pub fn soft_delete_ids(&mut self, account: &str, ids: &[u64]) -> Result<Vec<Memory>> {
        let mut removed = Vec::new();
        for &id in ids {
            if let Some(m) = load(&self.memories, id)?
                && m.account == account
                && m.is_live(self.now)
            {
                removed.push(self.retire(m)?);
            }
        }
        Ok(removed)
    }

    /// Consolidation of `account`: soft-deletes every original still live, then writes
    /// each summary as a put (a new key, or a new version of a live one under the usual
    /// rules) and links its originals to it through `consolidated_into`. Originals go
    /// first so that a summary reusing an original's key starts a fresh version after it.
    /// Each merge replaces at least as many live memories as it adds, so no quota room is
    /// needed (an account already over a lowered quota may still consolidate). Every
    /// summary is validated before anything changes.
    pub fn consolidate(&mut self, account: &str, merges: &[Merge]) -> Result<Vec<Merged>> {
        for merge in merges {
            debug_assert_eq!(merge.summary.account, account);
            merge.summary.validate()?;
        }
        let retired: Vec<Vec<Memory>> = merges
            .iter()
            .map(|m| self.soft_delete_ids(account, &m.originals))
            .collect::<Result<_>>()?;
        let mut merged = Vec::with_capacity(merges.len());
        for (merge, mut replaced) in merges.iter().zip(retired) {
            let input = merge.naming(&replaced);
            let summary = self.put(&input, &merge.embedding, u64::MAX)?.memory;
            for original in &mut replaced {
                original.consolidated_into = Some(summary.memory_id.clone());
                self.save(original)?;
            }
            merged.push(Merged { summary, replaced });
        }
        Ok(merged)
    }

    /// Hard delete: every version of (namespace, key), live or not, is removed for good.
    /// Returns how many versions were removed.
    pub fn hard_delete(&mut self, account: &str, namespace: &str, key: &str) -> Result<usize> {
        let head_key = (account, namespace, key);
        let Some(head) = self.heads.remove(head_key)?.map(|v| v.value()) else {
            return Err(MemoryError::not_found(namespace, key));
        };
        let mut next = Some(head);
        let mut removed = 0;
        while let Some(id) = next {
            let Some(memory) = load(&self.memories, id)? else {
                break;
            };
            if id == head {
                self.unlist(&memory)?;
                self.index_remove(&memory)?;
            }
            self.past_remove(&memory)?;
            self.memories.remove(id)?;
            self.embeddings.remove(id)?;
            removed += 1;
            next = memory.previous;
        }
        Ok(removed)
    }

    /// [`Batch::put`] within `quota`, pruning the key's older versions when it made one
    /// past those the quota keeps.
    pub fn put_pruned(
        &mut self,
        input: &PutInput,
        embedding: &[f32],
        quota: Quota,
    ) -> Result<PutOutcome> {
        let outcome = self.put(input, embedding, quota.memories)?;
        if outcome.prunes(quota) {
            let (account, namespace, key) = (&input.account, &input.namespace, &input.key);
            self.prune(account, namespace, key, quota.keep())?;
        }
        Ok(outcome)
    }

    /// Removes the versions of (namespace, key) beyond its newest `keep` (at least 1) for
    /// good; the oldest kept then names no previous version. Returns how many went. Only
    /// superseded or deleted versions are ever beyond the newest, so nothing live changes.
    pub fn prune(&mut self, account: &str, namespace: &str, key: &str, keep: u32) -> Result<usize> {
        let mut next = self
            .heads
            .get((account, namespace, key))?
            .map(|v| v.value());
        let mut kept = 0;
        while let Some(id) = next {
            let Some(mut memory) = load(&self.memories, id)? else {
                return Ok(0);
            };
            kept += 1;
            next = memory.previous;
            if kept == keep.max(1) && next.is_some() {
                memory.previous = None;
                self.save(&memory)?;
                break;
            }
        }
        let mut removed = 0;
        while let Some(id) = next {
            let Some(memory) = load(&self.memories, id)? else {
                break;
            };
            debug_assert!(!memory.is_latest, "only older versions are pruned");
            self.past_remove(&memory)?;
            self.memories.remove(id)?;
            self.embeddings.remove(id)?;
            removed += 1;
            next = memory.previous;
        }
        Ok(removed)
    }

    /// Takes memories of `account` whose expiry has passed out of every live view.
    pub fn reap(&mut self, account: &str) -> Result<()> {
        let due: Vec<u64> = self
            .expiries
            .range((account, 0, 0)..=(account, self.now, u64::MAX))?
            .map(|entry| entry.map(|(k, _)| k.value().2))
            .collect::<Result<_, _>>()?;
        for id in due {
            if let Some(memory) = load(&self.memories, id)? {
                self.unlist(&memory)?;
                self.index_remove(&memory)?;
            }
        }
        Ok(())
    }

    /// Forgets oplog entries up to `upto`, which every index has durably absorbed.
    pub fn truncate_oplog(&mut self, upto: u64) -> Result<()> {
        self.oplog.retain_in(..=upto, |_, _| false)?;
        let floor = self.meta.get(OPLOG_FLOOR)?.map_or(0, |v| v.value());
        self.meta.insert(OPLOG_FLOOR, floor.max(upto))?;
        Ok(())
    }

    fn live_head(&self, account: &str, namespace: &str, key: &str) -> Result<Memory> {
        self.head(account, namespace, key)?
            .filter(|m| m.is_live(self.now))
            .ok_or_else(|| MemoryError::not_found(namespace, key))
    }

    /// The newest version of (namespace, key), live or not.
    fn head(&self, account: &str, namespace: &str, key: &str) -> Result<Option<Memory>> {
        match self.heads.get((account, namespace, key))? {
            Some(id) => load(&self.memories, id.value()),
            None => Ok(None),
        }
    }

    fn retire(&mut self, mut memory: Memory) -> Result<Memory> {
        memory.is_latest = false;
        memory.deleted_at = Some(self.now);
        self.save(&memory)?;
        self.unlist(&memory)?;
        self.leave_live(&memory, None)?;
        Ok(memory)
    }

    fn save(&mut self, memory: &Memory) -> Result<()> {
        self.memories
            .insert(memory.id, serde_json::to_vec(memory)?.as_slice())?;
        Ok(())
    }

    /// Enters a memory into the counted set.
    fn list(&mut self, m: &Memory) -> Result<()> {
        self.timeline.insert((m.account.as_str(), m.id), ())?;
        if let Some(at) = m.expires_at {
            self.expiries.insert((m.account.as_str(), at, m.id), ())?;
        }
        self.add_counts(m, 1)
    }

    /// Takes a memory out of the counted set; returns whether it was in it.
    fn unlist(&mut self, m: &Memory) -> Result<bool> {
        if let Some(at) = m.expires_at {
            self.expiries.remove((m.account.as_str(), at, m.id))?;
        }
        let listed = self.timeline.remove((m.account.as_str(), m.id))?.is_some();
        if listed {
            self.add_counts(m, -1)?;
        }
        Ok(listed)
    }

    fn add_counts(&mut self, m: &Memory, delta: i64) -> Result<()> {
        let ns_key = (m.account.as_str(), m.namespace.as_str());
        let ns = self.ns_counts.get(ns_key)?.map_or(0, |v| v.value());
        match ns.saturating_add_signed(delta) {
            0 => self.ns_counts.remove(ns_key)?,
            n => self.ns_counts.insert(ns_key, n)?,
        };
        let total = self
            .account_counts
            .get(m.account.as_str())?
            .map_or(0, |v| v.value());
        match total.saturating_add_signed(delta) {
            0 => self.account_counts.remove(m.account.as_str())?,
            n => self.account_counts.insert(m.account.as_str(), n)?,
        };
        Ok(())
    }

    fn log(&mut self, m: &Memory) -> Result<()> {
        self.oplog
            .insert(self.next_seq, (m.id, m.account.as_str()))?;
        self.next_seq += 1;
        Ok(())
    }

    /// Enters a new version into the live index, and into the past's when it expires.
    fn index_upsert(&mut self, m: &Memory, embedding: Vec<f32>) -> Result<()> {
        self.log(m)?;
        if belongs_to_past(m) {
            let doc = past_doc(m, embedding.clone(), None);
            self.changes.past.push(IndexOp::Upsert(doc));
        }
        self.changes
            .live
            .push(IndexOp::Upsert(index_doc(m, embedding)));
        Ok(())
    }

    fn index_remove(&mut self, m: &Memory) -> Result<()> {
        self.log(m)?;
        self.changes.live.push(remove_op(m));
        Ok(())
    }

    /// Moves a version whose life ended (deleted, or replaced at `superseded`) from the
    /// live indexes to the past's, with its stored embedding.
    fn leave_live(&mut self, m: &Memory, superseded: Option<u64>) -> Result<()> {
        self.index_remove(m)?;
        if let Some(embedding) = self.embeddings.get(m.id)? {
            let doc = past_doc(m, decode_embedding(embedding.value()), superseded);
            self.changes.past.push(IndexOp::Upsert(doc));
        }
        Ok(())
    }

    /// Takes a version removed for good out of the index of the past.
    fn past_remove(&mut self, m: &Memory) -> Result<()> {
        self.log(m)?;
        self.changes.past.push(remove_op(m));
        Ok(())
    }
}

fn remove_op(m: &Memory) -> IndexOp {
    IndexOp::Remove {
        id: m.id,
        account: m.account.clone(),
    }
}
