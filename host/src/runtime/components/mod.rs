//! Tenants' own agent components: uploaded, validated and precompiled once, kept per
//! account by name and version, and run by a spawn that names one.
//!
//! An upload is checked before anything is stored (a component, not a core module; it
//! compiles; every import is one the sandbox offers; it exports `run`), then its bytes
//! and metadata are stored (`store`): in the data dir, bytes content-addressed in files
//! (`blobs`) beside metadata in redb (`embedded`), or both in PostgreSQL (`postgres`).
//! Identical bytes are compiled once per node whoever uploaded them, by the same code path
//! whoever came first, and every upload of them answers no sooner than the first, so no
//! account can tell another uploaded them. A spawn loads the node's precompiled artifact
//! into a bounded cache of linked components (`cache`); a node that has none (another node
//! took the upload) compiles the stored bytes once.

mod blobs;
mod cache;
mod calls;
mod embedded;
mod names;
mod ops;
mod postgres;
mod store;
#[cfg(test)]
mod tests;

pub use names::{ID_PREFIX, MAX_NAME_CHARS, MAX_VERSION_CHARS, VERSION_PATTERN};
pub(super) use ops::Components;
pub use ops::{Upload, UploadError};
pub use store::ComponentRecord;
