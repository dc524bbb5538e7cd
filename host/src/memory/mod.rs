//! Long-term memory: the operations of the memory API ([`MemoryService`]), the embedder,
//! and two storage backends behind [`MemoryBackend`]: embedded — the store (redb, the
//! source of truth, one writer thread with group commit) and the indexes derived from it
//! (tantivy keywords, usearch vectors) — and PostgreSQL with pgvector ([`PgMemory`]).
//!
//! Everything here is scoped by an account name the caller has already authenticated;
//! nothing here knows about HTTP.

mod backend;
mod config;
mod consolidate;
mod dedupe;
mod derived;
pub mod embed;
mod embedded;
mod error;
mod fair;
pub mod index;
mod input;
mod postgres;
mod put;
mod quota;
mod record;
pub mod reembed;
mod scan;
mod search;
mod service;
mod store;
mod time;
mod transfer;
mod writer;

pub use backend::{ListPage, MemoryBackend, PutOutcome, RunFence};
pub use config::MemoryConfig;
pub use consolidate::Refusal;
pub use dedupe::{DEFAULT_THRESHOLD, Pair as DedupePair};
pub use error::{MemoryError, Result};
pub use fair::Class;
pub use input::{
    DEFAULT_IMPORTANCE, DEFAULT_NAMESPACE, MAX_KEY_CHARS, MAX_NAMESPACE_CHARS, MAX_TAG_CHARS,
    MAX_TAGS, MAX_VALUE_CHARS, MemoryDraft, PutInput, optional_namespace, optional_unit,
    validate_key, validate_namespace, validate_tags,
};
pub use postgres::PgMemory;
pub use quota::Quota;
pub use record::{Door, Memory, Provenance, Source};
pub use search::{Breakdown, DEFAULT_LIMIT, Fusion, MAX_LIMIT, Mode, SearchHit, SearchQuery};
pub use service::{
    ClusterOutcome, ConsolidateQuery, ConsolidateReport, DedupeReport, Deleted, ListQuery,
    MemoryService,
};
pub use time::TimeFilter;
pub use transfer::{ImportItem, ImportReport, ItemError, Rejected};
