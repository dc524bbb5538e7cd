//! The client against a fake chat-completions server: an axum router on 127.0.0.1:0.

use std::{collections::VecDeque, sync::Arc, time::Duration};

use axum::{
    Router,
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::post,
};
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::*;
use crate::mind::{BACKOFF, Mind, MindError, RecordingSleep, Retrying, ToolCall, Usage};

/// One scripted reply: status, `Retry-After`, body; or a reply that comes too late.
enum Reply {
    Http(u16, Option<&'static str>, String),
    Late(Duration),
}

fn ok(body: &Value) -> Reply {
    Reply::Http(200, None, body.to_string())
}

fn status(code: u16) -> Reply {
    Reply::Http(
        code,
        None,
        json!({"error": {"message": format!("fake {code}")}}).to_string(),
    )
}

#[derive(Default)]
struct Fake {
    replies: Mutex<VecDeque<Reply>>,
    /// (Authorization header, body) of every request.
    seen: Mutex<Vec<(Option<String>, Value)>>,
}

async fn handle(State(fake): State<Arc<Fake>>, headers: HeaderMap, body: String) -> Response {
    let auth = headers
        .get(header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap().to_owned());
    fake.seen
        .lock()
        .push((auth, serde_json::from_str(&body).unwrap()));
    let reply = fake
        .replies
        .lock()
        .pop_front()
        .expect("fake script ran out");
    match reply {
        Reply::Http(code, retry_after, body) => {
            let mut response = (StatusCode::from_u16(code).unwrap(), body).into_response();
            if let Some(secs) = retry_after {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static(secs));
            }
            response
        }
        Reply::Late(delay) => {
            tokio::time::sleep(delay).await;
            (StatusCode::OK, "{}").into_response()
        }
    }
}

/// Serves `replies` in order; returns the config pointing at the server, and the fake.
async fn serve(replies: Vec<Reply>) -> (MindConfig, Arc<Fake>) {
    let fake = Arc::new(Fake {
        replies: Mutex::new(replies.into()),
        ..Fake::default()
    });
    let app = Router::new()
        .route("/v1/chat/completions", post(handle))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let cfg = MindConfig {
        provider: "openai".into(),
        base_url: format!("http://{addr}/v1/"),
        api_key: None,
        model: "test-model".into(),
    };
    (cfg, fake)
}

fn final_text(text: &str) -> Value {
    json!({"choices": [{"message": {"role": "assistant", "content": text}}]})
}

fn memory_tool() -> ToolSpec {
    ToolSpec {
        name: "service_memory_search".into(),
        description: "Search memory".into(),
        parameters: json!({"type": "object", "properties": {"query": {"type": "string"}}}),
    }
}

#[tokio::test]
async fn request_shape_and_tool_call_round_trip() {
    let reply = json!({
        "id": "chatcmpl-1",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "call_9", "type": "function",
                "function": {"name": "service_memory_search", "arguments": "{\"query\":\"tea\"}"}}]
        }}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}
    });
    let (mut cfg, fake) = serve(vec![ok(&reply)]).await;
    cfg.api_key = Some("sk-test".into());
    let client = OpenAi::new(&cfg).unwrap();
    let earlier_call = ToolCall {
        id: "call_1".into(),
        name: "service_memory_put".into(),
        arguments: r#"{"key":"tea","value":"green"}"#.into(),
    };
    let messages = [
        Message::system("be brief"),
        Message::user("remember tea"),
        Message::assistant("", vec![earlier_call]),
        Message::tool("call_1", r#"{"memory_id":"mem_1"}"#),
    ];
    let completion = client.attempt(&messages, &[memory_tool()]).await.unwrap();

    assert_eq!(
        completion,
        Completion {
            text: None,
            tool_calls: vec![ToolCall {
                id: "call_9".into(),
                name: "service_memory_search".into(),
                arguments: r#"{"query":"tea"}"#.into(),
            }],
            usage: Usage {
                input_tokens: 42,
                output_tokens: 7
            },
        }
    );
    let seen = fake.seen.lock();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0.as_deref(), Some("Bearer sk-test"));
    assert_eq!(
        seen[0].1,
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "remember tea"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "service_memory_put", "arguments": "{\"key\":\"tea\",\"value\":\"green\"}"}}]},
                {"role": "tool", "content": "{\"memory_id\":\"mem_1\"}", "tool_call_id": "call_1"},
            ],
            "tools": [{"type": "function", "function": {
                "name": "service_memory_search", "description": "Search memory",
                "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}]
        })
    );
}

#[tokio::test]
async fn lenient_reply_parsing_and_no_tools_no_key() {
    let reply = json!({"choices": [{"message": {"content": null, "tool_calls": [
        {"function": {"name": "a", "arguments": {"x": 1}}},
        {"function": {"name": "b"}}
    ]}}]});
    let (cfg, fake) = serve(vec![ok(&reply), ok(&final_text("hi"))]).await;
    let client = OpenAi::new(&cfg).unwrap();
    let completion = client.attempt(&[Message::user("go")], &[]).await.unwrap();
    assert_eq!(completion.usage, Usage::default());
    let calls: Vec<_> = completion
        .tool_calls
        .iter()
        .map(|c| (&*c.id, &*c.name, &*c.arguments))
        .collect();
    assert_eq!(
        calls,
        [("call_1", "a", r#"{"x":1}"#), ("call_2", "b", "{}")]
    );

    let completion = client.attempt(&[Message::user("go")], &[]).await.unwrap();
    assert_eq!(completion.text.as_deref(), Some("hi"));
    assert!(completion.tool_calls.is_empty());

    let seen = fake.seen.lock();
    assert_eq!(
        seen[0].0, None,
        "no key configured, no Authorization header"
    );
    assert!(seen[0].1.get("tools").is_none(), "tools omitted when empty");
    assert_eq!(
        seen[0].1["messages"],
        json!([{"role": "user", "content": "go"}])
    );
}

#[tokio::test]
async fn failures_are_classified() {
    let (cfg, _fake) = serve(vec![
        status(500),
        status(503),
        Reply::Http(429, Some("7"), String::new()),
        status(408),
        status(400),
        Reply::Http(401, None, "plain refusal".into()),
        Reply::Http(200, None, "<html>gateway</html>".into()),
        ok(&json!({"error": {"message": "overloaded"}})),
    ])
    .await;
    let client = OpenAi::new(&cfg).unwrap();
    let mut outcomes = Vec::new();
    for _ in 0..8 {
        outcomes.push(
            client
                .attempt(&[Message::user("go")], &[])
                .await
                .unwrap_err(),
        );
    }
    let transient = |f: &Failure| matches!(f, Failure::Transient { .. });
    let kinds: Vec<bool> = outcomes.iter().map(transient).collect();
    assert_eq!(kinds, [true, true, true, true, false, false, true, true]);
    let Failure::Transient { retry_after, .. } = &outcomes[2] else {
        unreachable!()
    };
    assert_eq!(*retry_after, Some(Duration::from_secs(7)));
    let Failure::Refused(message) = &outcomes[4] else {
        unreachable!()
    };
    assert!(
        message.contains("400") && message.contains("fake 400"),
        "{message}"
    );
    let Failure::Refused(message) = &outcomes[5] else {
        unreachable!()
    };
    assert!(message.contains("plain refusal"), "{message}");
    let Failure::Transient { message, .. } = &outcomes[6] else {
        unreachable!()
    };
    assert!(
        message.contains("unreadable reply") && message.contains("gateway"),
        "{message}"
    );
    let Failure::Transient { message, .. } = &outcomes[7] else {
        unreachable!()
    };
    assert!(
        message.contains("no choices") && message.contains("overloaded"),
        "{message}"
    );
}

#[tokio::test]
async fn connect_errors_and_timeouts_are_transient() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let cfg = MindConfig {
        provider: "openai".into(),
        base_url: format!("http://{addr}/v1"),
        ..MindConfig::default()
    };
    let failure = OpenAi::new(&cfg)
        .unwrap()
        .attempt(&[], &[])
        .await
        .unwrap_err();
    assert!(
        matches!(&failure, Failure::Transient { message, .. } if message.contains("could not connect")),
        "{failure:?}"
    );

    let (cfg, _fake) = serve(vec![Reply::Late(Duration::from_secs(5))]).await;
    let client = OpenAi::with_timeouts(&cfg, CONNECT_TIMEOUT, Duration::from_millis(200)).unwrap();
    let failure = client.attempt(&[], &[]).await.unwrap_err();
    assert!(
        matches!(&failure, Failure::Transient { message, .. } if message.contains("timed out")),
        "{failure:?}"
    );
}

#[tokio::test]
async fn retried_over_http_500_but_not_400() {
    let (cfg, fake) = serve(vec![status(500), ok(&final_text("recovered"))]).await;
    let sleep = RecordingSleep::default();
    let mind = Retrying::with_sleep(OpenAi::new(&cfg).unwrap(), sleep.clone());
    let completion = mind.complete(&[Message::user("go")], &[]).await.unwrap();
    assert_eq!(completion.text.as_deref(), Some("recovered"));
    assert_eq!(sleep.requested(), [Duration::from_secs(1)]);
    assert_eq!(fake.seen.lock().len(), 2);

    let (cfg, fake) = serve(vec![status(400)]).await;
    let sleep = RecordingSleep::default();
    let mind = Retrying::with_sleep(OpenAi::new(&cfg).unwrap(), sleep.clone());
    let error = mind
        .complete(&[Message::user("go")], &[])
        .await
        .unwrap_err();
    assert!(matches!(error, MindError::InvalidRequest(_)), "{error:?}");
    assert!(sleep.requested().is_empty());
    assert_eq!(fake.seen.lock().len(), 1);

    let (cfg, fake) = serve((0..4).map(|_| status(503)).collect()).await;
    let sleep = RecordingSleep::default();
    let mind = Retrying::with_sleep(OpenAi::new(&cfg).unwrap(), sleep.clone());
    let error = mind
        .complete(&[Message::user("go")], &[])
        .await
        .unwrap_err();
    assert!(matches!(error, MindError::Unavailable(_)), "{error:?}");
    assert_eq!(sleep.requested(), BACKOFF);
    assert_eq!(fake.seen.lock().len(), 4);
}

#[test]
fn bad_base_urls_are_refused_at_start() {
    for url in ["", "localhost:11434", "ftp://example.com"] {
        let cfg = MindConfig {
            base_url: url.into(),
            ..MindConfig::default()
        };
        assert!(OpenAi::new(&cfg).is_err(), "{url:?}");
    }
}
