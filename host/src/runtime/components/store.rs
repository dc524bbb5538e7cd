//! What is kept of a tenant's components, behind [`ComponentBackend`]: their metadata and
//! bytes, embedded (redb and files in the data dir) or in PostgreSQL (shared by every
//! node). Every operation is scoped by account; each change commits whole or not at all.

use async_trait::async_trait;
use semver::Version;
use serde::{Deserialize, Serialize};

pub use crate::storage::StoreError;

/// One uploaded component of one account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentRecord {
    pub component_id: String,
    pub account: String,
    pub name: String,
    pub version: String,
    /// SHA-256 of the bytes, lowercase hex.
    pub sha256: String,
    /// Size of the bytes.
    pub size: u64,
    /// Epoch milliseconds.
    pub created_at: u64,
    /// Position in the account's list (newest has the highest).
    pub seq: u64,
}

/// Why a component was not stored.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// The account has a component of that name and version.
    #[error("a component with that name and version exists")]
    Exists,
    /// The account has `max` components.
    #[error("the account has its {max} components")]
    Quota { max: u32 },
    #[error(transparent)]
    Storage(#[from] StoreError),
}

crate::storage::storage_errors_into!(CreateError);

pub type Result<T> = std::result::Result<T, StoreError>;

/// Where components are kept.
#[async_trait]
pub trait ComponentBackend: Send + Sync {
    /// Stores `record` and its `bytes` (durably, the bytes before the metadata that names
    /// them), assigning its list position, unless the account has that name and version
    /// or `max` components. The first validation of these bytes, if this is it, took
    /// `validation_us`.
    async fn create(
        &self,
        record: ComponentRecord,
        bytes: Vec<u8>,
        max: u32,
        validation_us: u64,
    ) -> std::result::Result<ComponentRecord, CreateError>;

    /// The component `id` if it belongs to `account`.
    async fn get(&self, account: &str, id: &str) -> Result<Option<ComponentRecord>>;

    /// The account's component `spec` names: an id (or, failing that, a name starting
    /// like one), a name's newest version by semver precedence ([`newest`]), or one
    /// version.
    async fn resolve(&self, account: &str, spec: &str) -> Result<Option<ComponentRecord>>;

    /// Up to `limit` of the account's components newest first, below list position
    /// `before`; also the position to continue from when more remain.
    async fn list(
        &self,
        account: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<ComponentRecord>, Option<u64>)>;

    /// Removes the account's component `id` (durably); returns it and whether no
    /// component of any account has its bytes any more (so this node's compiled artifact
    /// of them may go).
    async fn delete(&self, account: &str, id: &str) -> Result<Option<(ComponentRecord, bool)>>;

    /// How many components the account has.
    async fn count(&self, account: &str) -> Result<usize>;

    /// How long the first validation of the bytes of digest `sha256` took (µs), if any
    /// component has them.
    async fn validation_us(&self, sha256: &str) -> Result<Option<u64>>;

    /// Whether any component of any account has the bytes of digest `sha256`.
    async fn referenced(&self, sha256: &str) -> Result<bool>;

    /// The bytes of the account's components of digest `sha256`, if it has any.
    async fn bytes(&self, account: &str, sha256: &str) -> Result<Option<Vec<u8>>>;
}

/// Of `versions` (version, item), the item of the highest semver; versions that do not
/// parse are passed over.
pub fn newest<T>(versions: impl IntoIterator<Item = (String, T)>) -> Option<T> {
    versions
        .into_iter()
        .filter_map(|(v, item)| Version::parse(&v).ok().map(|v| (v, item)))
        .max_by(|(a, _), (b, _)| a.cmp(b))
        .map(|(_, item)| item)
}
