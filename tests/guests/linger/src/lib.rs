//! Test guest `linger`: reports progress `info` "lingering", waits for a stop request, then
//! ignores it and keeps working: a progress entry "still working N" every 100 ms, forever.
//! Only the host dropping its store after the grace ends it, so the entries show how long
//! the store lived after the stop.

use std::time::Duration;

use wasmind_sdk::Context;

const TICK: Duration = Duration::from_millis(100);

fn run(ctx: &Context, _task: &str) -> Result<String, String> {
    ctx.progress().report("info", "lingering");
    while !ctx.stop_requested() {
        std::thread::sleep(TICK);
    }
    let mut n: u64 = 0;
    loop {
        n += 1;
        ctx.progress().report("info", &format!("still working {n}"));
        std::thread::sleep(TICK);
    }
}

wasmind_sdk::export_agent!(run);
