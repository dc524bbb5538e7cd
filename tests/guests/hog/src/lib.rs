//! Test guest `hog`: allocates and touches memory without bound, 1 MiB at a time, until
//! the host's memory limit makes an allocation fail (the guest then aborts).

use std::hint::black_box;

use wasmind_sdk::Context;

const CHUNK: usize = 1 << 20;

fn run(ctx: &Context, _task: &str) -> Result<String, String> {
    ctx.progress().report("info", "allocating");
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        // Touch every page so the memory is really used, and keep it all reachable.
        let mut chunk = vec![0u8; CHUNK];
        for page in chunk.chunks_mut(4096) {
            page[0] = hoard.len() as u8 | 1;
        }
        hoard.push(black_box(chunk));
    }
}

wasmind_sdk::export_agent!(run);
