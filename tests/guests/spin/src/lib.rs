//! Test guest `spin`: reports progress `info` "spinning", then burns CPU forever without
//! calling the host again. Only the host's epoch interruption (a stop, a deadline) ends it.

use std::hint::black_box;

use wasmind_sdk::Context;

fn run(ctx: &Context, _task: &str) -> Result<String, String> {
    ctx.progress().report("info", "spinning");
    let mut x: u64 = 1;
    loop {
        // black_box: the optimizer may neither drop the work nor prove the loop endless.
        x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
    }
}

wasmind_sdk::export_agent!(run);
