//! What every bench binary needs alike: where the embedding model is, and the HTTP client
//! the HTTP benches drive the server with. Included by each bench with `#[path]` (bench
//! binaries are separate crates and cannot share a module otherwise).

// Each bench uses only some of these (the embed bench has no server to call).
#![allow(dead_code)]

use std::net::IpAddr;
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
    client(1, None)
}

/// [`keep_alive_client`] (`kept`), or one that keeps no connection: each request connects
/// anew (one such client serves every request — building a client loads the system's root
/// certificates and starts a thread, tens of milliseconds of CPU beside the server's). Its
/// connections come from `source` when given: a loopback address of its own (every 127/8
/// address is this host's), so the server tells it from a load on 127.0.0.1.
pub fn client_from(source: Option<IpAddr>, kept: bool) -> reqwest::blocking::Client {
    client(usize::from(kept), source)
}

fn client(idle_connections: usize, source: Option<IpAddr>) -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .local_address(source)
        .no_proxy()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(idle_connections)
        .timeout(Duration::from_secs(120))
        .build()
        .expect("http client")
}
