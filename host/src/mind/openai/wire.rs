//! The JSON of chat completions. Replies are read leniently: compatible servers omit
//! `usage`, send `content: null` beside tool calls, omit tool-call ids, or send arguments
//! as an object rather than JSON text; none of that is an error.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::mind::{Completion, Message, Role, Schema, ToolCall, ToolSpec, Usage};

#[derive(Serialize)]
pub(super) struct Request<'a> {
    model: &'a str,
    messages: Vec<OutMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<OutTool<'a>>,
}

#[derive(Serialize)]
struct OutMessage<'a> {
    role: &'static str,
    /// `null` only for an assistant message that is all tool calls.
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<OutCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

#[derive(Serialize)]
struct OutCall<'a> {
    id: &'a str,
    r#type: &'static str,
    function: OutFunction<'a>,
}

#[derive(Serialize)]
struct OutFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct OutTool<'a> {
    r#type: &'static str,
    function: OutToolFunction<'a>,
}

#[derive(Serialize)]
struct OutToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Schema,
}

impl<'a> Request<'a> {
    pub(super) fn new(model: &'a str, messages: &'a [Message], tools: &'a [ToolSpec]) -> Self {
        Self {
            model,
            messages: messages.iter().map(OutMessage::new).collect(),
            tools: tools
                .iter()
                .map(|t| OutTool {
                    r#type: "function",
                    function: OutToolFunction {
                        name: &t.name,
                        description: &t.description,
                        parameters: &t.parameters,
                    },
                })
                .collect(),
        }
    }
}

impl<'a> OutMessage<'a> {
    fn new(m: &'a Message) -> Self {
        let role = match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let all_calls =
            m.role == Role::Assistant && m.content.is_empty() && !m.tool_calls.is_empty();
        Self {
            role,
            content: (!all_calls).then_some(m.content.as_str()),
            tool_calls: m
                .tool_calls
                .iter()
                .map(|c| OutCall {
                    id: &c.id,
                    r#type: "function",
                    function: OutFunction {
                        name: &c.name,
                        arguments: &c.arguments,
                    },
                })
                .collect(),
            tool_call_id: m.tool_call_id.as_deref(),
        }
    }
}

#[derive(Deserialize)]
pub(super) struct Response {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<InUsage>,
    /// Some proxies answer 200 with an error object.
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    message: InMessage,
}

#[derive(Deserialize)]
struct InMessage {
    content: Option<Value>,
    tool_calls: Option<Vec<InCall>>,
}

#[derive(Deserialize)]
struct InCall {
    id: Option<String>,
    function: InFunction,
}

#[derive(Deserialize)]
struct InFunction {
    name: String,
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct InUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

impl Response {
    /// The first choice as a completion; a reply without one is an error message.
    pub(super) fn into_completion(self) -> Result<Completion, String> {
        let Some(choice) = self.choices.into_iter().next() else {
            return Err(match self.error {
                Some(error) => format!("no choices, error {error}"),
                None => "no choices".to_owned(),
            });
        };
        let tool_calls = choice
            .message
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, call)| ToolCall {
                id: call.id.unwrap_or_else(|| format!("call_{}", i + 1)),
                name: call.function.name,
                arguments: match call.function.arguments {
                    Some(Value::String(text)) => text,
                    None | Some(Value::Null) => "{}".to_owned(),
                    Some(other) => other.to_string(),
                },
            })
            .collect();
        let usage = self.usage.map_or_else(Usage::default, |u| {
            Usage::reported(u.prompt_tokens, u.completion_tokens)
        });
        Ok(Completion {
            text: choice
                .message
                .content
                .and_then(text_of)
                .filter(|t| !t.is_empty()),
            tool_calls,
            usage,
        })
    }
}

/// Message content as text: a string, or the text parts of a content-part array.
fn text_of(content: Value) -> Option<String> {
    match content {
        Value::Null => None,
        Value::String(text) => Some(text),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
        ),
        other => Some(other.to_string()),
    }
}
