//! The re-embedding's side of the memory tables. While a data dir moves to another
//! embedder, the target model's vectors wait in their own table beside the serving
//! model's, and the re-embedder's position (the highest id it has passed) is committed in
//! the same transaction as the vectors it wrote, so a crash loses nothing done and redoes
//! nothing committed. Ids grow with write order and a version's value never changes, so
//! walking ids upward finds every version, those written during the walk too. The flip
//! moves the target's vectors over the serving ones in one commit.

use redb::{ReadableTable, ReadableTableMetadata};

use super::{Batch, EMBEDDINGS, META, NEXT_EMBEDDINGS, REEMBED_POSITION, Reader, encode_embedding};
use crate::memory::{MemoryError, Result, embed, reembed::Standing};

/// Drops a re-embedding's side vectors and position, if any (it starts over, or was
/// abandoned): at open, before the writer starts. Writes nothing when there are none.
pub fn reset_next(db: &redb::Database) -> Result<()> {
    let left = Reader::new(db)?.standing()?;
    if left.position == 0 && left.done == 0 {
        return Ok(());
    }
    tracing::info!(
        vectors = left.done,
        "dropping the vectors of an abandoned re-embedding"
    );
    let txn = db.begin_write()?;
    txn.open_table(NEXT_EMBEDDINGS)?.retain(|_, _| false)?;
    txn.open_table(META)?.remove(REEMBED_POSITION)?;
    txn.commit()?;
    Ok(())
}

impl Reader {
    /// Up to `limit` versions after id `position`, in id order: (id, value).
    pub fn values_after(&self, position: u64, limit: usize) -> Result<Vec<(u64, String)>> {
        let mut out = Vec::new();
        for entry in self.memories.range(position + 1..)?.take(limit) {
            let (id, bytes) = entry?;
            let memory: crate::memory::Memory = serde_json::from_slice(bytes.value())?;
            out.push((id.value(), memory.value));
        }
        Ok(out)
    }

    /// Where the re-embedding stands.
    pub fn standing(&self) -> Result<Standing> {
        let meta = self.txn.open_table(META)?;
        Ok(Standing {
            position: meta.get(REEMBED_POSITION)?.map_or(0, |v| v.value()),
            done: self.txn.open_table(NEXT_EMBEDDINGS)?.len()?,
            total: self.txn.open_table(EMBEDDINGS)?.len()?,
        })
    }
}

impl Batch<'_> {
    /// Stores the target model's `vectors` (by id) and moves the position to `position`.
    /// A version removed for good since its value was read gets none.
    pub fn store_next(&mut self, vectors: &[(u64, Vec<f32>)], position: u64) -> Result<()> {
        let mut next = self.txn.open_table(NEXT_EMBEDDINGS)?;
        for (id, vector) in vectors {
            if self.memories.get(*id)?.is_some() {
                next.insert(*id, encode_embedding(vector).as_slice())?;
            }
        }
        self.meta.insert(REEMBED_POSITION, position)?;
        Ok(())
    }

    /// Every stored vector replaced by its target twin, the side table emptied, the
    /// position dropped and the target's identity recorded; refused, changing nothing,
    /// when a version has no twin (the walk is not done) or no re-embedding is under way.
    /// Returns the identity recorded and how many vectors were replaced.
    pub fn flip_next(&mut self) -> Result<(String, u64)> {
        let mut next = self.txn.open_table(NEXT_EMBEDDINGS)?;
        let ids: Vec<u64> = (self.embeddings.iter()?)
            .map(|e| e.map(|(id, _)| id.value()))
            .collect::<std::result::Result<_, _>>()?;
        if let Some(id) = ids.iter().find(|&&id| !matches!(next.get(id), Ok(Some(_)))) {
            return Err(MemoryError::Reembed(format!(
                "version {id} has no vector of the target model yet"
            )));
        }
        let Some(target) = embed::flip(self.txn)? else {
            return Err(MemoryError::Reembed("no re-embedding is under way".into()));
        };
        // One vector in hand at a time: a million of them would not fit.
        for &id in &ids {
            let twin = next
                .get(id)?
                .map(|v| v.value().to_vec())
                .unwrap_or_default();
            self.embeddings.insert(id, twin.as_slice())?;
        }
        next.retain(|_, _| false)?;
        self.meta.remove(REEMBED_POSITION)?;
        Ok((target, ids.len() as u64))
    }
}
