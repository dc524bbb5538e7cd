//! An origin for agents' outgoing requests: a real HTTP server on an address of the test's
//! choosing (127.0.0.2 for the allowed one, 127.0.0.1 for a canary that must never be
//! reached), on its own thread and tokio runtime, recording every request it gets.
//!
//! - `GET /slow`: answered once the test releases it ([`Origin::release`]), or at once after
//!   that (a request sent again by a resumed agent is not held a second time).
//! - `GET /redirect?to=URL`: 302 to `URL`.
//! - anything else: 200 `hello PATH`, or `got: BODY` when the request has a body.

// Each end-to-end test uses only some of these helpers.
#![allow(dead_code)]

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use axum::{
    Router,
    body::Bytes,
    extract::{Query, State},
    http::{HeaderMap, Method, StatusCode, Uri, header},
    response::{IntoResponse, Response},
};
use tokio::sync::{oneshot, watch};

/// One request the origin got.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub idempotency_key: Option<String>,
    /// Every header, its name lowercase.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

#[derive(Clone)]
struct Shared {
    seen: Arc<Mutex<Vec<Seen>>>,
    released: watch::Receiver<bool>,
}

pub struct Origin {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    release: watch::Sender<bool>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Origin {
    /// An origin listening on `ip` (a port of its own).
    pub fn start(ip: &str) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (release, released) = watch::channel(false);
        let shared = Shared {
            seen: seen.clone(),
            released,
        };
        let app = move || Router::new().fallback(answer).with_state(shared);
        let (addr, stop, thread) = serve_on_thread(ip, app, || ());
        Self {
            addr,
            seen,
            release,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://ADDR/path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every request so far, in the order they came.
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Lets `/slow` answer, now and from now on.
    pub fn release(&self) {
        let _ = self.release.send(true);
    }

    /// Waits until `n` requests came (within `timeout`).
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        while Instant::now() < until {
            if self.seen.lock().unwrap().len() >= n {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        let _ = self.release.send(true);
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Serves the router `app` makes on `ip` (a port of its own), on a thread and tokio runtime
/// of its own, until the sender is used: then `on_stop` runs and the server ends gracefully.
pub fn serve_on_thread(
    ip: &str,
    app: impl FnOnce() -> Router + Send + 'static,
    on_stop: impl FnOnce() + Send + 'static,
) -> (SocketAddr, oneshot::Sender<()>, JoinHandle<()>) {
    let listener = std::net::TcpListener::bind((ip, 0)).expect("binding a test server");
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let served = axum::serve(listener, app()).with_graceful_shutdown(async move {
                let _ = stopped.await;
                on_stop();
            });
            let _ = served.await;
        });
    });
    (addr, stop, thread)
}

#[derive(serde::Deserialize)]
struct To {
    to: Option<String>,
}

async fn answer(
    State(shared): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Query(to): Query<To>,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let body = String::from_utf8_lossy(&body).into_owned();
    shared.seen.lock().unwrap().push(Seen {
        method: method.to_string(),
        path: path.clone(),
        idempotency_key: (headers.get("idempotency-key"))
            .map(|k| k.to_str().unwrap_or_default().to_string()),
        headers: (headers.iter())
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string()))
            .collect(),
        body: body.clone(),
    });
    match path.as_str() {
        "/slow" => {
            let mut released = shared.released.clone();
            let _ = released.wait_for(|r| *r).await;
            (StatusCode::OK, "slow answer").into_response()
        }
        "/redirect" => {
            let to = to.to.unwrap_or_default();
            (StatusCode::FOUND, [(header::LOCATION, to)], "").into_response()
        }
        _ if !body.is_empty() => (StatusCode::OK, format!("got: {body}")).into_response(),
        _ => (StatusCode::OK, format!("hello {path}")).into_response(),
    }
}
