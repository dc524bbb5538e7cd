//! Test guest `panicker`: reports one progress entry, then panics with a known message
//! (on wasm the panic traps; the message goes to the guest's stderr).

use wasmind_sdk::Context;

/// The panic message, for tests to look for.
pub const MESSAGE: &str = "panicker: deliberate panic for the test suite";

fn run(ctx: &Context, _task: &str) -> Result<String, String> {
    ctx.progress().report("info", "about to panic");
    panic!("{MESSAGE}");
}

wasmind_sdk::export_agent!(run);
