//! A scripted fake Mind speaking the OpenAI chat-completions protocol
//! (`POST /v1/chat/completions`), for starting `wasmind` with `WASMIND_MIND=openai` and
//! `WASMIND_MIND_BASE_URL=<base_url()>`. The server, script and record are
//! [`fake_server`](super::fake_server)'s; this module writes the replies and reads the
//! conversation back.
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

use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::fake_server::{Call, Fake, Protocol};
pub use super::fake_server::{DEFAULT_TEXT, DEFAULT_TITLE, INPUT_TOKENS, OUTPUT_TOKENS, Reply};

/// The OpenAI chat-completions protocol.
pub struct OpenAi;

/// A fake Mind speaking [`OpenAi`].
pub type FakeMind = Fake<OpenAi>;

impl Protocol for OpenAi {
    const PATH: &'static str = "/v1/chat/completions";
    const CALL_ID_PREFIX: &'static str = "call_";

    fn reply(n: usize, text: Option<&str>, calls: &[Call]) -> Value {
        let message = if calls.is_empty() {
            json!({"role": "assistant", "content": text})
        } else {
            let calls: Vec<Value> = calls
                .iter()
                .map(|c| {
                    json!({"id": c.id, "type": "function",
                           "function": {"name": c.name, "arguments": c.arguments.to_string()}})
                })
                .collect();
            json!({"role": "assistant", "content": text, "tool_calls": calls})
        };
        let finish_reason = if calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        json!({
            "id": format!("chatcmpl-fake-{n}"),
            "object": "chat.completion",
            "model": "fake-mind",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": INPUT_TOKENS, "completion_tokens": OUTPUT_TOKENS,
                      "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS}
        })
    }

    fn error(status: StatusCode) -> Value {
        json!({"error": {"message": format!("fake Mind: HTTP {status}"),
                         "type": "fake_error", "code": null}})
    }

    fn system_prompt(body: &Value) -> Option<&str> {
        let first = &body["messages"][0];
        (first["role"] == "system").then(|| first["content"].as_str())?
    }

    fn models(ids: &[&str]) -> Value {
        let data: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "fake"}))
            .collect();
        json!({"object": "list", "data": data})
    }

    fn presented_key(headers: &HeaderMap) -> Option<&str> {
        let value = headers.get("authorization")?.to_str().ok()?;
        value.strip_prefix("Bearer ")
    }
}

impl FakeMind {
    /// The `Authorization` header of every request, in order.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.header("authorization")
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
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

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
        assert_eq!(body["usage"]["prompt_tokens"], INPUT_TOKENS);

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
