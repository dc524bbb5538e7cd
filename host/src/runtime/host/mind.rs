//! `mind`: one completion, raced against a stop request. A stop makes the pending call
//! return `stopped` at once; an answer arriving after the stop is discarded.

use crate::{
    mind::{self as m, MindError},
    runtime::{bindings::mind, state::AgentState},
};

/// Largest conversation (all message texts and tool arguments) one call may send.
const MAX_REQUEST_BYTES: usize = 4 << 20;

fn role(r: mind::Role) -> m::Role {
    match r {
        mind::Role::System => m::Role::System,
        mind::Role::User => m::Role::User,
        mind::Role::Assistant => m::Role::Assistant,
        mind::Role::Tool => m::Role::Tool,
    }
}

fn call_in(c: mind::ToolCall) -> m::ToolCall {
    m::ToolCall {
        id: c.id,
        name: c.name,
        arguments: c.arguments_json,
    }
}

fn call_out(c: m::ToolCall) -> mind::ToolCall {
    mind::ToolCall {
        id: c.id,
        name: c.name,
        arguments_json: c.arguments,
    }
}

fn request_size(messages: &[mind::Message], tools: &[mind::ToolSpec]) -> usize {
    let calls = |m: &mind::Message| {
        m.tool_calls
            .iter()
            .map(|c| c.arguments_json.len() + c.name.len())
            .sum::<usize>()
    };
    messages
        .iter()
        .map(|m| m.content.len() + calls(m))
        .sum::<usize>()
        + tools
            .iter()
            .map(|t| t.parameters_json.len() + t.description.len())
            .sum::<usize>()
}

fn convert(
    messages: Vec<mind::Message>,
    tools: Vec<mind::ToolSpec>,
) -> Result<(Vec<m::Message>, Vec<m::ToolSpec>), mind::MindError> {
    if request_size(&messages, &tools) > MAX_REQUEST_BYTES {
        return Err(mind::MindError::InvalidRequest(format!(
            "the conversation exceeds {MAX_REQUEST_BYTES} bytes; shorten it"
        )));
    }
    let tools = tools
        .into_iter()
        .map(|t| {
            let parameters = serde_json::from_str(&t.parameters_json).map_err(|e| {
                mind::MindError::InvalidRequest(format!(
                    "tool {:?}: parameters-json is not JSON: {e}",
                    t.name
                ))
            })?;
            Ok(m::ToolSpec {
                name: t.name,
                description: t.description,
                parameters,
            })
        })
        .collect::<Result<_, _>>()?;
    let messages = messages
        .into_iter()
        .map(|msg| m::Message {
            role: role(msg.role),
            content: msg.content,
            tool_calls: msg.tool_calls.into_iter().map(call_in).collect(),
            tool_call_id: msg.tool_call_id,
        })
        .collect();
    Ok((messages, tools))
}

impl mind::Host for AgentState {
    async fn complete(
        &mut self,
        messages: Vec<mind::Message>,
        tools: Vec<mind::ToolSpec>,
    ) -> wasmtime::Result<Result<mind::Completion, mind::MindError>> {
        let agent = self.agent.clone();
        if agent.stop.requested() {
            return Ok(Err(mind::MindError::Stopped));
        }
        let (messages, tools) = match convert(messages, tools) {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        let answer = tokio::select! {
            answer = agent.services.mind.complete(&messages, &tools) => answer,
            () = agent.stop.wait() => return Ok(Err(mind::MindError::Stopped)),
        };
        if agent.stop.requested() {
            return Ok(Err(mind::MindError::Stopped));
        }
        Ok(match answer {
            Ok(c) => {
                self.usage.input_tokens += u64::from(c.usage.input_tokens);
                self.usage.output_tokens += u64::from(c.usage.output_tokens);
                Ok(mind::Completion {
                    text: c.text,
                    tool_calls: c.tool_calls.into_iter().map(call_out).collect(),
                    usage: mind::Usage {
                        input_tokens: c.usage.input_tokens,
                        output_tokens: c.usage.output_tokens,
                    },
                })
            }
            Err(MindError::Unavailable(why)) => {
                agent.note_mind_failure();
                Err(mind::MindError::Unavailable(why))
            }
            Err(MindError::InvalidRequest(why)) => Err(mind::MindError::InvalidRequest(why)),
        })
    }
}
