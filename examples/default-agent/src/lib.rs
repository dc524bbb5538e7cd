//! The agent every spawn runs: the task is the user message, the memory tools and the
//! tools the account registered (those its spawn's `tools` field names, when it has one)
//! are offered to the Mind, and the SDK's tool loop works until the Mind answers.

use wasmind_sdk::{Context, ToolLoop};

/// What the Mind is told before the task.
pub const SYSTEM_PROMPT: &str = "\
You are an autonomous agent working on the user's task. Work it out, then answer with the \
result alone.

You have a long-term memory shared with the user's other agents and kept between runs. \
Use it through these tools:
- service_memory_search: find memories by meaning and keywords, when you do not know the \
exact key. Search before answering questions about the user, their preferences, or earlier work.
- service_memory_get: read one memory by its exact key.
- service_memory_list: list recent memories, newest first.
- service_memory_put: save a fact worth keeping (key in snake_case, value up to 5,000 \
characters, optional namespace, tags and importance 1-10). Save what the task asks you to \
remember and durable facts you learn; do not save chatter.
- service_memory_delete: remove a memory that is wrong or no longer true.

Any other tools offered are the user's own (web services and the like): use them as their \
descriptions say when the task needs them.

A tool result that begins with \"Service Memory failed:\" or \"Tool … failed:\" says what \
went wrong: fix the call and retry, or carry on without it. When you are done, reply with \
your final answer and no tool calls.";

/// Most Mind calls per run.
pub const MAX_STEPS: usize = 25;

/// Runs the task through the tool loop.
pub fn run(ctx: &Context, task: &str) -> Result<String, String> {
    ToolLoop::new(SYSTEM_PROMPT)
        .account_tools()
        .max_steps(MAX_STEPS)
        .run(ctx, task)
}

wasmind_sdk::export_agent!(run);

#[cfg(test)]
mod tests {
    use serde_json::json;
    use wasmind_sdk::{
        Completion, LogKind, MindError, PutRequest, Role, ToolCall,
        testing::{InMemoryMemory, ScriptedMind, TestContext, check_replay},
    };

    use super::*;

    fn call(id: &str, name: &str, args: &serde_json::Value) -> Completion {
        Completion::call(ToolCall::new(id, name, args))
    }

    /// A server resuming it after a restart runs it again on the recorded results: it
    /// must make the same calls.
    #[test]
    fn replays() {
        let t = TestContext::new(ScriptedMind::new([
            call(
                "c1",
                "service_memory_put",
                &json!({"key": "food", "value": "pizza"}),
            ),
            call("c2", "service_memory_search", &json!({"query": "food"})),
            Completion::text("Saved."),
        ]));
        let calls = check_replay(&t, "Remember that I like pizza.", run).unwrap();
        let minds = calls
            .iter()
            .filter(|c| c.starts_with("mind.complete("))
            .count();
        assert_eq!(minds, 3);
        assert!(calls.iter().any(|c| c.starts_with("memory.search(")));
    }

    #[test]
    fn a_put_lands_in_memory_and_the_final_text_is_returned() {
        let t = TestContext::new(ScriptedMind::new([
            call(
                "c1",
                "service_memory_put",
                &json!({"key": "favourite_food", "value": "pizza", "tags": ["food"]}),
            ),
            Completion::text("I'll remember that you like pizza."),
        ]));

        let answer = run(t.ctx(), "Remember that my favourite food is pizza.");

        assert_eq!(answer.as_deref(), Ok("I'll remember that you like pizza."));
        let saved = t.memory().peek("default", "favourite_food").unwrap();
        assert_eq!(
            (saved.value.as_str(), saved.tags.as_slice()),
            ("pizza", ["food".to_string()].as_slice())
        );
        let first = &t.mind().requests()[0];
        assert_eq!(first.messages[0].content, SYSTEM_PROMPT);
        assert_eq!(
            first.messages[1].content,
            "Remember that my favourite food is pizza."
        );
        assert_eq!(first.tools.len(), 5);
        assert_eq!(t.progress().reports_of("tool_use"), ["service_memory_put"]);
    }

    #[test]
    fn recalls_from_memory_before_answering() {
        let memory = InMemoryMemory::new();
        let t = TestContext::with_memory(
            ScriptedMind::new([
                call(
                    "c1",
                    "service_memory_search",
                    &json!({"query": "favourite food"}),
                ),
                Completion::text("Pizza."),
            ]),
            memory,
        );
        t.ctx()
            .memory()
            .put(&PutRequest::new("favourite_food", "pizza"))
            .unwrap();

        assert_eq!(
            run(t.ctx(), "What food do I like?").as_deref(),
            Ok("Pizza.")
        );

        let second = &t.mind().requests()[1];
        let result = second.messages.last().unwrap();
        assert_eq!(
            (result.role, result.tool_call_id.as_deref()),
            (Role::Tool, Some("c1"))
        );
        let found: serde_json::Value = serde_json::from_str(&result.content).unwrap();
        assert_eq!(found["results"][0]["value"], "pizza");
    }

    #[test]
    fn a_stop_during_the_run_ends_it() {
        let t = TestContext::new(
            ScriptedMind::new([call("c1", "service_memory_list", &json!({}))]).then_stop(),
        );

        assert_eq!(run(t.ctx(), "Keep working."), Err("stopped".to_string()));
        assert_eq!(t.mind().requests().len(), 2);
    }

    #[test]
    fn a_stop_before_the_run_ends_it_at_once() {
        let t = TestContext::new(ScriptedMind::new([Completion::text("never")]));
        t.request_stop();

        assert_eq!(run(t.ctx(), "Anything."), Err("stopped".to_string()));
        assert!(t.mind().requests().is_empty());
    }

    #[test]
    fn a_failing_tool_result_is_fed_back_and_the_run_completes() {
        let t = TestContext::with_memory(
            ScriptedMind::new([
                call(
                    "c1",
                    "service_memory_put",
                    &json!({"key": "Bad Key", "value": "x"}),
                ),
                call(
                    "c2",
                    "service_memory_put",
                    &json!({"key": "note", "value": "x"}),
                ),
                call(
                    "c3",
                    "service_memory_put",
                    &json!({"key": "another_note", "value": "y"}),
                ),
                Completion::text("Saved one note; memory is full."),
            ]),
            InMemoryMemory::new().with_quota(1),
        );

        let answer = run(t.ctx(), "Save two notes.");

        assert_eq!(answer.as_deref(), Ok("Saved one note; memory is full."));
        let results = t.progress().logs_of(LogKind::ToolResult);
        assert!(
            results[0].starts_with("Service Memory failed: key \"Bad Key\" must be snake_case"),
            "{}",
            results[0]
        );
        assert!(results[1].contains("\"key\":\"note\""), "{}", results[1]);
        assert!(
            results[2].starts_with("Service Memory failed: memory quota exceeded"),
            "{}",
            results[2]
        );
        let last = t.mind().requests().pop().unwrap();
        assert_eq!(last.messages.last().unwrap().content, results[2]);
        assert_eq!(t.memory().len(), 1);
    }

    #[test]
    fn without_memory_the_tools_say_so_and_the_run_goes_on() {
        let t = TestContext::without_memory(ScriptedMind::new([
            call("c1", "service_memory_get", &json!({"key": "anything"})),
            Completion::text("I have no memory, but here is my answer."),
        ]));

        assert!(run(t.ctx(), "Hi").is_ok());
        assert_eq!(
            t.progress().logs_of(LogKind::ToolResult),
            ["Service Memory failed: memory channel is not configured."]
        );
    }

    #[test]
    fn an_unavailable_mind_fails_the_run() {
        let t = TestContext::new(
            ScriptedMind::default().then_error(MindError::Unavailable("provider down".into())),
        );

        let err = run(t.ctx(), "Hi").unwrap_err();

        assert!(err.contains("provider down"), "{err}");
    }
}
