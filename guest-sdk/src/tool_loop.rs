//! A ready tool-calling loop: ask the Mind, run the tool calls it makes, feed the results
//! back, until it answers with text alone.

use std::{fmt, rc::Rc};

use serde_json::{Value, json};

use crate::{
    Completion, Context, LogKind, Message, MindError, ToolCall, ToolSpec, call_memory_tool,
    is_memory_tool, memory_tools,
};

/// What the loop returns when a stop was requested.
const STOPPED: &str = "stopped";

/// The loop of a tool-using agent, over the memory tools, the author's own
/// ([`tool`](Self::tool)) and, when asked ([`account_tools`](Self::account_tools)), the
/// tools the account registered.
///
/// Each step it checks [`Context::stop_requested`], asks the Mind with the conversation so
/// far, logs the Mind's text as `thinking`, and runs every tool call it made (progress entry
/// `tool_use`, log events `tool_use` and `tool_result`), appending the assistant message and
/// one `tool` message per call. A completion without tool calls ends the loop: its text is
/// the answer. It returns:
///
/// - `Err("stopped")` as soon as a stop is requested (checked before every step and every
///   tool call, and after every Mind error);
/// - `Err` naming the cause when the Mind fails (unavailable after the host's retries, or
///   the request refused);
/// - `Err` when the step cap ([`max_steps`](Self::max_steps), default 20) is reached
///   without an answer.
///
/// Tool failures do not end it: their text goes back to the Mind, as does a call of a tool
/// that is not offered.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use wasmind_sdk::{Completion, ToolCall, ToolLoop, testing::{ScriptedMind, TestContext}};
///
/// let mind = ScriptedMind::new([
///     Completion::call(ToolCall::new("c1", "service_memory_put", &json!({"key": "pet", "value": "a cat"}))),
///     Completion::text("Noted: you have a cat."),
/// ]);
/// let t = TestContext::new(mind);
/// let answer = ToolLoop::new("You remember things.").max_steps(5).run(t.ctx(), "I have a cat");
/// assert_eq!(answer.as_deref(), Ok("Noted: you have a cat."));
/// assert_eq!(t.memory().value("pet").as_deref(), Some("a cat"));
/// ```
#[derive(Debug, Clone)]
pub struct ToolLoop {
    system_prompt: String,
    max_steps: usize,
    tools: Vec<ToolSpec>,
    /// The author's tools, by name; the memory tools are not here.
    own: Vec<OwnTool>,
    /// Whether the account's registered tools are offered too.
    account_tools: bool,
}

/// What an author's tool does with its arguments: the text the Mind reads, or why it failed.
type ToolFn = dyn Fn(&Value) -> Result<String, String>;

/// One of the author's tools: its name and what it runs. (`Rc`: a loop is cloned cheaply
/// and guests are single-threaded.)
#[derive(Clone)]
struct OwnTool {
    name: String,
    run: Rc<ToolFn>,
}

impl fmt::Debug for OwnTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnTool").field("name", &self.name).finish()
    }
}

impl ToolLoop {
    /// A loop with this system prompt, offering the five memory tools, capped at 20 steps.
    ///
    /// # Examples
    ///
    /// ```
    /// let tool_loop = wasmind_sdk::ToolLoop::new("You are a careful research assistant.");
    /// ```
    pub fn new(system_prompt: impl Into<String>) -> Self {
        Self {
            system_prompt: system_prompt.into(),
            max_steps: 20,
            tools: memory_tools(),
            own: Vec::new(),
            account_tools: false,
        }
    }

    /// Offers the Mind the tools the account registered too ([`Context::tools`], listed
    /// once when the loop starts), after the memory tools and the author's: a registered
    /// tool whose name one of those has is not offered. Their calls are made by the host;
    /// a failure goes back to the Mind as `Tool <name> failed: <why>`.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::json;
    /// use wasmind_sdk::{Completion, ToolCall, ToolLoop, ToolSpec, testing::{FakeTools, ScriptedMind, TestContext}};
    ///
    /// let weather = ToolSpec::new("weather", "Today's weather in a city", json!({"type": "object"}));
    /// let t = TestContext::new(ScriptedMind::new([
    ///     Completion::call(ToolCall::new("c1", "weather", &json!({"city": "Oslo"}))),
    ///     Completion::text("Sunny in Oslo."),
    /// ]))
    /// .with_tools(FakeTools::new().tool(weather, |_| Ok("sunny".into())));
    /// let answer = ToolLoop::new("You answer.").account_tools().run(t.ctx(), "Weather in Oslo?");
    /// assert_eq!(answer.as_deref(), Ok("Sunny in Oslo."));
    /// assert_eq!(t.mind().requests()[0].tools.len(), 6);
    /// assert_eq!(t.mind().requests()[1].messages[3].content, "sunny");
    /// ```
    pub fn account_tools(mut self) -> Self {
        self.account_tools = true;
        self
    }

    /// Offers the Mind one more tool beside the memory tools: `spec` says what it is (name,
    /// description, JSON Schema of its arguments) and `run` does it, given the arguments
    /// object the Mind sent. `Ok(text)` goes back to the Mind as the result; `Err(why)`
    /// goes back as `Tool <name> failed: <why>`, and the loop goes on either way. A tool
    /// whose name is already offered (a memory tool included) replaces it.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::json;
    /// use wasmind_sdk::{Completion, ToolCall, ToolLoop, ToolSpec, testing::{ScriptedMind, TestContext}};
    ///
    /// let add = ToolSpec::new("add", "Adds two numbers", json!({
    ///     "type": "object",
    ///     "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
    ///     "required": ["a", "b"],
    /// }));
    /// let t = TestContext::new(ScriptedMind::new([
    ///     Completion::call(ToolCall::new("c1", "add", &json!({"a": 2, "b": 3}))),
    ///     Completion::text("2 + 3 = 5"),
    /// ]));
    /// let answer = ToolLoop::new("You add numbers.")
    ///     .tool(add, |args| {
    ///         let n = |k: &str| args[k].as_f64().ok_or(format!("{k} must be a number"));
    ///         Ok((n("a")? + n("b")?).to_string())
    ///     })
    ///     .run(t.ctx(), "What is 2 + 3?");
    /// assert_eq!(answer.as_deref(), Ok("2 + 3 = 5"));
    /// assert_eq!(t.mind().requests()[1].messages[3].content, "5");
    /// ```
    pub fn tool(
        mut self,
        spec: ToolSpec,
        run: impl Fn(&Value) -> Result<String, String> + 'static,
    ) -> Self {
        self.tools.retain(|t| t.name != spec.name);
        self.own.retain(|t| t.name != spec.name);
        self.own.push(OwnTool {
            name: spec.name.clone(),
            run: Rc::new(run),
        });
        self.tools.push(spec);
        self
    }

    /// At most `steps` calls of the Mind (at least 1).
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{Completion, ToolCall, ToolLoop, testing::{ScriptedMind, TestContext}};
    ///
    /// let list = || Completion::call(ToolCall::new("c", "service_memory_list", &serde_json::json!({})));
    /// let t = TestContext::new(ScriptedMind::new([list(), list(), list()]));
    /// let err = ToolLoop::new("…").max_steps(2).run(t.ctx(), "loop forever").unwrap_err();
    /// assert!(err.contains("2 steps"), "{err}");
    /// ```
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.max_steps = steps.max(1);
        self
    }

    /// Works on `task` (the user message) until the Mind answers; see the [type](Self) docs.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{Completion, ToolLoop, testing::{ScriptedMind, TestContext}};
    ///
    /// let t = TestContext::new(ScriptedMind::new([Completion::text("Hi!")]));
    /// t.request_stop();
    /// assert_eq!(ToolLoop::new("…").run(t.ctx(), "Say hi"), Err("stopped".to_string()));
    /// ```
    pub fn run(&self, ctx: &Context, task: &str) -> Result<String, String> {
        let progress = ctx.progress();
        progress.report("info", &format!("started: {}", preview(task, 200)));
        let mut messages = vec![
            Message::system(self.system_prompt.clone()),
            Message::user(task),
        ];
        let tools = self.offered(ctx);
        for step in 1..=self.max_steps {
            if ctx.stop_requested() {
                return Err(stopped(ctx));
            }
            let completion = match ctx.mind().complete(&messages, &tools) {
                Ok(c) => c,
                Err(_) if ctx.stop_requested() => return Err(stopped(ctx)),
                Err(MindError::Stopped) => return Err(stopped(ctx)),
                Err(e) => {
                    progress.report("info", &format!("failed: {e}"));
                    return Err(e.to_string());
                }
            };
            let Completion {
                text,
                tool_calls,
                usage,
            } = completion;
            let text = text.unwrap_or_default();
            if !text.trim().is_empty() {
                let data = json!({
                    "step": step,
                    "usage": { "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens },
                });
                progress.log(LogKind::Thinking, &text, Some(data));
            }
            if tool_calls.is_empty() {
                progress.report("info", &format!("finished after {step} step(s)"));
                return Ok(text);
            }
            messages.push(Message::assistant(text, tool_calls.clone()));
            for call in &tool_calls {
                if ctx.stop_requested() {
                    return Err(stopped(ctx));
                }
                let result = self.call_tool(ctx, &tools, call);
                messages.push(Message::tool(call.id.clone(), result));
            }
        }
        let message = format!(
            "gave up after {} steps without a final answer (the step cap)",
            self.max_steps
        );
        progress.report("info", &message);
        Err(message)
    }

    /// The tools offered: the memory tools and the author's, then the account's not
    /// shadowed by them when asked for.
    fn offered(&self, ctx: &Context) -> Vec<ToolSpec> {
        let mut tools = self.tools.clone();
        if self.account_tools {
            let registered = ctx.tools().list();
            let fresh: Vec<ToolSpec> = (registered.into_iter())
                .filter(|t| !self.tools.iter().any(|o| o.name == t.name))
                .collect();
            tools.extend(fresh);
        }
        tools
    }

    /// Runs one tool call, with its progress entry and log events; returns the result text.
    fn call_tool(&self, ctx: &Context, tools: &[ToolSpec], call: &ToolCall) -> String {
        let progress = ctx.progress();
        progress.report("tool_use", &call.name);
        let arguments = call
            .arguments()
            .unwrap_or_else(|_| Value::String(call.arguments_json.clone()));
        progress.log(
            LogKind::ToolUse,
            &call.name,
            Some(json!({ "id": call.id, "name": call.name, "arguments": arguments })),
        );
        let offered = tools.iter().any(|t| t.name == call.name);
        let own = self.own.iter().find(|t| t.name == call.name);
        let result = if let Some(tool) = own {
            run_own(tool, call)
        } else if offered && is_memory_tool(&call.name) {
            call_memory_tool(ctx.memory(), call)
        } else if offered {
            (ctx.tools().call_json(&call.name, &call.arguments_json))
                .unwrap_or_else(|e| format!("Tool {} failed: {e}", call.name))
        } else {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            format!(
                "Unknown tool {:?}: the tools available are {}.",
                call.name,
                names.join(", ")
            )
        };
        progress.log(
            LogKind::ToolResult,
            &result,
            Some(json!({ "id": call.id, "name": call.name })),
        );
        result
    }
}

/// Runs an author's tool on the call's arguments; arguments that are not JSON are the
/// tool's failure, told to the Mind like any other.
fn run_own(tool: &OwnTool, call: &ToolCall) -> String {
    let outcome = call
        .arguments()
        .map_err(|e| format!("the arguments are not valid JSON ({e})"))
        .and_then(|args| (tool.run)(&args));
    match outcome {
        Ok(text) => text,
        Err(why) => format!("Tool {} failed: {why}", tool.name),
    }
}

fn stopped(ctx: &Context) -> String {
    ctx.progress().report("info", "stopped on request");
    STOPPED.to_string()
}

/// The first `max` characters of `text`, with an ellipsis when cut.
fn preview(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests;
