//! Write wasmind agents in plain Rust.
//!
//! An agent is a function `fn(&Context, &str) -> Result<String, String>`: it receives its
//! task (the user's message) and returns its final answer, or why it could not produce one.
//! Everything it can do beyond computing goes through the [`Context`]: the [`Mind`] (chat
//! completion with tool calls), the account's long-term [`Memory`], the [`Tools`] the
//! account registered, [`Progress`] reports and log events, and
//! [`Context::stop_requested`]. Outgoing HTTP is `wasi:http`, which the host sends under the
//! account's egress policy: [`Context::http`] speaks it in the `http` crate's types (and
//! to a test double natively), and any client over `wasi:http` (`wstd`) works too. [`export_agent!`] turns the function
//! into the component's `run` export.
//!
//! The five memory tools of the specification (`service_memory_put` …) are ready to offer
//! to the Mind ([`memory_tools`], [`call_memory_tool`]), and [`ToolLoop`] is a complete
//! tool-calling loop over them and any tools of the author's ([`ToolLoop::tool`]).
//!
//! Compiled for `wasm32`, the context talks to the host through the WIT imports of
//! `wasmind:agent`. Compiled natively (for `cargo test`), the same API runs against the
//! in-process doubles of [`testing`], so an agent's logic is unit-tested without wasm.
//!
//! # Examples
//!
//! A complete agent, and its test:
//!
//! ```
//! use wasmind_sdk::{Context, ToolLoop};
//!
//! fn run(ctx: &Context, task: &str) -> Result<String, String> {
//!     ToolLoop::new("You are a helpful assistant with a long-term memory.").run(ctx, task)
//! }
//!
//! wasmind_sdk::export_agent!(run);
//!
//! # use wasmind_sdk::{Completion, testing::{ScriptedMind, TestContext}};
//! let t = TestContext::new(ScriptedMind::new([Completion::text("Hello!")]));
//! assert_eq!(run(t.ctx(), "Say hello"), Ok("Hello!".to_string()));
//! ```

mod context;
mod http;
pub mod limits;
mod memory;
mod mind;
mod progress;
mod registered;
mod tool_loop;
mod tools;

#[cfg(target_arch = "wasm32")]
mod host;
#[cfg(not(target_arch = "wasm32"))]
pub mod testing;

/// The generated bindings of the WIT world `wasmind:agent/agent`. Not a stable API: use the
/// types of this crate.
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
#[allow(unsafe_code)] // wit-bindgen's generated glue (canonical ABI lifting/lowering) is unsafe
pub mod wit {
    wit_bindgen::generate!({
        path: "wit",
        world: "agent",
        pub_export_macro: true,
        export_macro_name: "export",
        default_bindings_module: "wasmind_sdk::wit",
    });
}

pub use context::Context;
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub use context::run_exported;
pub use http::{Http, HttpError};
pub use memory::{
    Breakdown, ListRequest, Memory, MemoryBackend, MemoryError, MemoryRecord, PutRequest,
    PutResult, SearchHit, SearchRequest,
};
pub use mind::{Completion, Message, Mind, MindError, Role, ToolCall, ToolSpec, Usage};
pub use progress::{LogKind, Progress};
pub use registered::{ToolError, Tools};
pub use tool_loop::ToolLoop;
pub use tools::{
    MEMORY_TOOL_NAMES, call_memory_tool, is_memory_tool, memory_tools, run_memory_tool,
};

/// The README's examples, compiled as doctests so they stay true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
