//! A fake OpenAI chat-completions server that hangs every request, run as a child process
//! (this bench binary re-executed with `WASMIND_BENCH_FAKE_MIND=1`).
//!
//! A child process, not a thread: 10,000 hanging requests are 10,000 connections, and
//! both of their ends in one process would pass the open-file limit (often 20,000); the
//! fake's memory also stays out of the server's RSS. The approach is that of
//! `tests/e2e/common/fake_mind.rs` (axum on 127.0.0.1:0), reduced to what agents need
//! to stay live inside a host call: `POST /v1/chat/completions` never answers until
//! `POST /release` (then every request is answered at once). `GET /stats` reports
//! `{ "requests", "hanging" }`. The child exits when its stdin closes (the bench ended or
//! died).

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::routing::{get, post};
use serde_json::{Value, json};

/// The environment variable that turns this binary into the fake Mind.
pub const CHILD_ENV: &str = "WASMIND_BENCH_FAKE_MIND";

#[derive(Default)]
struct Shared {
    requests: AtomicU64,
    hanging: AtomicU64,
    released: tokio::sync::watch::Sender<bool>,
}

/// Decrements `hanging` when a request ends or its connection is dropped.
struct Hanging(Arc<Shared>);

impl Drop for Hanging {
    fn drop(&mut self) {
        self.0.hanging.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn complete(State(shared): State<Arc<Shared>>, body: axum::body::Bytes) -> Json<Value> {
    drop(body);
    shared.requests.fetch_add(1, Ordering::Relaxed);
    shared.hanging.fetch_add(1, Ordering::Relaxed);
    let _guard = Hanging(shared.clone());
    let mut released = shared.released.subscribe();
    let _ = released.wait_for(|r| *r).await;
    Json(json!({
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": "fake-mind",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Done."},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    }))
}

/// The child's main: serves until stdin closes.
pub fn child_main() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding the fake Mind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let shared = Arc::new(Shared::default());
    let app = Router::new()
        .route("/v1/chat/completions", post(complete))
        .route(
            "/stats",
            get(|State(s): State<Arc<Shared>>| async move {
                Json(json!({
                    "requests": s.requests.load(Ordering::Relaxed),
                    "hanging": s.hanging.load(Ordering::Relaxed),
                }))
            }),
        )
        .route(
            "/release",
            post(|State(s): State<Arc<Shared>>| async move {
                s.released.send_replace(true);
                Json(json!({}))
            }),
        )
        .with_state(shared);
    std::thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        std::process::exit(0);
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("PORT {port}");
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
        axum::serve(listener, app).await.expect("serve");
    });
}

/// The parent's handle: the child process and its address.
pub struct FakeMind {
    child: Child,
    port: u16,
    http: reqwest::blocking::Client,
}

impl FakeMind {
    /// Starts the child and waits for its port.
    pub fn start() -> Self {
        let exe = std::env::current_exe().expect("current exe");
        let mut child = Command::new(exe)
            .env(CHILD_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting the fake Mind");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("reading the fake Mind's port");
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("fake Mind said {line:?}"));
        let http = reqwest::blocking::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client");
        Self { child, port, http }
    }

    /// `[mind] base_url`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Answers every hanging request, and every later one at once.
    pub fn release(&self) {
        self.http
            .post(format!("http://127.0.0.1:{}/release", self.port))
            .send()
            .and_then(reqwest::blocking::Response::error_for_status)
            .expect("releasing the fake Mind");
    }

    /// (requests received, requests hanging now).
    pub fn stats(&self) -> (u64, u64) {
        let v: Value = self
            .http
            .get(format!("http://127.0.0.1:{}/stats", self.port))
            .send()
            .and_then(reqwest::blocking::Response::json)
            .expect("fake Mind stats");
        (
            v["requests"].as_u64().unwrap_or(0),
            v["hanging"].as_u64().unwrap_or(0),
        )
    }
}

impl Drop for FakeMind {
    fn drop(&mut self) {
        // Closing stdin ends the child; kill it by its handle if it lingers.
        drop(self.child.stdin.take());
        std::thread::sleep(Duration::from_millis(100));
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
