//! End-to-end tests: the real `wasmind` binary (built by cargo for this run,
//! `CARGO_BIN_EXE_wasmind`) on a loopback port with a temp data dir,
//! driven over HTTP. One test binary (faster links), one module per area.

mod common;

mod agent_tools;
mod agents;
mod anthropic;
mod artifacts;
mod authoring;
mod billing;
mod budgets;
mod cli;
mod cli_remote;
mod cluster;
mod components;
mod console;
mod console_browser;
mod consolidate;
mod docs;
mod durable;
mod egress;
mod envelope;
mod external_agents;
mod fair_cpu;
mod fair_memory;
mod guests;
mod hibernation;
mod hostile;
mod http;
mod isolation;
mod mcp;
mod memory_crud;
mod memory_modes;
mod memory_provenance;
mod memory_search;
mod memory_time;
mod metrics;
mod modes;
mod openapi;
mod operator;
mod persistence;
mod postgres_cli;
mod python_agents;
mod quota;
mod reembed;
mod shutdown;
mod tools;
mod transfer;
mod typescript_agents;
