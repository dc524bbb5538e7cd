//! Jobs the host itself gives the Mind, beyond an agent's own tool loop (§4.2, §4.4, §2.3):
//! extracting memories from a finished run, summarizing a cluster of memories for
//! consolidation, and titling an agent from its task.
//!
//! Remote providers do them through [`Mind::complete`](super::Mind::complete) with the
//! prompts and the one forced tool defined here (a tool call is the structured output
//! every chat protocol supports); the offline Mind overrides them with deterministic,
//! extractive versions. What comes back is unvalidated: extraction proposals go through
//! the same put validation as the API, and a summary through the same key and value
//! checks, so a provider's mistakes are caught where a user's would be.

use serde_json::{Map, Value, json};

use super::{Completion, Message, MindError, Schema, ToolSpec, Usage};
use crate::text::shorten;

/// Longest title kept, in characters.
pub const MAX_TITLE_CHARS: usize = 60;
/// Characters of the run a provider is shown for extraction (the tail is kept).
const MAX_RUN_CHARS: usize = 24_000;

/// What a completed run did: the input of extraction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    /// The agent's task.
    pub task: String,
    /// The last conversation the agent sent the Mind (tool calls and their results); empty
    /// when the agent never called it.
    pub conversation: Vec<Message>,
    /// The agent's final answer.
    pub answer: String,
}

/// Memories the Mind proposes to remember, as put bodies (`key`, `value`, and optionally
/// `namespace`, `tags`, `importance`), not yet validated.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Proposals {
    pub memories: Vec<Map<String, Value>>,
    pub usage: Usage,
}

/// One memory of a cluster to summarize.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub key: String,
    pub value: String,
}

/// The summary memory written for a cluster, not yet validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub key: String,
    pub value: String,
    pub usage: Usage,
}

/// A short title for an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Title {
    pub text: String,
    pub usage: Usage,
}

const SAVE_MEMORIES: &str = "save_memories";
const WRITE_SUMMARY: &str = "write_summary";

const EXTRACT_PROMPT: &str = "You maintain the long-term memory of an AI agent service. \
Read the agent run below and decide which facts are worth remembering for future runs: \
durable facts, user preferences, decisions and results, not chit-chat or steps. Call the \
save_memories tool exactly once with them (an empty list when nothing is worth keeping). \
Keys are snake_case (lowercase letters, digits and underscores, starting with a letter), \
at most 128 characters; values are self-contained sentences of at most 5,000 characters; \
importance is 1 (trivia) to 10 (critical).";

const SUMMARY_PROMPT: &str = "You consolidate an AI agent's long-term memory. The memories \
below say overlapping things. Call the write_summary tool once with one memory that keeps \
every distinct fact of them in at most 5,000 characters, and a snake_case key (lowercase \
letters, digits and underscores, starting with a letter, at most 128 characters) naming \
what they are about.";

const TITLE_PROMPT: &str = "Write a title of at most eight words for the task below, as a \
heading would read. Answer with the title alone: no quotes, no trailing period.";

fn save_memories_tool() -> ToolSpec {
    ToolSpec {
        name: SAVE_MEMORIES.into(),
        description: "Save the memories worth keeping from this run.".into(),
        parameters: Schema::from(json!({
            "type": "object",
            "properties": {
                "memories": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "key": { "type": "string", "description": "snake_case identifier" },
                            "value": { "type": "string", "description": "the fact, self-contained" },
                            "namespace": { "type": "string" },
                            "tags": { "type": "array", "items": { "type": "string" }, "maxItems": 20 },
                            "importance": { "type": "number", "minimum": 1, "maximum": 10 }
                        },
                        "required": ["key", "value"]
                    }
                }
            },
            "required": ["memories"]
        })),
    }
}

fn write_summary_tool() -> ToolSpec {
    ToolSpec {
        name: WRITE_SUMMARY.into(),
        description: "Write the one memory that replaces the cluster.".into(),
        parameters: Schema::from(json!({
            "type": "object",
            "properties": {
                "key": { "type": "string", "description": "snake_case identifier" },
                "value": { "type": "string", "description": "every distinct fact of the cluster" }
            },
            "required": ["key", "value"]
        })),
    }
}

/// The run as one text, its tail kept when long (the answer matters most).
fn run_text(run: &RunReport) -> String {
    let mut text = format!("Task: {}\n", run.task);
    for m in &run.conversation {
        use super::Role::*;
        match m.role {
            System | User => {}
            Assistant => {
                if !m.content.is_empty() {
                    text.push_str(&format!("Agent: {}\n", m.content));
                }
                for c in &m.tool_calls {
                    text.push_str(&format!("Tool call {}: {}\n", c.name, c.arguments));
                }
            }
            Tool => text.push_str(&format!("Tool result: {}\n", m.content)),
        }
    }
    text.push_str(&format!("Final answer: {}\n", run.answer));
    let chars = text.chars().count();
    if chars > MAX_RUN_CHARS {
        text = text.chars().skip(chars - MAX_RUN_CHARS).collect();
    }
    text
}

/// The extraction request a chat provider gets.
pub fn extraction_request(run: &RunReport) -> (Vec<Message>, Vec<ToolSpec>) {
    (
        vec![
            Message::system(EXTRACT_PROMPT),
            Message::user(run_text(run)),
        ],
        vec![save_memories_tool()],
    )
}

/// The summary request a chat provider gets.
pub fn summary_request(notes: &[Note]) -> (Vec<Message>, Vec<ToolSpec>) {
    let listing: String = notes
        .iter()
        .map(|n| format!("- {}: {}\n", n.key, n.value))
        .collect();
    (
        vec![Message::system(SUMMARY_PROMPT), Message::user(listing)],
        vec![write_summary_tool()],
    )
}

/// The title request a chat provider gets.
pub fn title_request(task: &str) -> Vec<Message> {
    vec![Message::system(TITLE_PROMPT), Message::user(task)]
}

fn unreadable(job: &str, why: impl std::fmt::Display) -> MindError {
    MindError::Unavailable(format!("the Mind's {job} reply was unreadable: {why}"))
}

/// The arguments of the reply's call to `tool`, or failing that a JSON object in its text.
fn tool_arguments(c: &Completion, tool: &str, job: &str) -> Result<Map<String, Value>, MindError> {
    let text = match c.tool_calls.iter().find(|call| call.name == tool) {
        Some(call) => call.arguments.as_str(),
        None => c.text.as_deref().unwrap_or_default().trim(),
    };
    let text = text.trim_start_matches("```json").trim_matches('`').trim();
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(args)) => Ok(args),
        Ok(_) => Err(unreadable(job, "expected a JSON object")),
        Err(e) => Err(unreadable(job, e)),
    }
}

/// Reads the proposals of an extraction reply; entries that are not objects are dropped
/// (there is nothing to validate in them).
pub fn read_proposals(c: &Completion) -> Result<Proposals, MindError> {
    let args = tool_arguments(c, SAVE_MEMORIES, "extraction")?;
    let Some(Value::Array(items)) = args.get("memories") else {
        return Err(unreadable("extraction", "no \"memories\" list"));
    };
    Ok(Proposals {
        memories: items
            .iter()
            .filter_map(|m| m.as_object().cloned())
            .collect(),
        usage: c.usage,
    })
}

/// Reads the summary of a consolidation reply. A reply in plain text instead of the
/// tool call (many OpenAI-compatible servers ignore the tool) is taken as the summary's
/// value, under a key named after the cluster's centre, `notes[0]`: `<its key>_summary`.
pub fn read_summary(c: &Completion, notes: &[Note]) -> Result<Summary, MindError> {
    let args = match tool_arguments(c, WRITE_SUMMARY, "summary") {
        Ok(args) => args,
        Err(e) => return plain_summary(c, notes).ok_or(e),
    };
    let field = |name: &str| match args.get(name) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        _ => Err(unreadable("summary", format!("no {name:?} string"))),
    };
    Ok(Summary {
        key: field("key")?,
        value: field("value")?,
        usage: c.usage,
    })
}

/// The reply's text as the summary, when it did not call the tool and said something.
fn plain_summary(c: &Completion, notes: &[Note]) -> Option<Summary> {
    if c.tool_calls.iter().any(|call| call.name == WRITE_SUMMARY) {
        return None;
    }
    let value = c.text.as_deref()?.trim();
    let centre = notes.first().map_or("memory", |n| n.key.as_str());
    (!value.is_empty()).then(|| Summary {
        key: format!("{centre}_summary"),
        value: value.to_string(),
        usage: c.usage,
    })
}

/// Reads a title reply: its first line, unquoted, at most [`MAX_TITLE_CHARS`].
pub fn read_title(c: &Completion) -> Result<Title, MindError> {
    let line = c
        .text
        .as_deref()
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    let text = shorten(
        line.trim_start_matches("Title:")
            .trim()
            .trim_matches(['"', '\'', '*', '#'])
            .trim_end_matches('.')
            .trim(),
        MAX_TITLE_CHARS,
    );
    if text.is_empty() {
        return Err(unreadable("title", "it was empty"));
    }
    Ok(Title {
        text,
        usage: c.usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mind::ToolCall;

    fn reply(text: Option<&str>, calls: Vec<ToolCall>) -> Completion {
        Completion {
            text: text.map(str::to_string),
            tool_calls: calls,
            usage: Usage {
                input_tokens: 7,
                output_tokens: 3,
            },
        }
    }

    fn call(name: &str, arguments: &Value) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: arguments.to_string(),
        }
    }

    #[test]
    fn proposals_come_from_the_tool_call_or_the_text() {
        let args = json!({ "memories": [{ "key": "a", "value": "b" }, 3] });
        let p = read_proposals(&reply(None, vec![call(SAVE_MEMORIES, &args)])).unwrap();
        assert_eq!(p.memories.len(), 1);
        assert_eq!(p.usage.input_tokens, 7);
        let text = format!("```json\n{args}\n```");
        assert_eq!(
            read_proposals(&reply(Some(&text), vec![]))
                .unwrap()
                .memories
                .len(),
            1
        );
        assert!(read_proposals(&reply(Some("nothing to add"), vec![])).is_err());
        assert!(read_proposals(&reply(None, vec![call(SAVE_MEMORIES, &json!({}))])).is_err());
    }

    #[test]
    fn summaries_need_a_key_and_a_value() {
        let ok = call(WRITE_SUMMARY, &json!({ "key": "k", "value": " v " }));
        let s = read_summary(&reply(None, vec![ok]), &notes()).unwrap();
        assert_eq!((s.key.as_str(), s.value.as_str()), ("k", "v"));
        let blank = call(WRITE_SUMMARY, &json!({ "key": "k", "value": "" }));
        assert!(read_summary(&reply(None, vec![blank]), &notes()).is_err());
        assert!(read_summary(&reply(Some("  "), vec![]), &notes()).is_err());
    }

    #[test]
    fn a_plain_text_summary_is_the_value_under_the_centre_s_key() {
        let s = read_summary(
            &reply(Some(" The user drinks green tea. "), vec![]),
            &notes(),
        )
        .unwrap();
        assert_eq!(s.key, "tea_pref_summary");
        assert_eq!(s.value, "The user drinks green tea.");
        assert_eq!(s.usage.input_tokens, 7);
        // A JSON object in the text is still read as the tool's arguments.
        let json_text = json!({ "key": "k", "value": "v" }).to_string();
        assert_eq!(
            read_summary(&reply(Some(&json_text), vec![]), &notes())
                .unwrap()
                .key,
            "k"
        );
    }

    fn notes() -> Vec<Note> {
        ["tea_pref", "tea"]
            .map(|key| Note {
                key: key.into(),
                value: "green tea".into(),
            })
            .to_vec()
    }

    #[test]
    fn titles_are_one_clean_short_line() {
        let t = read_title(&reply(
            Some("\n\"Quarterly Report Summary.\"\nmore"),
            vec![],
        ))
        .unwrap();
        assert_eq!(t.text, "Quarterly Report Summary");
        let long = "word ".repeat(40);
        assert!(
            read_title(&reply(Some(&long), vec![]))
                .unwrap()
                .text
                .chars()
                .count()
                <= 60
        );
        assert!(read_title(&reply(Some("  "), vec![])).is_err());
    }

    #[test]
    fn long_runs_keep_their_end() {
        let run = RunReport {
            task: "t".into(),
            conversation: vec![Message::tool("c", "r".repeat(MAX_RUN_CHARS))],
            answer: "the answer".into(),
        };
        let (messages, tools) = extraction_request(&run);
        assert!(messages[1].content.ends_with("Final answer: the answer\n"));
        assert_eq!(messages[1].content.chars().count(), MAX_RUN_CHARS);
        assert_eq!(tools[0].name, SAVE_MEMORIES);
    }
}
