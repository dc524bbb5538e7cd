//! Derived search indexes over memories: BM25 keyword search (tantivy) and vector
//! similarity search (usearch HNSW, one graph per account). The store keeps two of each
//! pair (`derived.rs`): one of the live versions, and one of the past (the versions that
//! were superseded, deleted or have an expiry, each with the instants its life began and
//! ended), so an `as_of` search asks indexes instead of scanning every version.
//!
//! redb is the source of truth; everything here can be rebuilt from it. Each index
//! records a *watermark* — the highest oplog sequence number it holds durably — so a
//! restart only replays the oplog tail after it instead of re-indexing everything.
//! Every search is restricted to one account *inside* the index (account-prefixed terms in
//! tantivy, a separate graph per account in usearch), never by filtering a global result
//! list; namespace, tag, expiry and write-time filters are likewise applied while candidates
//! are scored.

mod keyword;
mod vector;

#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod perf_tests;
#[cfg(test)]
mod test_support;

pub use keyword::{KeywordIndex, index_terms, query_terms};
pub use vector::VectorIndex;

/// One live memory as the indexes see it.
///
/// The store builds it from its redb record; the indexes keep only what they need to
/// rank (key, value, embedding) and to filter (account, namespace, tags, expiry).
#[derive(Debug, Clone, PartialEq)]
pub struct IndexDoc {
    /// Globally unique, monotonically assigned memory-version id; the key in both indexes.
    pub id: u64,
    /// Owning tenant; searches never cross accounts.
    pub account: String,
    /// Namespace inside the account, matched exactly by [`SearchFilter::namespace`].
    pub namespace: String,
    /// The memory's key, searched as text alongside the value.
    pub key: String,
    /// The memory's content.
    pub value: String,
    /// Labels matched exactly by [`SearchFilter::tags`].
    pub tags: Vec<String>,
    /// Epoch milliseconds after which the memory is no longer returned; `None` = never.
    /// In the index of the past, the end of the version's life: when it expired, was
    /// deleted or was superseded, whichever came first.
    pub expires_at: Option<u64>,
    /// When the version was written (epoch ms): an `as_of` search skips later ones.
    pub written_at: u64,
    /// Unit-length embedding of the memory, `dims` long.
    pub embedding: Vec<f32>,
}

/// One change to the indexes, taken from the store's oplog.
#[derive(Debug, Clone, PartialEq)]
pub enum IndexOp {
    /// Adds the doc, replacing any doc with the same id.
    Upsert(IndexDoc),
    /// Removes the doc with this id (a no-op when absent). The account tells the vector
    /// index which per-account graph holds it.
    Remove {
        /// Id of the doc to remove.
        id: u64,
        /// Account that owns the doc.
        account: String,
    },
}

/// What every search is restricted to; applied inside the index, never afterwards.
#[derive(Debug, Clone, Copy)]
pub struct SearchFilter<'a> {
    /// Only docs of this account are considered.
    pub account: &'a str,
    /// When set, only docs in exactly this namespace.
    pub namespace: Option<&'a str>,
    /// Docs must carry every one of these tags (AND); empty = no tag restriction.
    pub tags: &'a [String],
    /// Current time in epoch ms: docs with `expires_at <= now_ms` are excluded.
    pub now_ms: u64,
    /// Docs written after this instant are excluded: an `as_of` search's instant (then
    /// `now_ms` is that instant too), [`LATEST`] for a search of now.
    pub written_by: u64,
}

/// [`SearchFilter::written_by`] of a search of now: no doc is too new.
pub const LATEST: u64 = u64::MAX;

/// Why an index operation failed.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// Reading or writing index files failed.
    #[error("index i/o: {0}")]
    Io(#[from] std::io::Error),
    /// tantivy reported an error (corrupt files, writer failure, ...).
    #[error("keyword index: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    /// usearch reported an error (allocation failure, corrupt file, ...).
    #[error("vector index: {0}")]
    Vector(String),
    /// A persisted file exists but cannot be understood; rebuild the index from the store.
    #[error("corrupt index file {path}: {reason}")]
    Corrupt {
        /// The offending file.
        path: std::path::PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// An embedding or query vector does not have the index's dimension count.
    #[error("vector has {got} dimensions, index expects {expected}")]
    Dimensions {
        /// The index's dimension count.
        expected: usize,
        /// The length that was passed in.
        got: usize,
    },
}
