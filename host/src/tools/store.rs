//! What is kept of a tenant's tools, behind [`ToolBackend`]: one record per tool, keyed by
//! account and name, embedded (redb, in the data dir's database) or in PostgreSQL. Every
//! operation is scoped by account; each change commits whole or not at all. A secret is
//! kept only sealed ([`super::seal`]).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::storage::StoreError;

/// One registered tool (or MCP server) of one account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRecord {
    /// Unique for every registration, so a listing made for one registration is never
    /// written onto another of the same name.
    pub id: String,
    pub account: String,
    pub name: String,
    pub description: String,
    /// The longest a call (or a listing) may take.
    pub timeout_secs: f64,
    /// Epoch milliseconds.
    pub created_at: u64,
    #[serde(flatten)]
    pub kind: ToolKind,
    /// The secret, sealed (see `seal`): an HTTP tool's header value, an MCP server's bearer.
    pub secret: Option<String>,
}

/// What kind of tool, and what calling it takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ToolKind {
    Http(HttpTool),
    Mcp(McpServer),
}

/// An endpoint called with the arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpTool {
    /// The JSON Schema of the arguments.
    pub parameters: Value,
    pub url: String,
    pub method: String,
    /// The header the secret is sent in.
    pub secret_header: Option<String>,
}

/// A remote MCP server (streamable HTTP), and its tools as last listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServer {
    pub url: String,
    /// None until first listed.
    pub listing: Option<Listing>,
}

/// An MCP server's tools as listed at one time, or why they could not be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Listing {
    /// Epoch milliseconds.
    pub listed_at: u64,
    pub tools: Vec<ListedTool>,
    /// Why the listing failed (its tools are then none).
    pub error: Option<String>,
}

/// One tool of an MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListedTool {
    /// The name agents see: `mcp_<server>_<tool>`.
    pub name: String,
    /// The server's own name for it.
    pub remote: String,
    pub description: String,
    /// Its input schema.
    pub parameters: Value,
}

/// Why a tool was not stored.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// The account has a tool of that name.
    #[error("a tool with that name exists")]
    Exists,
    /// The account has `max` tools.
    #[error("the account has its {max} tools")]
    Quota { max: u32 },
    #[error(transparent)]
    Storage(#[from] StoreError),
}

crate::storage::storage_errors_into!(CreateError);

pub type Result<T> = std::result::Result<T, StoreError>;

/// Where tools are kept.
#[async_trait]
pub trait ToolBackend: Send + Sync {
    /// Stores `record` unless the account has a tool of its name or `max` tools.
    async fn create(&self, record: ToolRecord, max: u32) -> std::result::Result<(), CreateError>;

    /// The account's tool `name`.
    async fn get(&self, account: &str, name: &str) -> Result<Option<ToolRecord>>;

    /// The account's tools, by name.
    async fn list(&self, account: &str) -> Result<Vec<ToolRecord>>;

    /// Removes the account's tool `name`; returns it.
    async fn delete(&self, account: &str, name: &str) -> Result<Option<ToolRecord>>;

    /// Keeps `listing` as the tools of the account's MCP server `name`, if that is still
    /// registration `id`; returns the record as it now is.
    async fn set_listing(
        &self,
        account: &str,
        name: &str,
        id: &str,
        listing: Listing,
    ) -> Result<Option<ToolRecord>>;

    /// The ids of the keys the stored secrets were sealed with, each once.
    async fn sealing_keys(&self) -> Result<Vec<String>>;
}
