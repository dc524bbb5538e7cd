//! The client against the scripted local server (`remote::fake`) speaking Messages JSON.

use std::{sync::Arc, time::Duration};

use serde_json::{Value, json};

use super::*;
use crate::mind::{
    Mind, MindError, RecordingSleep, Retrying, ToolCall, Usage,
    remote::fake::{self, Fake, Reply, ok, status},
};

/// Serves `replies` in order; returns the config pointing at the server (with a key and
/// a `max_tokens` of its own), and the fake.
async fn serve(replies: Vec<Reply>) -> (MindConfig, Arc<Fake>) {
    let (mut cfg, fake) = fake::serve("anthropic", "messages", replies).await;
    cfg.api_key = Some("sk-ant-test".into());
    cfg.max_tokens = 1000;
    (cfg, fake)
}

/// A reply of `content` blocks.
fn message(content: &Value) -> Reply {
    ok(&json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": content, "stop_reason": "end_turn",
        "usage": {"input_tokens": 42, "output_tokens": 7}
    }))
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

#[tokio::test]
async fn request_shape_and_tool_call_round_trip() {
    let reply = message(&json!([
        {"type": "thinking", "thinking": "hmm", "signature": "s"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_9", "name": "service_memory_search", "input": {"query": "tea"}}
    ]));
    let (cfg, fake) = serve(vec![reply]).await;
    let client = Anthropic::new(&cfg).unwrap();
    let tool = ToolSpec {
        name: "service_memory_search".into(),
        description: "Search memory".into(),
        parameters: json!({"type": "object", "properties": {"query": {"type": "string"}}}).into(),
    };
    let messages = [
        Message::system("be brief"),
        Message::system("use tools"),
        Message::user("remember tea"),
        Message::assistant(
            "",
            vec![
                call(
                    "toolu_1",
                    "service_memory_put",
                    r#"{"key":"tea","value":"green"}"#,
                ),
                call("toolu_2", "service_memory_get", r#"{"key":"tea"}"#),
            ],
        ),
        Message::tool("toolu_1", r#"{"memory_id":"mem_1"}"#),
        Message::tool("toolu_2", r#"{"found":false}"#),
        Message::user("and now?"),
    ];
    let completion = client.attempt(None, &messages, &[tool]).await.unwrap();

    assert_eq!(
        completion,
        Completion {
            text: Some("Let me look.".into()),
            tool_calls: vec![call(
                "toolu_9",
                "service_memory_search",
                r#"{"query":"tea"}"#
            )],
            usage: Usage {
                input_tokens: 42,
                output_tokens: 7
            },
        }
    );
    assert_eq!(fake.header(0, "x-api-key").as_deref(), Some("sk-ant-test"));
    assert_eq!(
        fake.header(0, "anthropic-version").as_deref(),
        Some("2023-06-01")
    );
    assert_eq!(fake.header(0, "authorization"), None);
    assert_eq!(
        fake.bodies(),
        [json!({
            "model": "test-model",
            "max_tokens": 1000,
            "system": "be brief\n\nuse tools",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "remember tea"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "service_memory_put",
                     "input": {"key": "tea", "value": "green"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "service_memory_get",
                     "input": {"key": "tea"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"memory_id\":\"mem_1\"}"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "{\"found\":false}"},
                    {"type": "text", "text": "and now?"},
                ]},
            ],
            "tools": [{"name": "service_memory_search", "description": "Search memory",
                "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}}]
        })]
    );
}

#[tokio::test]
async fn text_reply_without_key_system_or_tools() {
    let (mut cfg, fake) = serve(vec![message(&json!([
        {"type": "text", "text": "Hello"}, {"type": "text", "text": " there"}
    ]))])
    .await;
    cfg.api_key = None;
    let completion = Anthropic::new(&cfg)
        .unwrap()
        .attempt(None, &[Message::user("hi")], &[])
        .await
        .unwrap();
    assert_eq!(completion.text.as_deref(), Some("Hello there"));
    assert!(completion.tool_calls.is_empty());
    assert_eq!(fake.header(0, "x-api-key"), None);
    let body = &fake.bodies()[0];
    assert!(
        body.get("system").is_none() && body.get("tools").is_none(),
        "{body}"
    );
}

#[tokio::test]
async fn failures_quote_the_provider_never_the_key() {
    let overloaded = json!({"type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let invalid = json!({"type": "error",
        "error": {"type": "invalid_request_error", "message": "max_tokens: must be positive"}});
    let (cfg, fake) = serve(vec![
        Reply::Http(529, Some("3"), overloaded.to_string()),
        Reply::Http(400, None, invalid.to_string()),
        ok(&overloaded),
    ])
    .await;
    let client = Anthropic::new(&cfg).unwrap();
    let mut failures = Vec::new();
    for _ in 0..3 {
        failures.push(
            client
                .attempt(None, &[Message::user("go")], &[])
                .await
                .unwrap_err(),
        );
    }
    let Failure::Transient {
        message,
        retry_after,
    } = &failures[0]
    else {
        panic!("{:?}", failures[0])
    };
    assert!(
        message.contains("/v1/messages: 529") && message.ends_with("Overloaded"),
        "{message}"
    );
    assert_eq!(*retry_after, Some(Duration::from_secs(3)));
    let Failure::Refused(message) = &failures[1] else {
        panic!("{:?}", failures[1])
    };
    assert!(message.contains("must be positive"), "{message}");
    let Failure::Transient { message, .. } = &failures[2] else {
        panic!("{:?}", failures[2])
    };
    assert!(message.contains("unreadable reply"), "{message}");
    for failure in &failures {
        assert!(
            !format!("{failure:?}").contains("sk-ant-test"),
            "{failure:?}"
        );
    }

    let bad_call = Message::assistant("", vec![call("toolu_1", "x", "[1, 2]")]);
    let failure = client.attempt(None, &[bad_call], &[]).await.unwrap_err();
    assert!(
        matches!(&failure, Failure::Refused(m) if m.contains("not a JSON object")),
        "{failure:?}"
    );
    assert_eq!(
        fake.bodies().len(),
        3,
        "a request that cannot be said is not sent"
    );
}

#[tokio::test]
async fn retried_with_the_retry_after_hint() {
    let (cfg, fake) = serve(vec![
        Reply::Http(529, Some("3"), String::new()),
        message(&json!([{"type": "text", "text": "recovered"}])),
        status(401),
    ])
    .await;
    let sleep = RecordingSleep::default();
    let mind = Retrying::with_sleep(Anthropic::new(&cfg).unwrap(), sleep.clone());
    let completion = mind.complete(&[Message::user("go")], &[]).await.unwrap();
    assert_eq!(completion.text.as_deref(), Some("recovered"));
    assert_eq!(sleep.requested(), [Duration::from_secs(3)]);

    let error = mind
        .complete(&[Message::user("go")], &[])
        .await
        .unwrap_err();
    assert!(matches!(error, MindError::InvalidRequest(_)), "{error:?}");
    assert_eq!(fake.bodies().len(), 3);
}

#[tokio::test]
async fn titles_go_through_complete() {
    let (cfg, fake) = serve(vec![message(
        &json!([{"type": "text", "text": "Remember the launch date"}]),
    )])
    .await;
    let mind = Retrying::with_sleep(Anthropic::new(&cfg).unwrap(), RecordingSleep::default());
    let title = mind
        .title("Remember that the launch is on Friday at noon")
        .await
        .unwrap();
    assert_eq!(title.text, "Remember the launch date");
    assert_eq!(title.usage.input_tokens, 42);
    let body = &fake.bodies()[0];
    assert!(body["system"].as_str().is_some(), "{body}");
    assert_eq!(body["messages"][0]["role"], "user");
}
