//! The client against the scripted local server (`remote::fake`).

use std::{sync::Arc, time::Duration};

use serde_json::{Value, json};

use super::*;
use crate::mind::{
    BACKOFF, Mind, MindError, Note, RecordingSleep, Retrying, ToolCall, Usage,
    remote::fake::{self, Fake, Reply, ok, status},
};

/// Serves `replies` in order; returns the config pointing at the server, and the fake.
async fn serve(replies: Vec<Reply>) -> (MindConfig, Arc<Fake>) {
    fake::serve("openai", "chat/completions", replies).await
}

fn final_text(text: &str) -> Value {
    json!({"choices": [{"message": {"role": "assistant", "content": text}}]})
}

fn memory_tool() -> ToolSpec {
    ToolSpec {
        name: "service_memory_search".into(),
        description: "Search memory".into(),
        parameters: json!({"type": "object", "properties": {"query": {"type": "string"}}}).into(),
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
    let completion = client
        .attempt(None, &messages, &[memory_tool()])
        .await
        .unwrap();

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
    let seen = fake.bodies();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        fake.header(0, "authorization").as_deref(),
        Some("Bearer sk-test")
    );
    assert_eq!(
        seen[0],
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
    let completion = client
        .attempt(None, &[Message::user("go")], &[])
        .await
        .unwrap();
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

    let completion = client
        .attempt(None, &[Message::user("go")], &[])
        .await
        .unwrap();
    assert_eq!(completion.text.as_deref(), Some("hi"));
    assert!(completion.tool_calls.is_empty());

    let seen = fake.bodies();
    assert_eq!(
        fake.header(0, "authorization"),
        None,
        "no key configured, no Authorization header"
    );
    assert!(seen[0].get("tools").is_none(), "tools omitted when empty");
    assert_eq!(
        seen[0]["messages"],
        json!([{"role": "user", "content": "go"}])
    );
}

#[tokio::test]
async fn a_reply_without_choices_is_transient() {
    let (cfg, _fake) = serve(vec![ok(&json!({"error": {"message": "overloaded"}}))]).await;
    let failure = OpenAi::new(&cfg)
        .unwrap()
        .attempt(None, &[Message::user("go")], &[])
        .await
        .unwrap_err();
    let Failure::Transient { message, .. } = &failure else {
        panic!("{failure:?}")
    };
    assert!(
        message.contains("unreadable reply")
            && message.contains("no choices")
            && message.contains("overloaded"),
        "{message}"
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
    assert_eq!(fake.bodies().len(), 2);

    let (cfg, fake) = serve(vec![status(400)]).await;
    let sleep = RecordingSleep::default();
    let mind = Retrying::with_sleep(OpenAi::new(&cfg).unwrap(), sleep.clone());
    let error = mind
        .complete(&[Message::user("go")], &[])
        .await
        .unwrap_err();
    assert!(matches!(error, MindError::InvalidRequest(_)), "{error:?}");
    assert!(sleep.requested().is_empty());
    assert_eq!(fake.bodies().len(), 1);

    let (cfg, fake) = serve((0..4).map(|_| status(503)).collect()).await;
    let sleep = RecordingSleep::default();
    let mind = Retrying::with_sleep(OpenAi::new(&cfg).unwrap(), sleep.clone());
    let error = mind
        .complete(&[Message::user("go")], &[])
        .await
        .unwrap_err();
    assert!(matches!(error, MindError::Unavailable(_)), "{error:?}");
    assert_eq!(sleep.requested(), BACKOFF);
    assert_eq!(fake.bodies().len(), 4);
}

/// Many OpenAI-compatible servers ignore the offered tool and answer in prose: the prose is
/// the summary, under the cluster centre's key.
#[tokio::test]
async fn a_summary_answered_in_plain_text_is_kept() {
    let prose = "The user drinks green tea, never coffee.";
    let (cfg, fake) = serve(vec![ok(&final_text(prose))]).await;
    let mind = Retrying::with_sleep(OpenAi::new(&cfg).unwrap(), RecordingSleep::default());
    let notes = [
        ("tea_pref", "The user drinks green tea."),
        ("no_coffee", "Never coffee."),
    ]
    .map(|(key, value)| Note {
        key: key.into(),
        value: value.into(),
    });
    let summary = mind.summarize(&notes).await.unwrap();
    assert_eq!(summary.key, "tea_pref_summary");
    assert_eq!(summary.value, prose);
    let seen = fake.bodies();
    assert_eq!(seen.len(), 1, "a prose answer is not retried");
    assert_eq!(seen[0]["tools"][0]["function"]["name"], "write_summary");
}

#[tokio::test]
async fn a_request_goes_out_on_the_turn_taken_for_it_while_others_wait_theirs() {
    let replies = vec![ok(&final_text("first")), ok(&final_text("second"))];
    let (mut cfg, fake) = serve(replies).await;
    cfg.max_connections = 1;
    let mind = Retrying::new(OpenAi::new(&cfg).unwrap());
    let turn = mind.turn().await;
    assert!(turn.is_some(), "a remote provider's connections are turns");
    // The one connection is the turn's: a call that waits for its own is not sent...
    let (first, second) = ([Message::user("first")], [Message::user("second")]);
    let mut waiting = mind.complete(&second, &[]);
    let blocked = tokio::time::timeout(Duration::from_millis(200), &mut waiting).await;
    assert!(blocked.is_err() && fake.bodies().is_empty());
    // ...while one given the turn goes out on it, and then gives it up.
    let sent = mind.complete_on(turn, &first, &[]).await;
    assert_eq!(sent.unwrap().text.as_deref(), Some("first"));
    assert_eq!(waiting.await.unwrap().text.as_deref(), Some("second"));
    assert_eq!(fake.bodies().len(), 2);
}
