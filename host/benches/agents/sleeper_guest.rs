//! Bench guest `sleeper` (built by `host/benches/agents/guests.rs`, not part of the
//! workspace): reports progress `info` "sleeping", then sleeps forever in the WASI clock
//! (a host call that knows nothing of stop requests). Only the end of the stop grace ends it.

use wasmind_sdk::Context;

fn run(ctx: &Context, _task: &str) -> Result<String, String> {
    ctx.progress().report("info", "sleeping");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

wasmind_sdk::export_agent!(run);
