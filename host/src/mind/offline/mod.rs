//! The offline Mind, the default provider: deterministic, network-free and honest about
//! being rule-based (every final text says "(offline rule-based Mind)").
//!
//! It reads the task — the last user message — for a handful of phrasings (`task`), makes
//! at most two memory tool calls, and writes its final answer from what the tools returned
//! (`answer`). Tool results are read as the JSON of §4.4 (`{ results: [...] }`,
//! `{ memory_id, key, namespace }`, …) or as `Service Memory failed: …` text. It only
//! calls tools it was offered, matched by name; with none it answers directly.

mod answer;
mod jobs;
mod task;
#[cfg(test)]
mod tests;

use serde_json::Value;

use super::{
    BoxFuture, Completion, Message, Mind, MindError, Note, Proposals, Role, RunReport, Summary,
    Title, ToolCall, ToolSpec, Usage,
};
use task::Intent;

const PUT: &str = "service_memory_put";
const GET: &str = "service_memory_get";
const LIST: &str = "service_memory_list";
const DELETE: &str = "service_memory_delete";
const SEARCH: &str = "service_memory_search";

/// The rule-based Mind; `model` is only the name reported on agent records.
#[derive(Debug, Clone)]
pub struct Offline {
    model: String,
}

impl Offline {
    /// An offline Mind reporting itself as `model`.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
        }
    }

    /// The next step, computed synchronously (what [`Mind::complete`] returns).
    pub fn think(&self, messages: &[Message], tools: &[ToolSpec]) -> Completion {
        let task_at = messages.iter().rposition(|m| m.role == Role::User);
        let task = task_at.map_or("", |i| messages[i].content.as_str());
        let turn = &messages[task_at.map_or(0, |i| i + 1)..];
        let offered = Offered(tools);
        let intent = Intent::of(task);
        let step = if turn.last().is_some_and(|m| m.role == Role::Tool) {
            answer::after_results(&intent, turn, &offered)
        } else {
            intent.first_step(&offered)
        };

        let mut input = approx_tokens(messages.iter().map(|m| m.content.as_str()));
        input += approx_tokens(tools.iter().map(|t| t.description.as_str()));
        match step {
            Step::Say(body) => {
                let text = sign(&body);
                Completion {
                    usage: usage(input, approx_tokens([text.as_str()])),
                    text: Some(text),
                    tool_calls: Vec::new(),
                }
            }
            Step::Call(name, args) => {
                let earlier: usize = messages.iter().map(|m| m.tool_calls.len()).sum();
                let arguments = args.to_string();
                Completion {
                    text: None,
                    usage: usage(input, approx_tokens([arguments.as_str()])),
                    tool_calls: vec![ToolCall {
                        id: format!("call_{}", earlier + 1),
                        name: name.to_owned(),
                        arguments,
                    }],
                }
            }
        }
    }
}

impl Mind for Offline {
    fn model(&self) -> &str {
        &self.model
    }

    fn answers_alike(&self) -> bool {
        true
    }

    fn complete<'a>(
        &'a self,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Completion, MindError>> {
        Box::pin(std::future::ready(Ok(self.think(messages, tools))))
    }

    fn extract<'a>(&'a self, run: &'a RunReport) -> BoxFuture<'a, Result<Proposals, MindError>> {
        Box::pin(std::future::ready(Ok(jobs::extract(run))))
    }

    fn summarize<'a>(&'a self, notes: &'a [Note]) -> BoxFuture<'a, Result<Summary, MindError>> {
        Box::pin(std::future::ready(Ok(jobs::summarize(notes))))
    }

    fn title<'a>(&'a self, task: &'a str) -> BoxFuture<'a, Result<Title, MindError>> {
        Box::pin(std::future::ready(Ok(jobs::title(task))))
    }
}

/// What the offline Mind does next.
enum Step {
    /// Call the named tool with these arguments.
    Call(&'static str, Value),
    /// Finish with this answer (signed on the way out).
    Say(String),
}

/// The tools on offer.
struct Offered<'a>(&'a [ToolSpec]);

impl Offered<'_> {
    fn has(&self, name: &str) -> bool {
        self.0.iter().any(|t| t.name == name)
    }
}

/// Ends every final text, so nobody mistakes the rule-based Mind for a model.
const SIGNATURE: &str = "(offline rule-based Mind)";

/// Marks a final text as the rule-based Mind's.
fn sign(body: &str) -> String {
    let separator = if body.contains('\n') { "\n" } else { " " };
    format!("{body}{separator}{SIGNATURE}")
}

/// Roughly four tokens per three words, as English text runs.
fn approx_tokens<'a>(texts: impl IntoIterator<Item = &'a str>) -> u32 {
    let words: usize = texts
        .into_iter()
        .map(|t| t.split_whitespace().count())
        .sum();
    u32::try_from((words * 4).div_ceil(3)).unwrap_or(u32::MAX)
}

fn usage(input: u32, output: u32) -> Usage {
    Usage {
        input_tokens: input.max(1),
        output_tokens: output.max(1),
    }
}
