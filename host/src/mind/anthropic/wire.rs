//! The JSON of the Messages API. The conversation is reshaped to the API's rules: system
//! prompts go to the top-level `system`; tool calls are `tool_use` blocks whose `input` is
//! the arguments object; tool results are `tool_result` blocks inside a `user` message;
//! and consecutive messages of one role are merged, because the API wants user and
//! assistant turns to alternate and every result of one assistant turn in one user turn.
//! Replies are read by block type; blocks we do not use (e.g. `thinking`) are skipped.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::mind::{Completion, Message, Role, Schema, ToolCall, ToolSpec, Usage};

#[derive(Serialize)]
pub(super) struct Request<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<OutTool<'a>>,
}

/// One user or assistant turn.
#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Vec<OutBlock<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OutBlock<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
    },
}

#[derive(Serialize)]
struct OutTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Schema,
}

impl<'a> Request<'a> {
    /// The request for `messages`; an error when a message cannot be said in this API (a
    /// tool call whose arguments are not a JSON object, a tool result without its call's
    /// id).
    pub(super) fn new(
        model: &'a str,
        max_tokens: u32,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> Result<Self, String> {
        let mut system: Vec<&str> = Vec::new();
        let mut turns: Vec<Turn<'a>> = Vec::new();
        for m in messages {
            let (role, blocks) = match m.role {
                Role::System => {
                    system.push(&m.content);
                    continue;
                }
                Role::User => ("user", vec![OutBlock::Text { text: &m.content }]),
                Role::Assistant => ("assistant", assistant_blocks(m)?),
                Role::Tool => {
                    let Some(id) = m.tool_call_id.as_deref() else {
                        return Err("a tool result without the id of its call".to_owned());
                    };
                    let result = OutBlock::ToolResult {
                        tool_use_id: id,
                        content: &m.content,
                    };
                    ("user", vec![result])
                }
            };
            match turns.last_mut() {
                Some(last) if last.role == role => last.content.extend(blocks),
                _ => turns.push(Turn {
                    role,
                    content: blocks,
                }),
            }
        }
        Ok(Self {
            model,
            max_tokens,
            system: (!system.is_empty()).then(|| system.join("\n\n")),
            messages: turns,
            tools: tools
                .iter()
                .map(|t| OutTool {
                    name: &t.name,
                    description: &t.description,
                    input_schema: &t.parameters,
                })
                .collect(),
        })
    }
}

/// The text (left out when empty beside calls: the API refuses empty text blocks) and
/// the tool calls of an assistant message.
fn assistant_blocks(m: &Message) -> Result<Vec<OutBlock<'_>>, String> {
    let mut blocks = Vec::with_capacity(1 + m.tool_calls.len());
    if !m.content.is_empty() || m.tool_calls.is_empty() {
        blocks.push(OutBlock::Text { text: &m.content });
    }
    for call in &m.tool_calls {
        let input: Value = serde_json::from_str(&call.arguments)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| {
                format!(
                    "the arguments of tool call {} ({}) are not a JSON object",
                    call.id, call.name
                )
            })?;
        blocks.push(OutBlock::ToolUse {
            id: &call.id,
            name: &call.name,
            input,
        });
    }
    Ok(blocks)
}

#[derive(Deserialize)]
pub(super) struct Response {
    content: Vec<InBlock>,
    usage: Option<InUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct InUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

impl Response {
    /// The reply's text blocks joined, and its `tool_use` blocks as calls whose arguments
    /// are the `input` object as JSON text.
    pub(super) fn into_completion(self) -> Completion {
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for block in self.content {
            match block {
                InBlock::Text { text: t } => text.push_str(&t),
                InBlock::ToolUse { id, name, input } => tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments: match input {
                        Value::Null => "{}".to_owned(),
                        other => other.to_string(),
                    },
                }),
                InBlock::Other => {}
            }
        }
        Completion {
            text: (!text.is_empty()).then_some(text),
            tool_calls,
            usage: self.usage.map_or_else(Usage::default, |u| {
                Usage::reported(u.input_tokens, u.output_tokens)
            }),
        }
    }
}
