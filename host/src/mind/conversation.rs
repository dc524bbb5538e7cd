//! The conversation a Mind reads and the step it answers with; provider-neutral.

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    /// The result of a tool call, answering the call named by `tool_call_id`.
    Tool,
}

/// A tool call the Mind made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// Id the answering `tool` message quotes.
    pub id: String,
    pub name: String,
    /// The arguments object, as JSON text.
    pub arguments: String,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// Calls made by an `assistant` message.
    pub tool_calls: Vec<ToolCall>,
    /// For `tool` messages: the call this answers.
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A system prompt.
    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(Role::System, content.into())
    }

    /// A user message (an agent's task).
    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(Role::User, content.into())
    }

    /// What the Mind said: text and/or tool calls.
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls,
            ..Self::plain(Role::Assistant, content.into())
        }
    }

    /// The result of the tool call `call_id`.
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(call_id.into()),
            ..Self::plain(Role::Tool, content.into())
        }
    }

    fn plain(role: Role, content: String) -> Self {
        Self {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool the Mind may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Unique name, e.g. `service_memory_put`.
    pub name: String,
    /// What the tool does, for the Mind.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Schema,
}

/// A JSON Schema kept as its (checked) JSON text: a request copies it out verbatim, and
/// thousands of agents waiting on the Mind hold their tools' schemas as text, not as
/// trees of `serde_json::Value` (~20 KiB per agent for the default agent's five).
#[derive(Debug, Clone)]
pub struct Schema(Box<serde_json::value::RawValue>);

impl Schema {
    /// The schema `text`, if it is JSON.
    pub fn parse(text: String) -> Result<Self, serde_json::Error> {
        serde_json::value::RawValue::from_string(text).map(Self)
    }
}

impl From<serde_json::Value> for Schema {
    fn from(value: serde_json::Value) -> Self {
        Self(serde_json::value::to_raw_value(&value).expect("a JSON value serializes"))
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

impl serde::Serialize for Schema {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Tokens spent by one completion (zeros when the provider does not say).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u32,
    pub output_tokens: u32,
}

impl Usage {
    /// The counts a provider reported: a missing count is zero, a huge one saturates.
    pub fn reported(input_tokens: Option<u64>, output_tokens: Option<u64>) -> Self {
        let tokens = |n: Option<u64>| u32::try_from(n.unwrap_or(0)).unwrap_or(u32::MAX);
        Self {
            input_tokens: tokens(input_tokens),
            output_tokens: tokens(output_tokens),
        }
    }
}

/// The Mind's next step: a text, tool calls, or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// `None` when the provider said nothing (typically alongside tool calls).
    pub text: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
}
