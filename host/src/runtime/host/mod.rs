//! The host side of each WIT interface, one file per interface. Guest-visible failures
//! travel as WIT `result`s; only host faults trap.

mod control;
pub mod http;
mod memory;

pub use memory::account_memory;
mod mind;
mod progress;
mod tools;
