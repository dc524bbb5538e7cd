use serde_json::json;

use super::*;
use crate::{
    Role, Usage,
    testing::{ScriptedMind, TestContext},
};

fn put(id: &str, key: &str, value: &str) -> ToolCall {
    ToolCall::new(
        id,
        "service_memory_put",
        &json!({"key": key, "value": value}),
    )
}

fn run(t: &TestContext) -> Result<String, String> {
    ToolLoop::new("system prompt").run(t.ctx(), "the task")
}

#[test]
fn sends_the_prompt_task_and_tools_then_feeds_results_back() {
    let t = TestContext::new(ScriptedMind::new([
        Completion::text("Saving two facts.")
            .and_call(put("c1", "a", "1"))
            .and_call(put("c2", "b", "2")),
        Completion::text("done"),
    ]));

    assert_eq!(run(&t).as_deref(), Ok("done"));

    let requests = t.mind().requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].messages,
        [Message::system("system prompt"), Message::user("the task")]
    );
    assert_eq!(requests[0].tools, memory_tools());
    let second = &requests[1].messages;
    assert_eq!(second.len(), 5);
    assert_eq!(second[2].role, Role::Assistant);
    assert_eq!(second[2].content, "Saving two facts.");
    assert_eq!(
        second[2].tool_calls,
        [put("c1", "a", "1"), put("c2", "b", "2")]
    );
    for (message, (id, key)) in second[3..].iter().zip([("c1", "a"), ("c2", "b")]) {
        assert_eq!(
            (message.role, message.tool_call_id.as_deref()),
            (Role::Tool, Some(id))
        );
        let result: Value = serde_json::from_str(&message.content).unwrap();
        assert_eq!(result["key"], key);
    }
    assert_eq!(t.memory().len(), 2);
}

#[test]
fn reports_progress_and_logs_every_event() {
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 3,
    };
    let t = TestContext::new(ScriptedMind::new([
        Completion::text("Let me save it.")
            .and_call(put("c1", "k", "v"))
            .with_usage(usage),
        Completion::text("Saved."),
    ]));

    run(&t).unwrap();

    let reports = t.progress().reports();
    assert_eq!(
        reports.first().unwrap(),
        &("info".to_string(), "started: the task".to_string())
    );
    assert_eq!(
        reports[1],
        ("tool_use".to_string(), "service_memory_put".to_string())
    );
    assert_eq!(
        reports.last().unwrap(),
        &("info".to_string(), "finished after 2 step(s)".to_string())
    );

    let logs = t.progress().logs();
    let kinds: Vec<LogKind> = logs.iter().map(|l| l.kind).collect();
    assert_eq!(
        kinds,
        [
            LogKind::Thinking,
            LogKind::ToolUse,
            LogKind::ToolResult,
            LogKind::Thinking
        ]
    );
    assert_eq!(logs[0].message, "Let me save it.");
    assert_eq!(logs[0].data.as_ref().unwrap()["usage"]["input_tokens"], 10);
    assert_eq!(logs[1].message, "service_memory_put");
    assert_eq!(
        logs[1].data,
        Some(
            json!({"id": "c1", "name": "service_memory_put", "arguments": {"key": "k", "value": "v"}})
        )
    );
    assert!(
        logs[2].message.contains("\"memory_id\""),
        "{}",
        logs[2].message
    );
    assert_eq!(
        logs[2].data,
        Some(json!({"id": "c1", "name": "service_memory_put"}))
    );
    assert_eq!(logs[3].message, "Saved.");
}

#[test]
fn unknown_tools_and_bad_arguments_are_answered_and_the_loop_goes_on() {
    let bad = ToolCall {
        id: "c2".into(),
        name: "service_memory_get".into(),
        arguments_json: "{broken".into(),
    };
    let t = TestContext::new(ScriptedMind::new([
        Completion::call(ToolCall::new("c1", "web_search", &json!({"q": "x"}))).and_call(bad),
        Completion::text("fine"),
    ]));

    assert_eq!(run(&t).as_deref(), Ok("fine"));

    let results = t.progress().logs_of(LogKind::ToolResult);
    assert!(
        results[0].starts_with(
            r#"Unknown tool "web_search": the tools available are service_memory_put"#
        ),
        "{}",
        results[0]
    );
    assert!(
        results[1].starts_with("Service Memory failed: invalid arguments: "),
        "{}",
        results[1]
    );
    // The unparseable arguments are logged as the raw text.
    assert_eq!(
        t.progress().logs()[2].data.as_ref().unwrap()["arguments"],
        "{broken"
    );
}

#[test]
fn the_step_cap_ends_the_run_with_a_clear_error() {
    let list = || Completion::call(ToolCall::new("c", "service_memory_list", &json!({})));
    let t = TestContext::new(ScriptedMind::new([list(), list(), list(), list()]));

    let err = ToolLoop::new("p")
        .max_steps(3)
        .run(t.ctx(), "task")
        .unwrap_err();

    assert_eq!(
        err,
        "gave up after 3 steps without a final answer (the step cap)"
    );
    assert_eq!(t.mind().requests().len(), 3);
}

#[test]
fn mind_failures_end_the_run() {
    for error in [
        MindError::Unavailable("down".into()),
        MindError::InvalidRequest("too big".into()),
    ] {
        let t = TestContext::new(ScriptedMind::default().then_error(error.clone()));
        assert_eq!(run(&t), Err(error.to_string()));
    }
}

#[test]
fn a_stop_requested_while_the_mind_thinks_returns_stopped() {
    let t =
        TestContext::new(ScriptedMind::new([Completion::call(put("c1", "k", "v"))]).then_stop());

    assert_eq!(run(&t), Err("stopped".into()));
    assert_eq!(
        t.progress().reports().last().unwrap().1,
        "stopped on request"
    );
}

#[test]
fn a_stop_before_the_run_skips_the_mind() {
    let t = TestContext::new(ScriptedMind::new([Completion::text("never")]));
    t.request_stop();

    assert_eq!(run(&t), Err("stopped".into()));
    assert!(t.mind().requests().is_empty());
}

fn echo_spec() -> ToolSpec {
    ToolSpec::new(
        "echo",
        "Says its text back",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
    )
}

fn echo(args: &Value) -> Result<String, String> {
    args["text"]
        .as_str()
        .map(|s| format!("echo: {s}"))
        .ok_or_else(|| "text must be a string".to_string())
}

#[test]
fn own_tools_are_offered_beside_the_memory_tools_and_their_results_fed_back() {
    let t = TestContext::new(ScriptedMind::new([
        Completion::call(ToolCall::new("c1", "echo", &json!({"text": "hi"})))
            .and_call(ToolCall::new("c2", "echo", &json!({"text": 7})))
            .and_call(put("c3", "a", "1")),
        Completion::text("done"),
    ]));
    let answer = ToolLoop::new("p")
        .tool(echo_spec(), echo)
        .run(t.ctx(), "task");
    assert_eq!(answer.as_deref(), Ok("done"));

    let requests = t.mind().requests();
    let mut offered = memory_tools();
    offered.push(echo_spec());
    assert_eq!(requests[0].tools, offered);
    let results: Vec<&str> = requests[1].messages[3..]
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(results[0], "echo: hi");
    assert_eq!(results[1], "Tool echo failed: text must be a string");
    assert!(results[2].contains("\"key\":\"a\""), "{results:?}");
    assert_eq!(t.memory().value("a").as_deref(), Some("1"));
    assert_eq!(
        t.progress().reports_of("tool_use"),
        ["echo", "echo", "service_memory_put"]
    );
}

#[test]
fn arguments_that_are_not_json_are_the_tool_s_failure() {
    let mut call = ToolCall::new("c1", "echo", &json!({}));
    call.arguments_json = "{not json".into();
    let t = TestContext::new(ScriptedMind::new([
        Completion::call(call),
        Completion::text("ok"),
    ]));
    ToolLoop::new("p")
        .tool(echo_spec(), echo)
        .run(t.ctx(), "task")
        .unwrap();
    let fed_back = &t.mind().requests()[1].messages[3].content;
    assert!(
        fed_back.starts_with("Tool echo failed: the arguments are not valid JSON"),
        "{fed_back}"
    );
}

#[test]
fn an_own_tool_replaces_a_tool_of_the_same_name() {
    let spec = ToolSpec::new("service_memory_get", "Mine", json!({"type": "object"}));
    let t = TestContext::new(ScriptedMind::new([
        Completion::call(ToolCall::new(
            "c1",
            "service_memory_get",
            &json!({"key": "x"}),
        )),
        Completion::text("ok"),
    ]));
    ToolLoop::new("p")
        .tool(spec.clone(), |_| Ok("mine".into()))
        .run(t.ctx(), "task")
        .unwrap();
    let requests = t.mind().requests();
    let named: Vec<&ToolSpec> = requests[0]
        .tools
        .iter()
        .filter(|s| s.name == "service_memory_get")
        .collect();
    assert_eq!(named, [&spec]);
    assert_eq!(requests[1].messages[3].content, "mine");
}
