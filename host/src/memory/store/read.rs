//! Consistent reads of the memory tables: each `Reader` is one redb read transaction, a
//! snapshot that concurrent writes never disturb.

use redb::{ReadOnlyTable, ReadTransaction, ReadableTable};

use super::{
    ACCOUNT_COUNTS, EMBEDDINGS, EXPIRIES, HEADS, MEMORIES, META, NS_COUNTS, OPLOG, OPLOG_FLOOR,
    TIMELINE, decode_embedding, load,
};
use crate::memory::{Result, backend::ListPage, record::Memory};

/// Ids changed after a watermark, with their accounts, and the last oplog seq seen.
pub type OplogTail = (Vec<(u64, String)>, u64);

/// A snapshot of the memory tables.
pub struct Reader {
    pub(super) txn: ReadTransaction,
    pub(super) memories: ReadOnlyTable<u64, &'static [u8]>,
}

impl Reader {
    /// Starts a snapshot.
    pub fn new(db: &redb::Database) -> Result<Self> {
        use redb::ReadableDatabase;
        let txn = db.begin_read()?;
        let memories = txn.open_table(MEMORIES)?;
        Ok(Self { txn, memories })
    }

    /// One row by internal id.
    pub fn memory(&self, id: u64) -> Result<Option<Memory>> {
        load(&self.memories, id)
    }

    /// The stored embedding of a version.
    pub fn embedding(&self, id: u64) -> Result<Option<Vec<f32>>> {
        let table = self.txn.open_table(EMBEDDINGS)?;
        Ok(table.get(id)?.map(|b| decode_embedding(b.value())))
    }

    /// The version that superseded `m`: found down its key's chain from the head (which
    /// the versions kept per key bound); `None` when `m` is the head or its chain is gone.
    pub fn successor(&self, m: &Memory) -> Result<Option<Memory>> {
        let heads = self.txn.open_table(HEADS)?;
        let key = (m.account.as_str(), m.namespace.as_str(), m.key.as_str());
        let mut next = heads.get(key)?.map(|v| v.value());
        let mut newer = None;
        while let Some(id) = next {
            if id == m.id {
                return Ok(newer);
            }
            let Some(version) = self.memory(id)? else {
                break;
            };
            next = version.previous;
            newer = Some(version);
        }
        Ok(None)
    }

    /// The live memory at (namespace, key), if any.
    pub fn live(
        &self,
        account: &str,
        namespace: &str,
        key: &str,
        now: u64,
    ) -> Result<Option<Memory>> {
        let heads = self.txn.open_table(HEADS)?;
        let Some(id) = heads.get((account, namespace, key))?.map(|v| v.value()) else {
            return Ok(None);
        };
        Ok(self.memory(id)?.filter(|m| m.is_live(now)))
    }

    /// At most `limit` versions of (namespace, key), newest first, older than version
    /// `before` when given (one of another memory's gives an empty page): the chain is
    /// walked from there, never from the head.
    pub fn history(
        &self,
        account: &str,
        namespace: &str,
        key: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<ListPage> {
        let mut next = match before {
            None => {
                let heads = self.txn.open_table(HEADS)?;
                heads.get((account, namespace, key))?.map(|v| v.value())
            }
            Some(id) => self.memory(id)?.and_then(|m| {
                let same = m.account == account && m.namespace == namespace && m.key == key;
                same.then_some(m.previous).flatten()
            }),
        };
        let mut memories = Vec::new();
        while let Some(id) = next {
            let Some(m) = self.memory(id)? else { break };
            if memories.len() == limit {
                let next_before = memories.last().map(|m: &Memory| m.id);
                return Ok(ListPage {
                    memories,
                    next_before,
                });
            }
            next = m.previous;
            memories.push(m);
        }
        Ok(ListPage {
            memories,
            next_before: None,
        })
    }

    /// Every version of `account` (in `namespace` when given) live at `at`, oldest first,
    /// with its embedding when `embeddings`: each key's chain walked from its head down to
    /// the newest version written by `at`.
    pub fn versions_at(
        &self,
        account: &str,
        namespace: Option<&str>,
        at: u64,
        embeddings: bool,
    ) -> Result<Vec<(Memory, Option<Vec<f32>>)>> {
        let heads = self.txn.open_table(HEADS)?;
        let mut found = Vec::new();
        for entry in heads.range((account, namespace.unwrap_or(""), "")..)? {
            let (k, head) = entry?;
            let (acct, ns, _) = k.value();
            if acct != account || namespace.is_some_and(|n| n != ns) {
                break;
            }
            let (mut next, mut version) = (Some(head.value()), None);
            while let Some(id) = next {
                let Some(m) = self.memory(id)? else { break };
                if m.updated_at <= at {
                    version = Some(m);
                    break;
                }
                next = m.previous;
            }
            if let Some(version) = version.filter(|m| m.was_live_at(at)) {
                let embedding = match embeddings {
                    true => self.embedding(version.id)?,
                    false => None,
                };
                found.push((version, embedding));
            }
        }
        found.sort_unstable_by_key(|(m, _)| m.id);
        Ok(found)
    }

    /// Live memories of `account` newest first, filtered by `keep`, starting below
    /// `before`; at most `limit`.
    pub fn list(
        &self,
        account: &str,
        before: Option<u64>,
        limit: usize,
        now: u64,
        keep: impl Fn(&Memory) -> bool,
    ) -> Result<ListPage> {
        let timeline = self.txn.open_table(TIMELINE)?;
        let upper = before.unwrap_or(u64::MAX);
        let mut memories = Vec::new();
        for entry in timeline.range((account, 0)..(account, upper))?.rev() {
            let (k, _) = entry?;
            let Some(m) = self.memory(k.value().1)? else {
                continue;
            };
            if !m.is_live(now) || !keep(&m) {
                continue;
            }
            if memories.len() == limit {
                let next_before = memories.last().map(|m: &Memory| m.id);
                return Ok(ListPage {
                    memories,
                    next_before,
                });
            }
            memories.push(m);
        }
        Ok(ListPage {
            memories,
            next_before: None,
        })
    }

    /// Every live memory of `account` oldest first, filtered by `keep`.
    pub fn all_live(
        &self,
        account: &str,
        now: u64,
        keep: impl Fn(&Memory) -> bool,
    ) -> Result<Vec<Memory>> {
        let mut page = self.list(account, None, usize::MAX, now, keep)?;
        page.memories.reverse();
        Ok(page.memories)
    }

    /// (namespace, live count) of `account`, by namespace name.
    pub fn namespaces(&self, account: &str) -> Result<Vec<(String, u64)>> {
        let counts = self.txn.open_table(NS_COUNTS)?;
        let mut out = Vec::new();
        for entry in counts.range((account, "")..)? {
            let (k, v) = entry?;
            let (acct, ns) = k.value();
            if acct != account {
                break;
            }
            out.push((ns.to_string(), v.value()));
        }
        Ok(out)
    }

    /// (account, counted memories) of every account with any: the quota's "used".
    pub fn account_counts(&self) -> Result<Vec<(String, u64)>> {
        let counts = self.txn.open_table(ACCOUNT_COUNTS)?;
        let mut out = Vec::new();
        for entry in counts.iter()? {
            let (account, count) = entry?;
            out.push((account.value().to_string(), count.value()));
        }
        Ok(out)
    }

    /// Whether `account` has memories whose expiry has passed but are still counted.
    pub fn has_due_expiries(&self, account: &str, now: u64) -> Result<bool> {
        let expiries = self.txn.open_table(EXPIRIES)?;
        Ok(expiries
            .range((account, 0, 0)..=(account, now, u64::MAX))?
            .next()
            .is_some())
    }

    /// Distinct (id, account) changed after oplog seq `after`, with the last seq seen;
    /// `None` when entries after `after` were already truncated (a full rebuild is needed).
    pub fn oplog_after(&self, after: u64) -> Result<Option<OplogTail>> {
        let meta = self.txn.open_table(META)?;
        let floor = meta.get(OPLOG_FLOOR)?.map_or(0, |v| v.value());
        if after < floor {
            return Ok(None);
        }
        let oplog = self.txn.open_table(OPLOG)?;
        let mut seen = std::collections::BTreeMap::new();
        let mut last = after;
        for entry in oplog.range(after + 1..)? {
            let (seq, v) = entry?;
            let (id, account) = v.value();
            seen.insert(id, account.to_string());
            last = seq.value();
        }
        Ok(Some((seen.into_iter().collect(), last)))
    }

    /// The highest oplog seq ever written (0 when none).
    pub fn last_seq(&self) -> Result<u64> {
        let meta = self.txn.open_table(META)?;
        Ok(meta.get(super::NEXT_SEQ)?.map_or(1, |v| v.value()) - 1)
    }

    /// Ids of every version of every account, live or not (for a full rebuild of the
    /// index of the past).
    pub fn all_ids(&self) -> Result<Vec<u64>> {
        self.memories
            .iter()?
            .map(|e| e.map(|(k, _)| k.value()).map_err(Into::into))
            .collect()
    }

    /// Ids of every counted memory of every account (for a full index rebuild).
    pub fn all_counted_ids(&self) -> Result<Vec<u64>> {
        let timeline: ReadOnlyTable<(&str, u64), ()> = self.txn.open_table(TIMELINE)?;
        timeline
            .iter()?
            .map(|e| e.map(|(k, _)| k.value().1).map_err(Into::into))
            .collect()
    }
}
