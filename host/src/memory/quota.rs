//! What an account's plan allows its memory writes: the live memories of the account (the
//! specification's memory pool) and the stored versions of each key.
//!
//! Pruning policy: a put that makes a new version of a key keeps the newest
//! `versions_per_key` versions of it, the new one included, and removes the older ones for
//! good, as hard delete removes versions (history shows the kept ones; the oldest kept no
//! longer names a previous version). Only superseded or soft-deleted versions are ever
//! removed, so pruning never changes what is live, listed, searched or counted in the
//! pool. Consolidation's summaries are written without pruning; the key's next put prunes.

/// The bounds a memory write is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// Live memories per account, across its keys and namespaces.
    pub memories: u64,
    /// Stored versions kept per (namespace, key), the latest included (at least 1).
    pub versions_per_key: u32,
}

impl Quota {
    /// `memories` live memories, every version kept: for the host's own writes and tests.
    pub fn memories(memories: u64) -> Self {
        Quota {
            memories,
            versions_per_key: u32::MAX,
        }
    }

    /// The versions to keep of a key: never fewer than the latest one.
    pub fn keep(&self) -> u32 {
        self.versions_per_key.max(1)
    }
}
