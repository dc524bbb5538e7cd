//! An agent that keeps notes: it asks the Mind for a short plan, recalls what memory
//! already holds on the task, works through the SDK's tool loop with both in its prompt,
//! and files the result as a note under a key derived from the task (so the same task
//! run again updates its note, as a new version).

use wasmind_sdk::{
    Context, LogKind, Message, MindError, PutRequest, SearchHit, SearchRequest, ToolLoop, limits,
};

/// Where notes are filed.
pub const NOTES_NAMESPACE: &str = "notes";

const PLAN_PROMPT: &str = "Write a short plan (at most five numbered steps) for the task the \
user gives. Plan only; do not do the task.";

const WORK_PROMPT: &str = "You are a diligent assistant with a long-term memory (the \
service_memory_* tools). Follow your plan, use memory where it helps, and answer with the \
result alone, without tool calls, when done.";

/// Memories recalled into the prompt, at most.
const RECALL: u32 = 5;

/// Plans, recalls, works, files the note.
pub fn run(ctx: &Context, task: &str) -> Result<String, String> {
    let plan = plan(ctx, task)?;
    let recalled = recall(ctx, task);
    let mut prompt = format!("{WORK_PROMPT}\n\nYour plan:\n{plan}");
    if !recalled.is_empty() {
        prompt.push_str("\n\nWhat your memory already holds on this task:");
        for hit in &recalled {
            prompt.push_str(&format!(
                "\n- {} ({}): {}",
                hit.key, hit.namespace, hit.value
            ));
        }
    }
    let answer = ToolLoop::new(prompt).max_steps(15).run(ctx, task)?;
    file_note(ctx, task, &answer);
    Ok(answer)
}

wasmind_sdk::export_agent!(run);

/// Asks the Mind for a plan (no tools) and logs it as thinking.
fn plan(ctx: &Context, task: &str) -> Result<String, String> {
    if ctx.stop_requested() {
        return Err("stopped".into());
    }
    ctx.progress().report("info", "planning");
    let messages = [Message::system(PLAN_PROMPT), Message::user(task)];
    match ctx.mind().complete(&messages, &[]) {
        Ok(c) => {
            let plan = c.text.unwrap_or_default();
            ctx.progress().log(LogKind::Thinking, &plan, None);
            Ok(plan)
        }
        Err(_) if ctx.stop_requested() => Err("stopped".into()),
        Err(MindError::Stopped) => Err("stopped".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Searches memory for the task; an unavailable memory just means nothing is recalled.
fn recall(ctx: &Context, task: &str) -> Vec<SearchHit> {
    match ctx.memory().search(&SearchRequest::new(task).limit(RECALL)) {
        Ok(hits) => {
            ctx.progress()
                .report("info", &format!("recalled {} memories", hits.len()));
            hits
        }
        Err(e) => {
            ctx.progress()
                .log(LogKind::Thinking, &format!("Recalling nothing: {e}"), None);
            Vec::new()
        }
    }
}

/// Writes the note; a failure is reported, not fatal (the answer stands).
fn file_note(ctx: &Context, task: &str, answer: &str) {
    let text = format!("Task: {task}\n\nResult: {answer}");
    let value: String = text.chars().take(limits::MAX_VALUE_CHARS).collect();
    let note = PutRequest::new(note_key(task), value)
        .namespace(NOTES_NAMESPACE)
        .tags(["note"]);
    match ctx.memory().put(&note) {
        Ok(put) => ctx
            .progress()
            .report("info", &format!("filed note {}", put.key)),
        Err(e) => ctx
            .progress()
            .report("info", &format!("could not file the note: {e}")),
    }
}

/// `note_` + the task's first words in snake_case + a hash of the whole task: stable for
/// one task, distinct between tasks that start alike, always a valid key.
pub fn note_key(task: &str) -> String {
    let words: Vec<String> = task
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(6)
        .map(str::to_ascii_lowercase)
        .collect();
    let mut key = String::from("note");
    for word in words {
        if key.len() + word.len() + 1 > 80 {
            break;
        }
        key.push('_');
        key.push_str(&word);
    }
    // FNV-1a: tiny, stable across builds and platforms.
    let hash = task.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{key}_{:08x}", hash as u32)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use wasmind_sdk::{
        Completion, ToolCall,
        testing::{ScriptedMind, TestContext, check_replay},
    };

    use super::*;

    const TASK: &str = "Suggest a weekend trip from Lisbon";

    /// A server resuming it after a restart runs it again on the recorded results: it
    /// must make the same calls.
    #[test]
    fn replays() {
        let t = TestContext::new(ScriptedMind::new([
            Completion::text("1. Recall preferences\n2. Pick a town"),
            Completion::call(ToolCall::new(
                "c1",
                "service_memory_put",
                &json!({"key": "trip_style", "value": "by train"}),
            )),
            Completion::text("Go to Sintra by train."),
        ]));
        let calls = check_replay(&t, TASK, run).unwrap();
        assert!(calls.iter().any(|c| c.starts_with("memory.search(")));
        assert_eq!(
            calls
                .iter()
                .filter(|c| c.starts_with("memory.put("))
                .count(),
            2
        );
    }

    #[test]
    fn plans_recalls_works_and_files_a_note() {
        let t = TestContext::new(ScriptedMind::new([
            Completion::text("1. Recall preferences\n2. Pick a town"),
            Completion::call(ToolCall::new(
                "c1",
                "service_memory_get",
                &json!({"key": "budget"}),
            )),
            Completion::text("Go to Sintra by train."),
        ]));
        let memory = t.ctx().memory();
        memory
            .put(&PutRequest::new(
                "trip_style",
                "likes trips from Lisbon by train",
            ))
            .unwrap();

        let answer = run(t.ctx(), TASK);

        assert_eq!(answer.as_deref(), Ok("Go to Sintra by train."));
        let requests = t.mind().requests();
        assert!(requests[0].tools.is_empty(), "planning offers no tools");
        let prompt = &requests[1].messages[0].content;
        assert!(prompt.contains("1. Recall preferences"), "{prompt}");
        assert!(
            prompt.contains("trip_style (default): likes trips from Lisbon by train"),
            "{prompt}"
        );
        assert_eq!(
            t.progress().logs_of(LogKind::Thinking)[0],
            "1. Recall preferences\n2. Pick a town"
        );
        let note = t.memory().peek(NOTES_NAMESPACE, &note_key(TASK)).unwrap();
        assert!(
            note.value.ends_with("Result: Go to Sintra by train."),
            "{}",
            note.value
        );
        assert_eq!(note.tags, ["note"]);
    }

    #[test]
    fn the_same_task_updates_its_note() {
        let mind = ScriptedMind::new([
            Completion::text("plan"),
            Completion::text("first answer"),
            Completion::text("plan"),
            Completion::text("second answer"),
        ]);
        let t = TestContext::new(mind);

        run(t.ctx(), TASK).unwrap();
        run(t.ctx(), TASK).unwrap();

        assert_eq!(
            t.memory().version_count(NOTES_NAMESPACE, &note_key(TASK)),
            2
        );
        assert!(
            t.memory()
                .peek(NOTES_NAMESPACE, &note_key(TASK))
                .unwrap()
                .value
                .ends_with("second answer")
        );
        // The second run recalled the first run's note into its prompt.
        assert!(
            t.mind().requests()[3].messages[0]
                .content
                .contains("first answer")
        );
    }

    #[test]
    fn works_without_memory() {
        let t = TestContext::without_memory(ScriptedMind::new([
            Completion::text("plan"),
            Completion::text("done"),
        ]));

        assert_eq!(run(t.ctx(), TASK).as_deref(), Ok("done"));
        assert!(
            t.progress()
                .reports_of("info")
                .iter()
                .any(|m| m.starts_with("could not file the note"))
        );
    }

    #[test]
    fn a_stop_while_planning_ends_the_run() {
        let t = TestContext::new(ScriptedMind::default().then_stop());

        assert_eq!(run(t.ctx(), TASK), Err("stopped".into()));
        assert!(t.memory().is_empty());
    }

    #[test]
    fn note_keys_are_valid_and_stable() {
        let key = note_key(TASK);
        assert!(
            key.starts_with("note_suggest_a_weekend_trip_from_lisbon_"),
            "{key}"
        );
        assert_eq!(key, note_key(TASK));
        assert_ne!(key, note_key("Suggest a weekend trip from Lisbon, cheaply"));
        assert!(note_key("¿¡").starts_with("note_"));
        let long = note_key(&"supercalifragilistic ".repeat(20));
        assert!(long.len() <= limits::MAX_KEY_CHARS);
        for k in [key, long] {
            assert!(
                k.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            );
        }
    }
}
