//! A scripted fake Mind: a real HTTP server speaking the OpenAI chat-completions protocol
//! on 127.0.0.1, for starting `wasmind` with `WASMIND_MIND=openai` and
//! `WASMIND_MIND_BASE_URL=<base_url()>`.
//!
//! Each request to `POST /v1/chat/completions` takes the next [`Reply`] of the script (a
//! final text, tool calls, an HTTP error, a delayed reply, or a hang until
//! [`FakeMind::release`]); once the script is used up it answers [`DEFAULT_TEXT`]. Every
//! request body is recorded for assertions. The server runs on its own thread and tokio
//! runtime, so blocking tests can use it; it stops when the `FakeMind` is dropped.
//!
//! ```ignore
//! let mind = FakeMind::start([
//!     Reply::tool_call("service_memory_put", json!({"key": "k", "value": "v"})),
//!     Reply::text("Saved."),
//! ]);
//! // ... spawn an agent against a server started with mind.base_url() ...
//! assert!(mind.tool_messages().iter().any(|m| m.starts_with("Service Memory failed:")));
//! ```

// Each end-to-end test uses only some of these helpers.
#![allow(dead_code)]

use std::{
    collections::VecDeque,
    future::IntoFuture,
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
    routing::post,
};
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

/// The final text answered once the script is used up (and after a released hang).
pub const DEFAULT_TEXT: &str = "Done. (fake Mind default reply)";
/// `usage` reported on every successful reply.
pub const PROMPT_TOKENS: u32 = 10;
pub const COMPLETION_TOKENS: u32 = 5;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A final answer.
    Text(String),
    /// Tool calls: (tool name, arguments object). Ids are `call_1`, `call_2`, … across the
    /// server's life.
    ToolCalls(Vec<(String, Value)>),
    /// An HTTP error with an OpenAI-style error body, and `Retry-After` seconds if given.
    Status {
        status: u16,
        retry_after: Option<u64>,
    },
    /// `reply`, after waiting `delay`.
    Delay(Duration, Box<Reply>),
    /// No answer until [`FakeMind::release`]; then [`DEFAULT_TEXT`].
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
}

/// The title answered to the host's title requests unless the test scripted others.
pub const DEFAULT_TITLE: &str = "Fake Mind Title";

/// What the handler shares with the test.
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    /// Replies to title requests, which race the agent's own requests (the host titles an
    /// agent in the background as it starts), so they keep out of the main script.
    titles: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    calls: Mutex<u64>,
    released: watch::Sender<bool>,
}

#[derive(Clone)]
struct Recorded {
    authorization: Option<String>,
    body: Value,
}

/// A running fake Mind server.
pub struct FakeMind {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeMind {
    /// Starts a server answering with `script`, in order.
    pub fn start(script: impl IntoIterator<Item = Reply>) -> FakeMind {
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into_iter().collect()),
            titles: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            calls: Mutex::new(0),
            released: watch::Sender::new(false),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding the fake Mind");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
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
        FakeMind {
            addr,
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
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

    /// Every request body received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.shared
            .requests
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.body.clone())
            .collect()
    }

    /// The `Authorization` header of every request, in order.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.shared
            .requests
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.authorization.clone())
            .collect()
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> usize {
        self.shared.requests.lock().unwrap().len()
    }

    /// The contents of every distinct `tool` message sent to the Mind (each conversation
    /// is resent whole, so a result is listed once, in order of first appearance).
    pub fn tool_messages(&self) -> Vec<String> {
        let mut seen: Vec<(Value, String)> = Vec::new();
        for request in self.requests() {
            let messages = request["messages"].as_array().cloned().unwrap_or_default();
            for m in messages.iter().filter(|m| m["role"] == "tool") {
                let entry = (
                    m["tool_call_id"].clone(),
                    m["content"].as_str().unwrap_or("").to_string(),
                );
                if !seen.contains(&entry) {
                    seen.push(entry);
                }
            }
        }
        seen.into_iter().map(|(_, content)| content).collect()
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

    /// Lets every hanging request (now and later) answer [`DEFAULT_TEXT`].
    pub fn release(&self) {
        self.shared.released.send_replace(true);
    }
}

impl Drop for FakeMind {
    fn drop(&mut self) {
        self.release();
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn complete(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: String) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = serde_json::from_str(&body).unwrap_or(Value::String(body));
    shared.requests.lock().unwrap().push(Recorded {
        authorization,
        body: body.clone(),
    });
    let mut reply = match is_title_request(&body) {
        true => shared
            .titles
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Reply::text(DEFAULT_TITLE)),
        false => shared
            .script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Reply::text(DEFAULT_TEXT)),
    };
    loop {
        match reply {
            Reply::Delay(delay, then) => {
                tokio::time::sleep(delay).await;
                reply = *then;
            }
            Reply::Hang => {
                let mut released = shared.released.subscribe();
                let _ = released.wait_for(|r| *r).await;
                reply = Reply::text(DEFAULT_TEXT);
            }
            Reply::Text(text) => {
                return completion(&shared, &json!({"role": "assistant", "content": text}));
            }
            Reply::ToolCalls(calls) => {
                let calls: Vec<Value> = calls
                    .into_iter()
                    .map(|(name, arguments)| {
                        let id = {
                            let mut n = shared.calls.lock().unwrap();
                            *n += 1;
                            format!("call_{n}")
                        };
                        json!({"id": id, "type": "function",
                               "function": {"name": name, "arguments": arguments.to_string()}})
                    })
                    .collect();
                let message = json!({"role": "assistant", "content": null, "tool_calls": calls});
                return completion(&shared, &message);
            }
            Reply::Status {
                status,
                retry_after,
            } => {
                let status = StatusCode::from_u16(status).expect("a valid HTTP status");
                let error = json!({"error": {"message": format!("fake Mind: HTTP {status}"),
                                             "type": "fake_error", "code": null}});
                let mut response = (status, Json(error)).into_response();
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

/// Whether `body` is the host asking for an agent's title (its system prompt says so).
fn is_title_request(body: &Value) -> bool {
    body["messages"][0]["role"] == "system"
        && body["messages"][0]["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("Write a title"))
}

fn completion(shared: &Shared, message: &Value) -> Response {
    let finish_reason = if message["tool_calls"].is_array() {
        "tool_calls"
    } else {
        "stop"
    };
    let n = shared.requests.lock().unwrap().len();
    Json(json!({
        "id": format!("chatcmpl-fake-{n}"),
        "object": "chat.completion",
        "model": "fake-mind",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS,
                  "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS}
    }))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(
        client: &reqwest::blocking::Client,
        base: &str,
        messages: &Value,
    ) -> (u16, Option<String>, Value) {
        let response = client
            .post(format!("{base}/chat/completions"))
            .bearer_auth("sk-fake")
            .json(&json!({"model": "m", "messages": messages}))
            .send()
            .unwrap();
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        (status, retry_after, response.json().unwrap())
    }

    #[test]
    fn fake_mind_follows_its_script_and_records_requests() {
        let mind = FakeMind::start([
            Reply::tool_call("service_memory_search", json!({"query": "tea"})),
            Reply::status_retry_after(503, 2),
            Reply::text("slow answer").after(Duration::from_millis(200)),
            Reply::Hang,
        ]);
        let base = mind.base_url();
        let client = reqwest::blocking::Client::new();
        let user = json!([{"role": "user", "content": "what about tea?"}]);

        let (status, _, body) = ask(&client, &base, &user);
        assert_eq!(status, 200);
        let call = &body["choices"][0]["message"]["tool_calls"][0];
        assert_eq!(call["id"], "call_1");
        assert_eq!(call["function"]["name"], "service_memory_search");
        assert_eq!(call["function"]["arguments"], r#"{"query":"tea"}"#);
        assert_eq!(body["usage"]["prompt_tokens"], PROMPT_TOKENS);

        let with_result = json!([
            {"role": "user", "content": "what about tea?"},
            {"role": "assistant", "content": null, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Service Memory failed: quota"}
        ]);
        let (status, retry_after, body) = ask(&client, &base, &with_result);
        assert_eq!((status, retry_after.as_deref()), (503, Some("2")));
        assert!(body["error"]["message"].as_str().unwrap().contains("503"));

        let started = Instant::now();
        let (status, _, body) = ask(&client, &base, &with_result);
        assert_eq!(status, 200);
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert_eq!(body["choices"][0]["message"]["content"], "slow answer");

        let hanging = {
            let (client, base, user) = (client.clone(), base.clone(), user.clone());
            std::thread::spawn(move || ask(&client, &base, &user))
        };
        assert!(mind.wait_for_requests(4, Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(100));
        assert!(!hanging.is_finished(), "a hang answers only once released");
        mind.release();
        let (status, _, body) = hanging.join().unwrap();
        assert_eq!(status, 200);
        assert_eq!(body["choices"][0]["message"]["content"], DEFAULT_TEXT);

        let (_, _, body) = ask(&client, &base, &user);
        assert_eq!(
            body["choices"][0]["message"]["content"], DEFAULT_TEXT,
            "script used up"
        );

        assert_eq!(mind.request_count(), 5);
        assert_eq!(
            mind.requests()[0]["messages"][0]["content"],
            "what about tea?"
        );
        assert_eq!(mind.authorizations()[0].as_deref(), Some("Bearer sk-fake"));
        assert_eq!(mind.tool_messages(), ["Service Memory failed: quota"]);
    }

    #[test]
    fn dropping_a_hanging_fake_mind_does_not_block() {
        let mind = FakeMind::start([
            Reply::Hang,
            Reply::text("late").after(Duration::from_secs(600)),
        ]);
        let base = mind.base_url();
        std::thread::spawn(move || {
            let _ = reqwest::blocking::Client::new()
                .post(format!("{base}/chat/completions"))
                .body("{}")
                .send();
        });
        assert!(mind.wait_for_requests(1, Duration::from_secs(10)));
        drop(mind);
    }
}
