//! The one `bindgen!` of the host: Rust types and traits for `guest-sdk/wit/agent.wit`. Every import
//! is async (host calls await the Mind, memory and storage) and trappable (a host fault
//! traps the guest rather than lying to it).

wasmtime::component::bindgen!({
    path: "../guest-sdk/wit",
    world: "agent",
    imports: { default: async | trappable },
    exports: { default: async },
    // Calls and results are journaled as JSON (`journal`).
    additional_derives: [serde::Serialize, serde::Deserialize],
});

pub use self::wasmind::agent::{control, memory, mind, progress, tools};
