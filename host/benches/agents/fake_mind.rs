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
//! died). The `http` phase's origin (`origin.rs`) is such a child too ([`ChildServer`]).

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

/// Requests held until released (the fake Mind's completions, the origin's `/slow`),
/// counted: shared by a child server's handlers.
#[derive(Default)]
pub struct Held {
    requests: AtomicU64,
    hanging: AtomicU64,
    released: tokio::sync::watch::Sender<bool>,
}

/// Decrements `hanging` when a request ends or its connection is dropped.
struct Hanging(Arc<Held>);

impl Drop for Hanging {
    fn drop(&mut self) {
        self.0.hanging.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Held {
    /// Counts a request and waits until [`Held::release`] (at once after it).
    pub async fn hold(self: Arc<Self>) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.hanging.fetch_add(1, Ordering::Relaxed);
        let _guard = Hanging(self.clone());
        let mut released = self.released.subscribe();
        let _ = released.wait_for(|r| *r).await;
    }

    /// The routes every child serves: `GET /stats` and `POST /release`.
    pub fn routes() -> Router<Arc<Held>> {
        Router::new()
            .route(
                "/stats",
                get(|State(s): State<Arc<Held>>| async move {
                    Json(json!({
                        "requests": s.requests.load(Ordering::Relaxed),
                        "hanging": s.hanging.load(Ordering::Relaxed),
                    }))
                }),
            )
            .route(
                "/release",
                post(|State(s): State<Arc<Held>>| async move {
                    s.released.send_replace(true);
                    Json(json!({}))
                }),
            )
    }
}

async fn complete(State(held): State<Arc<Held>>, body: axum::body::Bytes) -> Json<Value> {
    drop(body);
    held.hold().await;
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
    let held = Arc::new(Held::default());
    let app = Held::routes()
        .route("/v1/chat/completions", post(complete))
        .with_state(held);
    serve_child("127.0.0.1", app);
}

/// A child's server: binds `ip`:0, tells the parent its port (`PORT n` on stdout) and
/// serves `app` on one thread until stdin closes (the bench ended or died).
pub fn serve_child(ip: &str, app: Router) {
    let listener = std::net::TcpListener::bind((ip, 0)).expect("binding a child server");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
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

/// The parent's handle on a child server (this binary re-executed with `env` set): the
/// process, its address, and its `/stats` and `/release`.
pub struct ChildServer {
    child: Child,
    pub ip: &'static str,
    pub port: u16,
    http: reqwest::blocking::Client,
}

impl ChildServer {
    /// Starts the child and waits for its port.
    pub fn start(env: &str, ip: &'static str) -> Self {
        let exe = std::env::current_exe().expect("current exe");
        let mut child = Command::new(exe)
            .env(env, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting a child server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("reading a child server's port");
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the child server said {line:?}"));
        let http = reqwest::blocking::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client");
        Self {
            child,
            ip,
            port,
            http,
        }
    }

    /// Answers every held request, and every later one at once.
    pub fn release(&self) {
        self.http
            .post(format!("http://{}:{}/release", self.ip, self.port))
            .send()
            .and_then(reqwest::blocking::Response::error_for_status)
            .expect("releasing a child server");
    }

    /// (requests held so far, held now).
    pub fn stats(&self) -> (u64, u64) {
        let v: Value = self
            .http
            .get(format!("http://{}:{}/stats", self.ip, self.port))
            .send()
            .and_then(reqwest::blocking::Response::json)
            .expect("a child server's stats");
        (
            v["requests"].as_u64().unwrap_or(0),
            v["hanging"].as_u64().unwrap_or(0),
        )
    }
}

impl Drop for ChildServer {
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

/// The fake Mind's handle.
pub struct FakeMind(ChildServer);

impl FakeMind {
    pub fn start() -> Self {
        Self(ChildServer::start(CHILD_ENV, "127.0.0.1"))
    }

    /// `[mind] base_url`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.0.port)
    }

    /// Answers every hanging request, and every later one at once.
    pub fn release(&self) {
        self.0.release();
    }

    /// (requests received, requests hanging now).
    pub fn stats(&self) -> (u64, u64) {
        self.0.stats()
    }
}
