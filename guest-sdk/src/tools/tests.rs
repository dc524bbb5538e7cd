use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::*;
use crate::testing::{InMemoryMemory, ScriptedMind, TestContext};

fn ctx() -> TestContext {
    TestContext::default()
}

fn call(t: &TestContext, name: &str, args: &Value) -> String {
    call_memory_tool(t.ctx().memory(), &ToolCall::new("call", name, args))
}

fn call_raw(t: &TestContext, name: &str, arguments_json: &str) -> String {
    let call = ToolCall {
        id: "call".into(),
        name: name.into(),
        arguments_json: arguments_json.into(),
    };
    call_memory_tool(t.ctx().memory(), &call)
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn keys(value: &Value) -> BTreeSet<&str> {
    value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

fn set<'a>(names: &[&'a str]) -> BTreeSet<&'a str> {
    names.iter().copied().collect()
}

#[test]
fn five_tools_with_the_spec_names() {
    let names: Vec<String> = memory_tools().into_iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "service_memory_put",
            "service_memory_get",
            "service_memory_search",
            "service_memory_list",
            "service_memory_delete"
        ]
    );
    for tool in memory_tools() {
        assert!(is_memory_tool(&tool.name));
        assert_eq!(tool.parameters["type"], "object", "{}", tool.name);
        assert!(!tool.description.is_empty());
    }
}

#[test]
fn schemas_carry_the_spec_inputs_and_defaults() {
    let tools = memory_tools();
    let schema = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .parameters
            .clone()
    };

    let put = schema("service_memory_put");
    assert_eq!(put["required"], json!(["key", "value"]));
    assert_eq!(
        keys(&put["properties"]),
        set(&[
            "key",
            "value",
            "namespace",
            "tags",
            "importance",
            "expires_in_days",
            "observed_at"
        ])
    );
    assert_eq!(put["properties"]["value"]["maxLength"], 5000);
    assert_eq!(put["properties"]["namespace"]["default"], "default");
    assert_eq!(put["properties"]["tags"]["maxItems"], 20);
    assert_eq!(put["properties"]["tags"]["items"]["maxLength"], 50);
    let importance = &put["properties"]["importance"];
    assert_eq!(
        (importance["minimum"].clone(), importance["maximum"].clone()),
        (json!(1), json!(10))
    );
    assert_eq!(importance["default"], 5);

    for name in ["service_memory_get", "service_memory_delete"] {
        let s = schema(name);
        assert_eq!(s["required"], json!(["key"]));
        assert_eq!(keys(&s["properties"]), set(&["key", "namespace"]));
        assert_eq!(s["properties"]["namespace"]["default"], "default");
    }

    let search = schema("service_memory_search");
    assert_eq!(search["required"], json!(["query"]));
    assert_eq!(
        keys(&search["properties"]),
        set(&["query", "namespace", "tags", "limit", "mode"])
    );
    assert_eq!(search["properties"]["limit"]["default"], 10);
    assert_eq!(search["properties"]["limit"]["maximum"], 50);
    assert_eq!(
        search["properties"]["mode"]["enum"],
        json!(["hybrid", "semantic", "keyword"])
    );
    assert_eq!(search["properties"]["mode"]["default"], "hybrid");

    let list = schema("service_memory_list");
    assert!(list.get("required").is_none());
    assert_eq!(
        keys(&list["properties"]),
        set(&["namespace", "tags", "limit"])
    );
    assert_eq!(list["properties"]["limit"]["default"], 50);
    assert_eq!(list["properties"]["limit"]["maximum"], 200);
}

#[test]
fn put_returns_id_key_and_namespace() {
    let t = ctx();
    let out = json_of(&call(
        &t,
        "service_memory_put",
        &json!({"key": "city", "value": "Lisbon"}),
    ));
    assert_eq!(keys(&out), set(&["memory_id", "key", "namespace"]));
    assert!(out["memory_id"].as_str().unwrap().starts_with("mem_"));
    assert_eq!(
        (out["key"].clone(), out["namespace"].clone()),
        (json!("city"), json!("default"))
    );

    let args = json!({"key": "city", "value": "Porto", "namespace": "travel", "tags": ["trip"], "importance": 9, "expires_in_days": 3});
    let out = json_of(&call(&t, "service_memory_put", &args));
    assert_eq!(out["namespace"], "travel");
    let stored = t.memory().peek("travel", "city").unwrap();
    assert_eq!(
        (stored.tags, stored.importance),
        (vec!["trip".to_string()], 9.0)
    );
}

#[test]
fn an_observed_time_ages_the_memory_in_search() {
    let t = ctx();
    let day = 86_400_000;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let args = json!({"key": "city", "value": "Lisbon", "observed_at": now - 30 * day});
    json_of(&call(&t, "service_memory_put", &args));
    let out = json_of(&call(
        &t,
        "service_memory_search",
        &json!({"query": "Lisbon"}),
    ));
    let decay = out["results"][0]["breakdown"]["timeDecay"]
        .as_f64()
        .unwrap();
    assert!((decay - 0.5).abs() < 0.01, "one half-life old: {out}");
}

#[test]
fn get_returns_the_record_or_found_false() {
    let t = ctx();
    call(
        &t,
        "service_memory_put",
        &json!({"key": "city", "value": "Lisbon", "tags": ["home"]}),
    );
    let out = json_of(&call(&t, "service_memory_get", &json!({"key": "city"})));
    assert_eq!(
        keys(&out),
        set(&[
            "found",
            "value",
            "key",
            "namespace",
            "tags",
            "importance",
            "created_at",
            "updated_at",
            "access_count"
        ])
    );
    assert_eq!(out["found"], true);
    assert_eq!(out["value"], "Lisbon");
    assert_eq!(out["tags"], json!(["home"]));
    assert_eq!(
        out["importance"],
        json!(5),
        "whole importances render as integers"
    );
    assert_eq!(out["access_count"], 1);
    assert!(out["created_at"].as_u64().unwrap() > 0);

    assert_eq!(
        call(
            &t,
            "service_memory_get",
            &json!({"key": "city", "namespace": "other"})
        ),
        r#"{"found":false}"#
    );
    assert_eq!(
        call(&t, "service_memory_get", &json!({"key": "nothing_here"})),
        r#"{"found":false}"#
    );
}

#[test]
fn search_returns_ranked_results_with_breakdown() {
    let t = ctx();
    call(
        &t,
        "service_memory_put",
        &json!({"key": "food", "value": "pizza with mushrooms", "importance": 7.5}),
    );
    call(
        &t,
        "service_memory_put",
        &json!({"key": "pet", "value": "a cat named Miso"}),
    );
    let out = json_of(&call(
        &t,
        "service_memory_search",
        &json!({"query": "mushrooms pizza"}),
    ));
    assert_eq!(keys(&out), set(&["results"]));
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    let hit = &results[0];
    assert_eq!(
        keys(hit),
        set(&[
            "key",
            "value",
            "namespace",
            "tags",
            "importance",
            "score",
            "breakdown",
            "created_at"
        ])
    );
    assert_eq!(
        keys(&hit["breakdown"]),
        set(&["semantic", "keyword", "importance", "timeDecay"])
    );
    assert_eq!(hit["importance"], json!(7.5));
    let score = hit["score"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&score), "{score}");

    assert_eq!(
        call(&t, "service_memory_search", &json!({"query": "weather"})),
        r#"{"results":[]}"#
    );
}

#[test]
fn list_returns_memories_newest_first_with_a_count() {
    let t = ctx();
    call(
        &t,
        "service_memory_put",
        &json!({"key": "first", "value": "1", "tags": ["n"]}),
    );
    call(
        &t,
        "service_memory_put",
        &json!({"key": "second", "value": "2", "namespace": "other"}),
    );
    call(
        &t,
        "service_memory_put",
        &json!({"key": "third", "value": "3", "tags": ["n"]}),
    );

    let out = json_of(&call_raw(&t, "service_memory_list", ""));
    assert_eq!(keys(&out), set(&["memories", "count"]));
    assert_eq!(out["count"], 3);
    let listed: Vec<&str> = out["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["key"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["third", "second", "first"]);
    assert_eq!(
        keys(&out["memories"][0]),
        set(&[
            "key",
            "value",
            "namespace",
            "tags",
            "importance",
            "created_at",
            "updated_at",
            "access_count"
        ])
    );

    let out = json_of(&call(
        &t,
        "service_memory_list",
        &json!({"tags": ["n"], "limit": 1}),
    ));
    assert_eq!(
        (out["count"].clone(), out["memories"][0]["key"].clone()),
        (json!(1), json!("third"))
    );
    let out = json_of(&call(
        &t,
        "service_memory_list",
        &json!({"namespace": "other", "limit": 1000}),
    ));
    assert_eq!(out["memories"][0]["key"], "second");
}

#[test]
fn delete_soft_deletes() {
    let t = ctx();
    call(
        &t,
        "service_memory_put",
        &json!({"key": "stale", "value": "old"}),
    );
    assert_eq!(
        call(&t, "service_memory_delete", &json!({"key": "stale"})),
        r#"{"deleted":true}"#
    );
    assert_eq!(
        call(&t, "service_memory_get", &json!({"key": "stale"})),
        r#"{"found":false}"#
    );
    assert_eq!(
        call(&t, "service_memory_delete", &json!({"key": "stale"})),
        r#"Service Memory failed: no memory with key "stale" in namespace "default""#
    );
    assert_eq!(
        t.memory().version_count("default", "stale"),
        1,
        "the version is kept"
    );
}

#[test]
fn quota_failures_begin_with_the_spec_text() {
    let t = TestContext::with_memory(ScriptedMind::default(), InMemoryMemory::new().with_quota(1));
    call(
        &t,
        "service_memory_put",
        &json!({"key": "one", "value": "1"}),
    );
    let out = call(
        &t,
        "service_memory_put",
        &json!({"key": "two", "value": "2"}),
    );
    assert!(
        out.starts_with("Service Memory failed: memory quota exceeded"),
        "{out}"
    );
}

#[test]
fn quota_text_keeps_the_prefix_whatever_the_host_says() {
    let text = |detail: &str| {
        format!(
            "Service Memory failed: {}",
            MemoryError::QuotaExceeded(detail.into())
        )
    };
    assert_eq!(text(""), "Service Memory failed: memory quota exceeded");
    assert_eq!(
        text("pool full"),
        "Service Memory failed: memory quota exceeded: pool full"
    );
    assert_eq!(
        text("memory quota exceeded: 5 of 5"),
        "Service Memory failed: memory quota exceeded: 5 of 5"
    );
}

#[test]
fn validation_failures_say_what_to_fix() {
    let t = ctx();
    let cases = [
        (
            json!({"key": "Bad Key", "value": "x"}),
            "must be snake_case",
        ),
        (
            json!({"key": "k", "value": "x".repeat(5001)}),
            "value is 5001 characters; the limit is 5000",
        ),
        (
            json!({"key": "k", "value": "x", "importance": 11}),
            "importance must be a number from 1 to 10",
        ),
        (
            json!({"key": "k", "value": "x", "tags": vec!["t"; 21]}),
            "21 tags given; the limit is 20",
        ),
        (
            json!({"key": "k", "value": "x", "observed_at": u64::MAX}),
            "observed_at must not be in the future",
        ),
    ];
    for (args, what) in cases {
        let out = call(&t, "service_memory_put", &args);
        assert!(out.starts_with("Service Memory failed: "), "{out}");
        assert!(out.contains(what), "{out} lacks {what}");
    }
    let out = call(
        &t,
        "service_memory_search",
        &json!({"query": "x", "mode": "fuzzy"}),
    );
    assert_eq!(
        out,
        r#"Service Memory failed: mode "fuzzy" is unknown: use hybrid, semantic or keyword"#
    );
    let out = call(&t, "service_memory_list", &json!({"limit": 0}));
    assert_eq!(
        out,
        "Service Memory failed: limit must be a whole number from 1 to 200"
    );
    assert!(t.memory().is_empty());
}

#[test]
fn unparseable_arguments_are_invalid_arguments() {
    let t = ctx();
    let cases = [
        (
            "service_memory_put",
            "{not json",
            "Service Memory failed: invalid arguments: ",
        ),
        (
            "service_memory_put",
            "[1, 2]",
            "Service Memory failed: invalid arguments: expected a JSON object, got [1,2]",
        ),
        (
            "service_memory_put",
            r#"{"value": "x"}"#,
            "Service Memory failed: invalid arguments: `key` is required",
        ),
        (
            "service_memory_put",
            r#"{"key": 1, "value": "x"}"#,
            "Service Memory failed: invalid arguments: `key` must be a string",
        ),
        (
            "service_memory_put",
            r#"{"key": "k", "value": "x", "tags": "a"}"#,
            "Service Memory failed: invalid arguments: `tags` must be an array of strings",
        ),
        (
            "service_memory_put",
            r#"{"key": "k", "value": "x", "importance": "high"}"#,
            "Service Memory failed: invalid arguments: `importance` must be a number",
        ),
        (
            "service_memory_put",
            r#"{"key": "k", "value": "x", "observed_at": 1.5e12}"#,
            "Service Memory failed: invalid arguments: `observed_at` must be a whole number of epoch milliseconds",
        ),
        (
            "service_memory_put",
            r#"{"key": "k", "value": "x", "observed_at": -1}"#,
            "Service Memory failed: invalid arguments: `observed_at` must be a whole number of epoch milliseconds",
        ),
        (
            "service_memory_search",
            "{}",
            "Service Memory failed: invalid arguments: `query` is required",
        ),
        (
            "service_memory_search",
            r#"{"query": "q", "limit": 2.5}"#,
            "Service Memory failed: invalid arguments: `limit` must be a whole number from 1 to 50",
        ),
        (
            "service_memory_list",
            r#"{"limit": -1}"#,
            "Service Memory failed: invalid arguments: `limit` must be a whole number from 1 to 200",
        ),
    ];
    for (name, args, expected) in cases {
        let out = call_raw(&t, name, args);
        assert!(out.starts_with(expected), "{name} {args}: {out}");
    }
}

#[test]
fn null_members_take_their_defaults() {
    let t = ctx();
    let args = r#"{"key": "k", "value": "v", "namespace": null, "tags": null, "importance": null}"#;
    let out = json_of(&call_raw(&t, "service_memory_put", args));
    assert_eq!(out["namespace"], "default");
    assert_eq!(t.memory().peek("default", "k").unwrap().importance, 5.0);
}

#[test]
fn without_memory_channel_the_text_is_exact() {
    let t = TestContext::without_memory(ScriptedMind::default());
    for name in MEMORY_TOOL_NAMES {
        let out = call(&t, name, &json!({"key": "k", "value": "v", "query": "q"}));
        assert_eq!(
            out, "Service Memory failed: memory channel is not configured.",
            "{name}"
        );
    }
}

#[test]
fn a_stopping_agent_is_told_so() {
    let t = ctx();
    t.request_stop();
    let out = call(&t, "service_memory_get", &json!({"key": "k"}));
    assert_eq!(out, "Service Memory failed: the agent is stopping");
}

#[test]
fn other_tools_are_unknown() {
    let t = ctx();
    let out = call(&t, "web_search", &json!({}));
    assert!(
        out.starts_with(r#"Unknown tool "web_search": the memory tools are service_memory_put"#),
        "{out}"
    );
}
