//! The offline Mind's rules, one phrasing at a time, and whole runs against a model
//! memory.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::task::{Intent, key_for};
use super::*;
use crate::memory::validate_key;

fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("the {name} tool"),
        parameters: json!({"type": "object"}).into(),
    }
}

fn memory_tools() -> Vec<ToolSpec> {
    [PUT, GET, LIST, DELETE, SEARCH]
        .into_iter()
        .map(tool)
        .collect()
}

fn mind() -> Offline {
    Offline::new("wasmind-offline")
}

/// The single call of a completion, with parsed arguments.
fn only_call(c: &Completion) -> (&str, Value) {
    assert_eq!(c.tool_calls.len(), 1, "{c:?}");
    assert_eq!(c.text, None);
    let call = &c.tool_calls[0];
    (
        call.name.as_str(),
        serde_json::from_str(&call.arguments).unwrap(),
    )
}

fn final_text(c: &Completion) -> &str {
    assert!(c.tool_calls.is_empty(), "{c:?}");
    let text = c.text.as_deref().expect("a final text");
    assert!(text.contains("(offline rule-based Mind)"), "{text}");
    text
}

/// The conversation after `first` called its tool and the tool answered `result`.
fn answered(task: &str, first: &Completion, result: &str) -> Vec<Message> {
    let call = first.tool_calls[0].clone();
    let id = call.id.clone();
    vec![
        Message::system("You are an agent."),
        Message::user(task),
        Message::assistant("", vec![call]),
        Message::tool(id, result),
    ]
}

#[test]
fn remember_phrasings_put_one_memory() {
    for (task, value) in [
        (
            "remember that my favourite colour is blue",
            "my favourite colour is blue",
        ),
        (
            "Remember: the deploy window is Friday 14:00.",
            "the deploy window is Friday 14:00",
        ),
        ("Please note that Ada prefers tea!", "Ada prefers tea"),
        (
            "Can you remember that the user's name is Zoë",
            "the user's name is Zoë",
        ),
    ] {
        let c = mind().think(&[Message::user(task)], &memory_tools());
        let (name, args) = only_call(&c);
        assert_eq!(name, PUT, "{task}");
        assert_eq!(args["value"], value, "{task}");
        let key = args["key"].as_str().unwrap();
        validate_key(key).unwrap();
        assert_eq!(c.tool_calls[0].id, "call_1");
        assert!(c.usage.input_tokens > 0 && c.usage.output_tokens > 0);
    }
    let c = mind().think(
        &[Message::user("remember that the user's name is Zoë")],
        &memory_tools(),
    );
    assert_eq!(only_call(&c).1["key"], "the_users_name_is_zo");
}

#[test]
fn derived_keys_are_always_valid() {
    assert_eq!(
        key_for("my favourite colour is blue and green"),
        "my_favourite_colour_is_blue"
    );
    assert_eq!(key_for("42 is the answer"), "note_42_is_the_answer");
    assert_eq!(key_for("¿¡…!?"), "note");
    assert_eq!(key_for(""), "note");
    assert_eq!(key_for("日本語 text"), "text");
    let long = "a".repeat(300);
    assert_eq!(key_for(&long).len(), 128);
    for text in [
        "x",
        "Hello, World",
        "e-mail: a@b.c",
        "__init__ 9",
        &long,
        "Ünïcödé ōnly",
    ] {
        let key = key_for(text);
        validate_key(&key).unwrap_or_else(|e| panic!("{text:?} → {key:?}: {e}"));
        assert!(
            key.split('_').filter(|w| !w.is_empty()).count() <= 6,
            "{key}"
        );
    }
}

#[test]
fn phrasings_are_recognised() {
    let cases = [
        (
            "what do you remember about my colours?",
            Intent::Recall("my colours".into()),
        ),
        ("What do you know about Ada", Intent::Recall("Ada".into())),
        (
            "recall the deploy window.",
            Intent::Recall("the deploy window".into()),
        ),
        (
            "forget my favourite colour",
            Intent::Forget("my favourite colour".into()),
        ),
        ("Please forget about Ada.", Intent::Forget("Ada".into())),
        ("remember that", Intent::Other("remember that".into())),
        (
            "Do you remember the 90s?",
            Intent::Other("Do you remember the 90s?".into()),
        ),
        ("  ", Intent::Other(String::new())),
    ];
    for (task, intent) in cases {
        assert_eq!(Intent::of(task), intent, "{task:?}");
    }
}

#[test]
fn recall_searches_and_lists_what_was_found() {
    let task = "what do you know about colours?";
    let first = mind().think(&[Message::user(task)], &memory_tools());
    assert_eq!(only_call(&first), (SEARCH, json!({"query": "colours"})));

    let result = json!({"results": [
        {"key": "fav_colour", "value": "blue", "namespace": "default", "score": 0.9},
        {"key": "car_colour", "value": "red", "namespace": "default", "score": 0.4}
    ]});
    let last = mind().think(
        &answered(task, &first, &result.to_string()),
        &memory_tools(),
    );
    let text = final_text(&last);
    assert!(
        text.contains("- blue (`fav_colour`)") && text.contains("- red (`car_colour`)"),
        "{text}"
    );

    let none = mind().think(
        &answered(task, &first, r#"{"results": []}"#),
        &memory_tools(),
    );
    assert!(final_text(&none).contains("found nothing in memory about \"colours\""));
}

#[test]
fn put_result_is_acknowledged() {
    let task = "remember that Ada prefers tea";
    let first = mind().think(&[Message::user(task)], &memory_tools());
    let result = r#"{"memory_id": "mem_01", "key": "ada_prefers_tea", "namespace": "default"}"#;
    let last = mind().think(&answered(task, &first, result), &memory_tools());
    assert_eq!(
        final_text(&last),
        "I'll remember that: Ada prefers tea. Saved as `ada_prefers_tea`. (offline rule-based Mind)"
    );
}

#[test]
fn failures_are_quoted() {
    let task = "remember that Ada prefers tea";
    let first = mind().think(&[Message::user(task)], &memory_tools());
    let error = "Service Memory failed: memory quota exceeded: 1000 of 1000 live memories in use";
    let last = mind().think(&answered(task, &first, error), &memory_tools());
    let text = final_text(&last);
    assert!(
        text.starts_with("I couldn't save that to memory."),
        "{text}"
    );
    assert!(text.contains(&format!("\"{error}\"")), "{text}");

    let task = "recall Ada";
    let first = mind().think(&[Message::user(task)], &memory_tools());
    let error = "Service Memory failed: memory channel is not configured.";
    let last = mind().think(&answered(task, &first, error), &memory_tools());
    let text = final_text(&last);
    assert!(
        text.contains("couldn't search memory") && text.contains(error),
        "{text}"
    );
}

#[test]
fn forget_searches_then_deletes_the_best_hit() {
    let task = "forget my favourite colour";
    let first = mind().think(&[Message::user(task)], &memory_tools());
    assert_eq!(
        only_call(&first),
        (SEARCH, json!({"query": "my favourite colour"}))
    );

    let hits = json!({"results": [
        {"key": "car_colour", "value": "red", "namespace": "default", "score": 0.3},
        {"key": "fav_colour", "value": "blue", "namespace": "prefs", "score": 0.8}
    ]});
    let mut conversation = answered(task, &first, &hits.to_string());
    let second = mind().think(&conversation, &memory_tools());
    assert_eq!(
        only_call(&second),
        (DELETE, json!({"key": "fav_colour", "namespace": "prefs"}))
    );
    assert_eq!(second.tool_calls[0].id, "call_2");

    conversation.push(Message::assistant("", second.tool_calls));
    conversation.push(Message::tool("call_2", r#"{"deleted": true}"#));
    let last = mind().think(&conversation, &memory_tools());
    assert!(final_text(&last).starts_with("I've forgotten `fav_colour`: blue."));

    let nothing = mind().think(
        &answered(task, &first, r#"{"results": []}"#),
        &memory_tools(),
    );
    assert!(final_text(&nothing).contains("nothing to forget"));
}

#[test]
fn other_tasks_consult_memory() {
    let task = "Which editor should I install?";
    let first = mind().think(&[Message::user(task)], &memory_tools());
    assert_eq!(only_call(&first), (SEARCH, json!({"query": task})));
    let result = json!({"results": [{"key": "editor", "value": "Ada uses helix", "score": 0.5}]});
    let last = mind().think(
        &answered(task, &first, &result.to_string()),
        &memory_tools(),
    );
    assert!(final_text(&last).contains("- Ada uses helix (`editor`)"));
}

#[test]
fn only_offered_tools_are_called() {
    let c = mind().think(&[Message::user("what is 2 + 2?")], &[]);
    assert!(final_text(&c).contains("none were offered"));
    let c = mind().think(&[Message::user("remember that x is 1")], &[tool(SEARCH)]);
    assert!(final_text(&c).contains("can't remember"));
    let c = mind().think(&[Message::user("forget x")], &[tool(DELETE)]);
    assert_eq!(only_call(&c), (DELETE, json!({"key": "x"})));
    let c = mind().think(&[Message::user("recall x")], &[tool(PUT)]);
    assert!(final_text(&c).contains("can't look up"));
}

#[tokio::test]
async fn mind_trait_reports_the_configured_model() {
    let mind = Offline::new("my-offline");
    assert_eq!(Mind::model(&mind), "my-offline");
    let c = mind.complete(&[Message::user("hello")], &[]).await.unwrap();
    assert!(final_text(&c).contains("hello"));
}

/// Runs a whole agent loop against a model memory (key → value), as the runtime would.
fn run(task: &str, memory: &mut BTreeMap<String, String>) -> String {
    let tools = memory_tools();
    let mut conversation = vec![Message::user(task)];
    for _ in 0..5 {
        let step = mind().think(&conversation, &tools);
        if step.tool_calls.is_empty() {
            return step.text.unwrap();
        }
        conversation.push(Message::assistant("", step.tool_calls.clone()));
        for call in step.tool_calls {
            let args: Value = serde_json::from_str(&call.arguments).unwrap();
            let arg = |n: &str| args[n].as_str().unwrap().to_owned();
            let result = match call.name.as_str() {
                PUT => {
                    memory.insert(arg("key"), arg("value"));
                    json!({"memory_id": "mem_1", "key": arg("key"), "namespace": "default"})
                }
                DELETE => json!({"deleted": memory.remove(&arg("key")).is_some()}),
                SEARCH => {
                    let query = arg("query").to_lowercase();
                    let words: Vec<&str> = query.split_whitespace().collect();
                    let results: Vec<Value> = memory
                        .iter()
                        .filter(|(_, v)| words.iter().any(|w| v.to_lowercase().contains(w)))
                        .map(|(k, v)| json!({"key": k, "value": v, "namespace": "default", "score": 0.5}))
                        .collect();
                    json!({ "results": results })
                }
                other => panic!("unexpected tool {other}"),
            };
            conversation.push(Message::tool(call.id, result.to_string()));
        }
    }
    panic!("no final answer within 5 steps: {conversation:#?}")
}

#[test]
fn whole_runs_terminate_with_answers() {
    let mut memory = BTreeMap::new();
    let text = run("remember that the office wifi is Falcon", &mut memory);
    assert!(
        text.contains("I'll remember that: the office wifi is Falcon."),
        "{text}"
    );
    assert_eq!(
        memory.get("the_office_wifi_is_falcon").map(String::as_str),
        Some("the office wifi is Falcon")
    );

    let text = run("what do you remember about wifi?", &mut memory);
    assert!(text.contains("the office wifi is Falcon"), "{text}");

    let text = run("forget the wifi", &mut memory);
    assert!(
        text.contains("I've forgotten `the_office_wifi_is_falcon`"),
        "{text}"
    );
    assert!(memory.is_empty());

    let text = run("recall wifi", &mut memory);
    assert!(text.contains("found nothing"), "{text}");
}
