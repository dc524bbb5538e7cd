//! The embedded backend's side of a re-embedding: reads of the rows, and writes through
//! the single writer, so each batch of side vectors and its position commit together, in
//! turn with the puts.

use async_trait::async_trait;

use super::Embedded;
use crate::memory::{
    Result,
    reembed::{ReembedStore, Standing},
    writer::{SYSTEM, Turn},
};

#[async_trait]
impl ReembedStore for Embedded {
    async fn standing(&self) -> Result<Standing> {
        self.blocking(|this| this.read(|r, _| r.standing())).await
    }

    async fn values_after(&self, position: u64, limit: usize) -> Result<Vec<(u64, String)>> {
        self.blocking(move |this| this.read(|r, _| r.values_after(position, limit)))
            .await
    }

    async fn store_next(&self, vectors: Vec<(u64, Vec<f32>)>, position: u64) -> Result<()> {
        let turn = Turn::bulk(SYSTEM, vectors.len());
        (self.writer)
            .run(turn, move |b| b.store_next(&vectors, position))
            .await
    }

    /// The vector indexes are emptied durably before the flip commits, and rebuilt on the
    /// writer thread once it has (or failed), before any other write: whenever the process
    /// dies, the next start rebuilds them from whichever vectors the rows hold.
    async fn flip(&self) -> Result<String> {
        let (indexes, rebuilt, db) = (self.indexes.clone(), self.indexes.clone(), self.db.clone());
        let flip = move |b: &mut crate::memory::store::Batch<'_>| {
            indexes.clear_vectors()?;
            b.flip_next()
        };
        let rebuild = move |outcome: Result<(String, u64)>| {
            if let Err(e) = rebuilt.rebuild_vectors(&db) {
                tracing::error!(error = %e, "rebuilding the vector indexes failed; the next start rebuilds them");
            }
            outcome
        };
        let (identity, vectors) = (self.writer)
            .run_then(Turn::interactive(SYSTEM), flip, rebuild)
            .await?;
        tracing::info!(%identity, vectors, "re-embedded: the new vectors serve");
        Ok(identity)
    }
}
