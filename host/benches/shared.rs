//! What every bench binary needs alike: where the embedding model is, and the HTTP client
//! the HTTP benches drive the server with. Included by each bench with `#[path]` (bench
//! binaries are separate crates and cannot share a module otherwise).

// Each bench uses only some of these (the embed bench has no server to call).
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

/// The model directory: `WASMIND_MODEL_DIR`, else `models/all-MiniLM-L6-v2` at the workspace root.
pub fn model_dir() -> PathBuf {
    let dir = std::env::var_os("WASMIND_MODEL_DIR").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../models/all-MiniLM-L6-v2"
            ))
        },
        PathBuf::from,
    );
    dir.canonicalize()
        .unwrap_or_else(|e| panic!("model dir {}: {e} (run scripts/setup)", dir.display()))
}

/// A blocking HTTP/1.1 client keeping one connection alive (TCP_NODELAY, no proxy), so
/// each request measures the server, not connection set-up.
pub fn keep_alive_client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .no_proxy()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(1)
        .timeout(Duration::from_secs(120))
        .build()
        .expect("http client")
}
