//! The Mind: chat completion with tool calls (WIT interface `mind`).

use std::{fmt, sync::Arc};

use serde_json::Value;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    /// The result of a tool call, answering the call named by [`Message::tool_call_id`].
    Tool,
}

/// A tool the Mind may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Unique name, e.g. `service_memory_put`.
    pub name: String,
    /// What the tool does, for the Mind.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

impl ToolSpec {
    /// A tool named `name`, described for the Mind, taking arguments matching `parameters`
    /// (a JSON Schema).
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::json;
    /// use wasmind_sdk::ToolSpec;
    ///
    /// let clock = ToolSpec::new("clock", "The current time", json!({"type": "object"}));
    /// assert_eq!(clock.name, "clock");
    /// ```
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

/// A tool call the Mind made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// Id to quote in the tool message that answers it.
    pub id: String,
    pub name: String,
    /// The arguments object as JSON text, exactly as the Mind wrote it (it may be invalid).
    pub arguments_json: String,
}

impl ToolCall {
    /// A call of `name` with `arguments` (what a scripted Mind returns in tests).
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::json;
    /// use wasmind_sdk::ToolCall;
    ///
    /// let call = ToolCall::new("call_1", "service_memory_get", &json!({"key": "user_name"}));
    /// assert_eq!(call.arguments().unwrap()["key"], "user_name");
    /// ```
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: &Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments_json: arguments.to_string(),
        }
    }

    /// The arguments, parsed. An empty text counts as `{}` (some models send it for tools
    /// without arguments).
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::ToolCall;
    ///
    /// let call = ToolCall { id: "c".into(), name: "t".into(), arguments_json: "{oops".into() };
    /// assert!(call.arguments().is_err());
    /// ```
    pub fn arguments(&self) -> Result<Value, serde_json::Error> {
        match self.arguments_json.trim() {
            "" => Ok(Value::Object(Default::default())),
            text => serde_json::from_str(text),
        }
    }
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
    fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// The system prompt.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{Message, Role};
    ///
    /// assert_eq!(Message::system("Be brief.").role, Role::System);
    /// ```
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::Message;
    ///
    /// assert_eq!(Message::user("hi").content, "hi");
    /// ```
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// What the Mind said, with the tool calls it made (to append after a completion).
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{Message, Role};
    ///
    /// let m = Message::assistant("Looking it up.", vec![]);
    /// assert_eq!(m.role, Role::Assistant);
    /// ```
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls,
            ..Self::new(Role::Assistant, content)
        }
    }

    /// The result of the tool call `call_id`.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::Message;
    ///
    /// let m = Message::tool("call_1", r#"{"deleted":true}"#);
    /// assert_eq!(m.tool_call_id.as_deref(), Some("call_1"));
    /// ```
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(call_id.into()),
            ..Self::new(Role::Tool, content)
        }
    }
}

/// Tokens spent by one completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub input_tokens: u32,
    pub output_tokens: u32,
}

/// The Mind's answer: text, tool calls, or both.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Completion {
    pub text: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
}

impl Completion {
    /// An answer of text alone (what ends a [`ToolLoop`](crate::ToolLoop)).
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::Completion;
    ///
    /// assert_eq!(Completion::text("done").text.as_deref(), Some("done"));
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// An answer that is one tool call and no text.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::json;
    /// use wasmind_sdk::{Completion, ToolCall};
    ///
    /// let c = Completion::call(ToolCall::new("c1", "service_memory_list", &json!({})));
    /// assert_eq!(c.tool_calls.len(), 1);
    /// ```
    pub fn call(call: ToolCall) -> Self {
        Self::default().and_call(call)
    }

    /// This answer with one more tool call.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::json;
    /// use wasmind_sdk::{Completion, ToolCall};
    ///
    /// let c = Completion::text("Saving both.")
    ///     .and_call(ToolCall::new("c1", "service_memory_put", &json!({"key": "a", "value": "1"})))
    ///     .and_call(ToolCall::new("c2", "service_memory_put", &json!({"key": "b", "value": "2"})));
    /// assert_eq!(c.tool_calls.len(), 2);
    /// ```
    pub fn and_call(mut self, call: ToolCall) -> Self {
        self.tool_calls.push(call);
        self
    }

    /// This answer with its token usage.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{Completion, Usage};
    ///
    /// let c = Completion::text("ok").with_usage(Usage { input_tokens: 12, output_tokens: 1 });
    /// assert_eq!(c.usage.input_tokens, 12);
    /// ```
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }
}

/// Why a completion failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MindError {
    /// The provider failed even after the host's retries (1 s, 2 s, 4 s).
    #[error("the Mind is unavailable: {0}")]
    Unavailable(String),
    /// The request was refused as malformed (too large, bad tool schema, …).
    #[error("the Mind refused the request: {0}")]
    InvalidRequest(String),
    /// A stop was requested: finish up and return.
    #[error("stopped")]
    Stopped,
}

/// Where completions come from: the host's `mind` import, or a test double.
pub(crate) trait MindBackend: Send + Sync {
    fn complete(&self, messages: &[Message], tools: &[ToolSpec]) -> Result<Completion, MindError>;
}

/// The Mind: how an agent thinks. Cheap to clone.
#[derive(Clone)]
pub struct Mind {
    backend: Arc<dyn MindBackend>,
}

impl fmt::Debug for Mind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Mind")
    }
}

impl Mind {
    pub(crate) fn new(backend: Arc<dyn MindBackend>) -> Self {
        Self { backend }
    }

    /// Asks the Mind for the next step of the conversation `messages`, offering `tools`.
    /// Blocks until it answers, fails, or a stop is requested ([`MindError::Stopped`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{Completion, Message, testing::{ScriptedMind, TestContext}};
    ///
    /// let t = TestContext::new(ScriptedMind::new([Completion::text("Paris")]));
    /// let answer = t.ctx().mind().complete(&[Message::user("Capital of France?")], &[]).unwrap();
    /// assert_eq!(answer.text.as_deref(), Some("Paris"));
    /// assert_eq!(t.mind().requests()[0].messages[0].content, "Capital of France?");
    /// ```
    pub fn complete(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<Completion, MindError> {
        self.backend.complete(messages, tools)
    }
}
