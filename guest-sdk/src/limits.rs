//! The memory limits and defaults of the specification (§2.1, §4.4, §8). The host enforces
//! them; they are here so an agent can stay inside them (e.g. truncate a value before a
//! put). They come from the rules crate the host itself uses, so they cannot differ.

pub use wasmind_rules::limits::*;
