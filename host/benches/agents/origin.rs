//! The `http` phase's origin: the server agents' outgoing requests reach, a child process
//! (this bench binary re-executed with `WASMIND_BENCH_ORIGIN=1`, like the fake Mind) on
//! 127.0.0.2, an address the egress door refuses unless the operator lists its range.
//!
//! A child, not a thread, so its 1,000 held connections and their buffers stay out of the
//! server's RSS. `GET /fast` answers `ok` at once; `GET /slow` is held until
//! `POST /release`, then answers `slow ok` (every later one at once); `GET /stats`
//! counts the `/slow` requests received and held.

use std::sync::Arc;

use axum::routing::get;

use crate::fake_mind::{ChildServer, Held, serve_child};

/// The environment variable that turns this binary into the origin.
pub const CHILD_ENV: &str = "WASMIND_BENCH_ORIGIN";

/// Its address: a loopback address of its own, allowed by `[egress] allow_ranges`.
pub const IP: &str = "127.0.0.2";

/// The child's main: serves until stdin closes.
pub fn child_main() {
    let held = Arc::new(Held::default());
    let app = Held::routes()
        .route("/fast", get(|| async { "ok" }))
        .route(
            "/slow",
            get(
                |axum::extract::State(held): axum::extract::State<Arc<Held>>| async move {
                    held.hold().await;
                    "slow ok"
                },
            ),
        )
        .with_state(held);
    serve_child(IP, app);
}

/// The parent's handle on the origin.
pub struct Origin(pub ChildServer);

impl Origin {
    pub fn start() -> Self {
        Self(ChildServer::start(CHILD_ENV, IP))
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{IP}:{}{path}", self.0.port)
    }
}
