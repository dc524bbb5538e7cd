//! Re-embedding a store with another embedder while it serves: the recorded model keeps
//! embedding puts and queries, and searches keep reading its vectors, while the target
//! model embeds every stored version into a side store, in id order, each batch committed
//! with the position it reached (a kill midway loses nothing committed). A put during the
//! walk gets a higher id than any walked, so the walk finds it too: writers embed once,
//! with the serving model, and the walk's last pass takes what they wrote. The flip — the
//! last pass, the target's vectors over the serving ones, the vector indexes rebuilt, the
//! new identity recorded, in one commit — runs with no write or search between its
//! embedding and its store call ([`MemoryService`](super::MemoryService) holds them off
//! for it), so none ever pairs one model's query or vector with the other's.

mod progress;

use std::time::Duration;

use async_trait::async_trait;

pub use progress::{Progress, ReembedReport, ReembedState};

use super::{Class, Result, embed::EmbedService};

/// Versions embedded and committed at a time: the writer takes a put between two.
pub const BATCH: usize = 32;

/// What the background re-embedder waits before it tries again after a failure.
const RETRY: Duration = Duration::from_secs(5);

/// The queue the re-embedding's texts and writes wait in (the writer's upkeep's).
const ACCOUNT: &str = super::writer::SYSTEM;

/// How far a re-embedding has come.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Standing {
    /// The highest id re-embedded (0 before the first).
    pub position: u64,
    /// Versions with a vector of the target model.
    pub done: u64,
    /// Versions with a vector (of the serving model).
    pub total: u64,
}

/// The store's side of a re-embedding (the embedded backend's: see `store::next`).
#[async_trait]
pub trait ReembedStore: Send + Sync {
    /// Where it stands.
    async fn standing(&self) -> Result<Standing>;
    /// Up to `limit` versions after id `position`, in id order: (id, value).
    async fn values_after(&self, position: u64, limit: usize) -> Result<Vec<(u64, String)>>;
    /// Stores the target's `vectors` and the new `position` in one commit.
    async fn store_next(&self, vectors: Vec<(u64, Vec<f32>)>, position: u64) -> Result<()>;
    /// The flip: every version's vector the target's, the vector indexes rebuilt from
    /// them, the target's identity recorded. Returns that identity.
    async fn flip(&self) -> Result<String>;
}

/// A re-embedding asked for: the target model's service and how it is reported.
pub struct Upgrade {
    /// Embeds the versions now; serves everything after the flip.
    pub target: EmbedService,
    /// Whether it starts over (side vectors of another target are dropped).
    pub fresh: bool,
    pub progress: std::sync::Arc<Progress>,
}

/// Walks the versions after the committed position until none is left, embedding each
/// batch with `target` and committing it: the walk's part outside the flip, and its last
/// pass inside. Returns how many versions it embedded.
pub async fn walk(
    store: &dyn ReembedStore,
    target: &EmbedService,
    progress: &Progress,
) -> Result<u64> {
    let mut position = store.standing().await?.position;
    let mut embedded = 0;
    loop {
        let rows = store.values_after(position, BATCH).await?;
        let Some(&(last, _)) = rows.last() else {
            return Ok(embedded);
        };
        let (ids, values): (Vec<u64>, Vec<String>) = rows.into_iter().unzip();
        let vectors = (target.embed_documents(ACCOUNT, Class::Bulk, values)).await?;
        embedded += ids.len() as u64;
        store
            .store_next(ids.into_iter().zip(vectors).collect(), last)
            .await?;
        position = last;
        progress.stood(store.standing().await?);
    }
}

/// Waits out a failed step before the next try; says so in the log and the report.
pub async fn pause(progress: &Progress, error: &super::MemoryError) {
    tracing::error!(error = %error, "re-embedding failed; trying again in {RETRY:?}");
    progress.failed(error);
    tokio::time::sleep(RETRY).await;
}

#[cfg(test)]
mod tests;
