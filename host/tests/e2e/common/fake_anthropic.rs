//! A scripted fake Mind speaking Anthropic's Messages API (`POST /v1/messages`), for
//! starting `wasmind` with `WASMIND_MIND=anthropic` and
//! `WASMIND_MIND_BASE_URL=<base_url()>`. The server, script and record are
//! [`fake_server`](super::fake_server)'s; this module writes Messages replies (`text` and
//! `tool_use` blocks, Anthropic's error body) and reads `tool_result` blocks back.

// Each end-to-end test uses only some of these helpers.
#![allow(dead_code)]

use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

pub use super::fake_server::Reply;
use super::fake_server::{Call, Fake, INPUT_TOKENS, OUTPUT_TOKENS, Protocol};

/// The Messages API.
pub struct Messages;

/// A fake Mind speaking [`Messages`].
pub type FakeAnthropic = Fake<Messages>;

impl Protocol for Messages {
    const PATH: &'static str = "/v1/messages";
    const CALL_ID_PREFIX: &'static str = "toolu_";

    fn reply(n: usize, text: Option<&str>, calls: &[Call]) -> Value {
        let mut content: Vec<Value> = text
            .map(|t| json!({"type": "text", "text": t}))
            .into_iter()
            .collect();
        content.extend(calls.iter().map(
            |c| json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}),
        ));
        let stop_reason = if calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        json!({
            "id": format!("msg_fake_{n}"),
            "type": "message",
            "role": "assistant",
            "model": "fake-claude",
            "content": content,
            "stop_reason": stop_reason,
            "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS}
        })
    }

    fn error(status: StatusCode) -> Value {
        let kind = match status.as_u16() {
            429 => "rate_limit_error",
            529 => "overloaded_error",
            500.. => "api_error",
            _ => "invalid_request_error",
        };
        json!({"type": "error", "error": {"type": kind, "message": format!("fake Anthropic: HTTP {status}")}})
    }

    fn system_prompt(body: &Value) -> Option<&str> {
        body["system"].as_str()
    }

    fn models(ids: &[&str]) -> Value {
        let data: Vec<Value> = ids
            .iter()
            .map(|id| {
                json!({"type": "model", "id": id, "display_name": id,
                       "created_at": "2025-01-01T00:00:00Z"})
            })
            .collect();
        json!({"data": data, "has_more": false,
               "first_id": ids.first(), "last_id": ids.last()})
    }

    fn presented_key(headers: &HeaderMap) -> Option<&str> {
        headers.get("x-api-key")?.to_str().ok()
    }
}

impl FakeAnthropic {
    /// Every `tool_result` block of request `i`, in order.
    pub fn tool_results(&self, i: usize) -> Vec<Value> {
        let request = &self.requests()[i];
        let messages = request["messages"].as_array().cloned().unwrap_or_default();
        messages
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .filter(|block| block["type"] == "tool_result")
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::fake_server::DEFAULT_TEXT;

    #[test]
    fn fake_anthropic_speaks_messages() {
        let mind = FakeAnthropic::start([
            Reply::tool_call("service_memory_get", json!({"key": "tea"})),
            Reply::status_retry_after(529, 4),
        ]);
        let client = reqwest::blocking::Client::new();
        let ask = |body: &Value| {
            client
                .post(format!("{}/messages", mind.base_url()))
                .header("x-api-key", "sk-ant-fake")
                .json(body)
                .send()
                .unwrap()
        };
        let first = json!({"model": "m", "max_tokens": 10,
            "messages": [{"role": "user", "content": "tea?"}]});
        let reply: Value = ask(&first).json().unwrap();
        assert_eq!(
            reply["content"],
            json!([{"type": "tool_use", "id": "toolu_1", "name": "service_memory_get",
                    "input": {"key": "tea"}}])
        );
        assert_eq!(reply["usage"]["input_tokens"], INPUT_TOKENS);

        let second = json!({"model": "m", "max_tokens": 10, "messages": [
            {"role": "user", "content": "tea?"},
            {"role": "assistant", "content": reply["content"]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"found\":false}"}]}
        ]});
        let overloaded = ask(&second);
        assert_eq!(overloaded.status(), 529);
        assert_eq!(overloaded.headers()["retry-after"], "4");
        let error: Value = overloaded.json().unwrap();
        assert_eq!(error["error"]["type"], "overloaded_error");

        let reply: Value = ask(&second).json().unwrap();
        assert_eq!(
            reply["content"],
            json!([{"type": "text", "text": DEFAULT_TEXT}])
        );
        assert_eq!(
            mind.tool_results(1),
            [
                json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"found\":false}"})
            ]
        );
        assert_eq!(
            mind.header("x-api-key"),
            vec![Some("sk-ant-fake".to_string()); 3]
        );
    }
}
