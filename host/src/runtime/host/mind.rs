//! `mind`: one completion, raced against a stop request. A stop makes the pending call
//! return `stopped` at once; an answer arriving after the stop is discarded. The run's
//! Mind tokens are held to its plan's `tokens_per_run`: a call once they are spent, or an
//! answer that takes them past it, ends the run (a trap, like a spent CPU budget: nothing
//! the guest could do about it), reported `token_limit_exceeded`. One call can overshoot
//! by at most what one answer costs, its request bounded by [`MAX_REQUEST_BYTES`].
//! Tool schemas are checked and kept as JSON text (`Schema`), never parsed into trees.
//! A call that waits past `[runtime] hibernate_after_ms` hibernates the agent (`park`).
//! On the postgres backend a request is sent only while the node's claim on the agent
//! holds (checked just before it is sent): a node that lost it sends none, and its run ends.

use std::{sync::Arc, time::Instant};

use tokio_util::task::AbortOnDropHandle;

use crate::{
    mind::{self as m, MindError},
    runtime::{
        bindings::mind,
        journal::Call,
        park::{Hibernating, Pending, Waited},
        records::MemoryMode,
        state::{AgentCtx, AgentState, Services},
    },
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

/// What `both` mode tells the Mind on top of the agent's own system prompt.
const BOTH_NOTE: &str = "As you work, save what is worth remembering for later runs \
(facts, decisions, results) with the service_memory_put tool; what you do not save may \
still be extracted after the run.";

/// Adds the `both`-mode note to the conversation's system prompt (or starts one).
fn remind(messages: &mut Vec<m::Message>) {
    match messages.iter_mut().find(|msg| msg.role == m::Role::System) {
        Some(system) => system.content = format!("{}\n\n{BOTH_NOTE}", system.content),
        None => messages.insert(0, m::Message::system(BOTH_NOTE)),
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
            let parameters = m::Schema::parse(t.parameters_json).map_err(|e| {
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

/// Ends the run: its Mind calls spent `spent` tokens of its `budget`.
fn over_budget(agent: &AgentCtx, spent: u64) -> wasmtime::Error {
    agent
        .over_tokens
        .store(true, std::sync::atomic::Ordering::Relaxed);
    wasmtime::Error::msg(format!(
        "the run's Mind calls spent {spent} tokens of its budget of {}",
        agent.token_budget
    ))
}

/// What the guest is answered once the provider request's task is done.
fn answer(
    joined: Result<Result<m::Completion, MindError>, tokio::task::JoinError>,
) -> Result<mind::Completion, mind::MindError> {
    match joined {
        Ok(Ok(c)) => Ok(mind::Completion {
            text: c.text,
            tool_calls: c.tool_calls.into_iter().map(call_out).collect(),
            usage: mind::Usage {
                input_tokens: c.usage.input_tokens,
                output_tokens: c.usage.output_tokens,
            },
        }),
        Ok(Err(MindError::Unavailable(why))) => Err(mind::MindError::Unavailable(why)),
        Ok(Err(MindError::InvalidRequest(why))) => Err(mind::MindError::InvalidRequest(why)),
        Err(e) => Err(mind::MindError::Unavailable(format!(
            "the Mind call did not finish: {e}"
        ))),
    }
}

impl AgentState {
    /// The completion itself: a turn to send on (one of a remote provider's connections),
    /// then the provider request, each raced against a stop request. A call that waits
    /// past the hibernation delay parks the agent (see `park`): it unwinds with
    /// [`Hibernating`], keeping as the parked call `call`'s wait either the turn to come
    /// (no request made yet: the resumed run makes it) or the request's task.
    async fn complete_live(
        &mut self,
        outside: Arc<Services>,
        call: (&'static str, u64),
        messages: Vec<mind::Message>,
        tools: Vec<mind::ToolSpec>,
    ) -> wasmtime::Result<Result<mind::Completion, mind::MindError>> {
        let agent = self.agent.clone();
        if agent.stop.requested() {
            return Ok(Err(mind::MindError::Stopped));
        }
        let (mut messages, tools) = match convert(messages, tools) {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        if agent.memory_mode == MemoryMode::Both {
            remind(&mut messages);
        }
        let since = Instant::now();
        let mind = outside.mind.clone();
        let turn = match agent.take_turn() {
            Some(turn) => Some(turn),
            None => match agent.wait_or_park(since, mind.turn(), Pending::Turn).await {
                Waited::Done(turn) => turn,
                Waited::Stopped => return Ok(Err(mind::MindError::Stopped)),
                Waited::Parked(pending) => return Err(self.hibernate(pending)),
            },
        };
        // A node that lost its claim on the agent sends no request: its tokens would be
        // spent for a run another node now runs, and metered nowhere. (A request sent
        // while the claim held runs on if the claim is lost meanwhile.)
        agent.journal.holds().await?;
        // The provider request is a task of its own, not polled on the guest's fiber: its
        // HTTP and JSON frames use a worker's stack, so the fiber stack of each of thousands
        // of agents waiting on the Mind stays as small as a plain host call's. Dropped (a
        // stop, the store, a parked agent's end), the call is aborted.
        let request = AbortOnDropHandle::new(tokio::spawn(async move {
            mind.complete_on(turn, &messages, &tools).await
        }));
        let (func, args) = call;
        let in_flight = |request: AbortOnDropHandle<_>| Pending::Answer {
            func,
            args,
            answer: Box::pin(async move {
                serde_json::to_value(answer(request.await)).unwrap_or(serde_json::Value::Null)
            }),
        };
        let joined = match agent.wait_or_park(since, request, in_flight).await {
            Waited::Done(joined) => joined,
            Waited::Stopped => return Ok(Err(mind::MindError::Stopped)),
            Waited::Parked(pending) => return Err(self.hibernate(pending)),
        };
        if agent.stop.requested() {
            return Ok(Err(mind::MindError::Stopped));
        }
        Ok(answer(joined))
    }

    /// Unwinds the run to hibernate on `pending` (see `park`).
    pub(super) fn hibernate(&mut self, pending: Pending) -> wasmtime::Error {
        self.parked = Some(pending);
        wasmtime::Error::new(Hibernating)
    }

    /// What a completion leaves in the run, live or replayed: its tokens, the Mind's
    /// failure, and the conversation extraction reads (`sent`, kept when the agent's
    /// memories are extracted).
    fn completed(
        &mut self,
        sent: Option<Vec<mind::Message>>,
        answer: &Result<mind::Completion, mind::MindError>,
    ) {
        match answer {
            Ok(c) => {
                let usage = m::Usage {
                    input_tokens: c.usage.input_tokens,
                    output_tokens: c.usage.output_tokens,
                };
                self.usage += usage.into();
                let Some(Ok((mut messages, _))) = sent.map(|s| convert(s, Vec::new())) else {
                    return;
                };
                if self.agent.memory_mode == MemoryMode::Both {
                    remind(&mut messages);
                }
                let calls = c.tool_calls.iter().cloned().map(call_in).collect();
                let text = c.text.clone().unwrap_or_default();
                messages.push(m::Message::assistant(text, calls));
                self.conversation = messages;
            }
            Err(mind::MindError::Unavailable(_)) => self.agent.note_mind_failure(),
            Err(_) => {}
        }
    }
}

impl mind::Host for AgentState {
    async fn complete(
        &mut self,
        messages: Vec<mind::Message>,
        tools: Vec<mind::ToolSpec>,
    ) -> wasmtime::Result<Result<mind::Completion, mind::MindError>> {
        if self.usage.tokens() >= self.agent.token_budget {
            return Err(over_budget(&self.agent, self.usage.tokens()));
        }
        // A Mind that answers alike for free (the offline one) need not have its answer
        // synced: a call lost in a crash is made again, with the same answer.
        let call = match self.agent.door.mind_answers_alike() {
            true => Call::read("mind.complete", &(&messages, &tools)),
            false => Call::effect("mind.complete", &(&messages, &tools)),
        };
        let made = (call.func(), call.args());
        let sent = self.agent.memory_mode.extracts().then(|| messages.clone());
        let answer = self
            .journaled(call, |s, outside| {
                Box::pin(s.complete_live(outside, made, messages, tools))
            })
            .await?;
        self.completed(sent, &answer);
        if self.usage.tokens() > self.agent.token_budget {
            return Err(over_budget(&self.agent, self.usage.tokens()));
        }
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_mode_note_joins_the_system_prompt_or_starts_one() {
        let mut with = vec![
            m::Message::system("You are helpful."),
            m::Message::user("hi"),
        ];
        remind(&mut with);
        assert_eq!(with.len(), 2);
        assert!(
            with[0]
                .content
                .starts_with("You are helpful.\n\nAs you work")
        );
        let mut without = vec![m::Message::user("hi")];
        remind(&mut without);
        assert_eq!(without[0], m::Message::system(BOTH_NOTE));
        assert_eq!(without[1], m::Message::user("hi"));
    }
}
