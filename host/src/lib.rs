//! wasmind hosts many tenants' AI agents and their long-term memory in one program.
//!
//! Users reach it over a JSON REST API (`api`), MCP (`mcp`) and a web console, each a door
//! onto the same application layer (`app`), authenticated by API keys that belong to
//! accounts (`accounts`). Each account's memories live in redb with derived keyword and
//! vector indexes (`memory`). Agents are WebAssembly components run in wasmtime sandboxes
//! (`runtime`) that think with a reasoning model (`mind`) and call the tools their tenant
//! registered (`tools`) through the egress door (`egress`). The operator runs it with the
//! `wasmind` CLI (`cli`), whose key, account and usage commands reach a running server over
//! the data dir's owner-only admin socket (`admin`), so they never need it stopped; load
//! balancers ask `/healthz` and `/readyz` (`health`).
//!
//! ```no_run
//! // What `wasmind serve` does:
//! let env = std::collections::BTreeMap::new();
//! wasmind::server::serve("./wasmind-data".as_ref(), "127.0.0.1:8080".parse()?, None, &env)?;
//! # anyhow::Ok(())
//! ```

pub mod accounts;
pub mod admin;
pub mod api;
pub mod app;
pub mod billing;
mod blocking;
pub mod cli;
mod clock;
pub mod config;
pub mod console;
pub mod data_dir;
pub mod egress;
pub mod health;
mod home;
mod id;
mod invalid;
mod logging;
pub mod mcp;
pub mod memory;
pub mod metrics;
pub mod mind;
mod object;
mod places;
mod priority;
mod private_file;
pub mod runtime;
mod secret;
pub mod server;
pub mod storage;
#[cfg(test)]
#[path = "../tests/support/postgres.rs"]
// Sharing a server across tests and restarting one are the end-to-end tests' needs.
#[allow(dead_code)]
mod test_postgres;
mod text;
pub mod tools;
