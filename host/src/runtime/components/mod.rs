//! Tenants' own agent components: uploaded, validated and precompiled once, kept per
//! account by name and version, and run by a spawn that names one.
//!
//! An upload is checked before anything is stored (a component, not a core module; it
//! compiles; every import is one the sandbox offers; it exports `run`), then its bytes are
//! written content-addressed (`blobs`) and its metadata committed (`store`). Identical
//! bytes are stored and compiled once across accounts, by the same code path whoever came
//! first, so no account can tell another uploaded them. A spawn loads the precompiled
//! artifact into a bounded cache of linked components (`cache`), never compiling.

mod blobs;
mod cache;
mod calls;
mod names;
mod ops;
mod store;

pub use names::{ID_PREFIX, MAX_NAME_CHARS, MAX_VERSION_CHARS, VERSION_PATTERN};
pub(super) use ops::Components;
pub use ops::{Upload, UploadError};
pub use store::ComponentRecord;
