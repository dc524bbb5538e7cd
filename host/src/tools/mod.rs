//! Tools a tenant registers for its agents: HTTP endpoints, and remote MCP servers whose
//! tools the host lists (`mcp_<server>_<tool>`). Registered over REST, MCP and the console
//! (`api::tools`, `mcp::tools`), offered to agents and called by them through their
//! journal (the runtime calls [`Tools::specs`], [`Tools::resolve`] and [`Tools::send`]).
//!
//! - A registration is checked whole before anything is stored ([`define`]); the record is
//!   kept per account and name ([`store`]: redb in the data dir, or PostgreSQL), so one
//!   account never reaches another's.
//! - A secret (an HTTP tool's header value, an MCP server's bearer) is write-only: never
//!   shown, logged or journaled, and kept sealed under a key outside the data dir and the
//!   database ([`seal`]).
//! - Every call goes out through the egress door (`crate::egress`): the same allowlists,
//!   address checks, per-account places, caps and timeouts as a guest's own HTTP. An HTTP
//!   tool is one request ([`http`]); an MCP server is reached with rmcp's client on the
//!   door's client ([`mcp`]), its tool list cached in its record and listed again on
//!   demand.

mod config;
pub mod define;
mod embedded;
mod http;
mod mcp;
mod postgres;
mod seal;
mod service;
mod store;
#[cfg(test)]
mod tests;

pub use config::ToolsConfig;
pub use define::Registration;
pub use embedded::EmbeddedTools;
pub use mcp::MAX_LISTED_TOOLS;
pub use postgres::PgTools;
pub use service::{
    RefreshError, RegisterError, ToolError, ToolSpec, Tools, ToolsError, ToolsParts,
};
pub use store::{HttpTool, ListedTool, Listing, McpServer, ToolBackend, ToolKind, ToolRecord};
