//! What the scripted fake Minds share, whatever protocol they speak: a real HTTP server on
//! 127.0.0.1 on its own thread and tokio runtime (so blocking tests can use it), a script
//! of [`Reply`]s taken one per request, and a record of every request's headers and body.
//! A [`Protocol`] says where requests arrive and how a reply is written; `fake_mind`
//! (OpenAI) and `fake_anthropic` are the two.
//!
//! Once the script is used up every request is answered [`DEFAULT_TEXT`]. The host's title
//! requests race the agent's own (it titles an agent in the background as it starts), so
//! they keep out of the script and the record: they take [`Fake::push_title`]'s replies,
//! else [`DEFAULT_TITLE`], and are recorded apart ([`Fake::title_requests`]). The models
//! listing (`GET /v1/models`, what the host probes at start) lists [`LISTED_MODELS`],
//! refuses keys other than one [`Fake::require_key`] names with a
//! 401, and stays out of the record too. The server stops
//! when the [`Fake`] is dropped, cancelling requests still delayed or hanging.

// Each end-to-end test uses only some of these helpers.
#![allow(dead_code)]

use std::{
    collections::VecDeque,
    future::IntoFuture,
    marker::PhantomData,
    net::SocketAddr,
    sync::{Arc, Mutex},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use axum::{
    Json, Router,
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use serde_json::Value;
use tokio::sync::{oneshot, watch};

/// The final text answered once the script is used up (and after a released hang).
pub const DEFAULT_TEXT: &str = "Done. (fake Mind default reply)";
/// The answer to title requests unless the test scripted others.
pub const DEFAULT_TITLE: &str = "Fake Mind Title";
/// How the host's title prompt starts (`mind::jobs`).
const TITLE_PROMPT_START: &str = "Write a title";
/// The models the listing names by default: those the e2e options configure.
pub const LISTED_MODELS: &[&str] = &["fake-gpt", "fake-claude"];
/// Input tokens reported on every successful reply.
pub const INPUT_TOKENS: u32 = 10;
/// Output tokens reported on every successful reply.
pub const OUTPUT_TOKENS: u32 = 5;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A final answer.
    Text(String),
    /// Tool calls: (tool name, arguments object). Ids are numbered across the server's
    /// life, with the protocol's prefix (`call_1`, `toolu_2`, …).
    ToolCalls(Vec<(String, Value)>),
    /// An HTTP error with the protocol's error body, and `Retry-After` seconds if given.
    Status {
        status: u16,
        retry_after: Option<u64>,
    },
    /// `reply`, after waiting `delay`.
    Delay(Duration, Box<Reply>),
    /// `reply`, once [`Fake::release`] is called: a test decides when it arrives.
    Held(Box<Reply>),
    /// No answer until [`Fake::release`]; then [`DEFAULT_TEXT`].
    Hang,
}

impl Reply {
    /// A final answer.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::Text(text.into())
    }

    /// One tool call.
    pub fn tool_call(name: &str, arguments: Value) -> Reply {
        Reply::ToolCalls(vec![(name.to_string(), arguments)])
    }

    /// An HTTP error status.
    pub fn status(status: u16) -> Reply {
        Reply::Status {
            status,
            retry_after: None,
        }
    }

    /// An HTTP error status with `Retry-After: secs`.
    pub fn status_retry_after(status: u16, secs: u64) -> Reply {
        Reply::Status {
            status,
            retry_after: Some(secs),
        }
    }

    /// This reply, after `delay`.
    pub fn after(self, delay: Duration) -> Reply {
        Reply::Delay(delay, Box::new(self))
    }

    /// This reply, once [`Fake::release`] is called.
    pub fn until_released(self) -> Reply {
        Reply::Held(Box::new(self))
    }
}

/// A tool call as a protocol writes it.
pub struct Call {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// How one provider protocol is spoken.
pub trait Protocol: Send + Sync + 'static {
    /// The route requests arrive at, e.g. `/v1/messages`.
    const PATH: &'static str;
    /// The prefix of tool-call ids, e.g. `call_`.
    const CALL_ID_PREFIX: &'static str;
    /// A successful reply with `text` and/or `calls`, reporting [`INPUT_TOKENS`] and
    /// [`OUTPUT_TOKENS`]; `n` numbers the request.
    fn reply(n: usize, text: Option<&str>, calls: &[Call]) -> Value;
    /// The body of an error reply with `status`.
    fn error(status: StatusCode) -> Value;
    /// The system prompt of a request, if it has one.
    fn system_prompt(body: &Value) -> Option<&str>;
    /// The models listing naming `ids`.
    fn models(ids: &[&str]) -> Value;
    /// The API key a request presents.
    fn presented_key(headers: &HeaderMap) -> Option<&str>;
}

/// One request as received.
#[derive(Clone)]
pub struct Recorded {
    pub headers: HeaderMap,
    pub body: Value,
}

/// What the handler shares with the test.
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    titles: Mutex<VecDeque<Reply>>,
    title_requests: Mutex<Vec<Recorded>>,
    calls: Mutex<u64>,
    released: watch::Sender<bool>,
    required_key: Mutex<Option<String>>,
    listings: Mutex<usize>,
}

/// A running fake provider speaking `P`.
pub struct Fake<P> {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    protocol: PhantomData<P>,
}

impl<P: Protocol> Fake<P> {
    /// Starts a server answering with `script`, in order.
    pub fn start(script: impl IntoIterator<Item = Reply>) -> Self {
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
            titles: Mutex::new(VecDeque::new()),
            title_requests: Mutex::new(Vec::new()),
            calls: Mutex::new(0),
            released: watch::Sender::new(false),
            required_key: Mutex::new(None),
            listings: Mutex::new(0),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding the fake Mind");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new()
            .route(P::PATH, post(answer::<P>))
            .route("/v1/models", get(models::<P>))
            .with_state(shared.clone());
        let (shutdown, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("fake-mind".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                    tokio::select! {
                        result = axum::serve(listener, app).into_future() => result.unwrap(),
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime cancels requests still delayed or hanging.
            })
            .unwrap();
        Self {
            addr,
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
            protocol: PhantomData,
        }
    }

    /// The base URL for `WASMIND_MIND_BASE_URL` (ends in `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Appends replies to the script.
    pub fn push(&self, reply: Reply) {
        self.shared.script.lock().unwrap().push_back(reply);
    }

    /// Appends a reply for title requests.
    pub fn push_title(&self, reply: Reply) {
        self.shared.titles.lock().unwrap().push_back(reply);
    }

    /// Every title request body received, in order.
    pub fn title_requests(&self) -> Vec<Value> {
        let titles = self.shared.title_requests.lock().unwrap();
        titles.iter().map(|r| r.body.clone()).collect()
    }

    /// Every request received (titles aside), in order.
    pub fn recorded(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Every request body received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.recorded().into_iter().map(|r| r.body).collect()
    }

    /// Header `name` of every request, in order.
    pub fn header(&self, name: &str) -> Vec<Option<String>> {
        self.recorded()
            .iter()
            .map(|r| {
                let value = r.headers.get(name)?;
                Some(value.to_str().ok()?.to_string())
            })
            .collect()
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> usize {
        self.shared.requests.lock().unwrap().len()
    }

    /// Waits until at least `n` requests arrived; false on timeout.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.request_count() < n {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    /// Answers the models listing with 401 unless the request presents `key`.
    pub fn require_key(&self, key: &str) {
        *self.shared.required_key.lock().unwrap() = Some(key.to_string());
    }

    /// How many times the models listing was asked for.
    pub fn listings(&self) -> usize {
        *self.shared.listings.lock().unwrap()
    }

    /// Lets every hanging request (now and later) answer [`DEFAULT_TEXT`].
    pub fn release(&self) {
        self.shared.released.send_replace(true);
    }
}

impl<P> Drop for Fake<P> {
    fn drop(&mut self) {
        self.shared.released.send_replace(true);
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn models<P: Protocol>(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    *shared.listings.lock().unwrap() += 1;
    let required = shared.required_key.lock().unwrap().clone();
    if required.is_some_and(|key| P::presented_key(&headers) != Some(key.as_str())) {
        let status = StatusCode::UNAUTHORIZED;
        return (status, Json(P::error(status))).into_response();
    }
    Json(P::models(LISTED_MODELS)).into_response()
}

async fn answer<P: Protocol>(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    let title = P::system_prompt(&body).is_some_and(|s| s.starts_with(TITLE_PROMPT_START));
    let (record, script, default) = match title {
        true => (&shared.title_requests, &shared.titles, DEFAULT_TITLE),
        false => (&shared.requests, &shared.script, DEFAULT_TEXT),
    };
    let n = {
        let mut requests = record.lock().unwrap();
        requests.push(Recorded { headers, body });
        requests.len()
    };
    let next = script.lock().unwrap().pop_front();
    let mut reply = next.unwrap_or_else(|| Reply::text(default));
    loop {
        match reply {
            Reply::Delay(delay, then) => {
                tokio::time::sleep(delay).await;
                reply = *then;
            }
            Reply::Hang => reply = Reply::text(DEFAULT_TEXT).until_released(),
            Reply::Held(then) => {
                let mut released = shared.released.subscribe();
                let _ = released.wait_for(|r| *r).await;
                reply = *then;
            }
            Reply::Text(text) => return Json(P::reply(n, Some(&text), &[])).into_response(),
            Reply::ToolCalls(calls) => {
                let calls: Vec<Call> = calls
                    .into_iter()
                    .map(|(name, arguments)| {
                        let mut count = shared.calls.lock().unwrap();
                        *count += 1;
                        Call {
                            id: format!("{}{count}", P::CALL_ID_PREFIX),
                            name,
                            arguments,
                        }
                    })
                    .collect();
                return Json(P::reply(n, None, &calls)).into_response();
            }
            Reply::Status {
                status,
                retry_after,
            } => {
                let status = StatusCode::from_u16(status).expect("a valid HTTP status");
                let mut response = (status, Json(P::error(status))).into_response();
                if let Some(secs) = retry_after {
                    response
                        .headers_mut()
                        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
                }
                return response;
            }
        }
    }
}
