//! `tools`: the account's registered tools (`crate::tools`), listed and called through the
//! agent's journal, so a replayed agent calls nothing and sees what it saw.
//!
//! - `list` is a read: the account's tools as last listed (an MCP server never listed is
//!   listed now), only those the spawn's `tools` field names when it has one.
//! - `call` is an effect, on the same path as a guest's own `wasi:http` request: the tool
//!   found and its arguments checked (so an unknown tool is told as such, whatever the
//!   budgets say), the plan's budgets per run and per month (checked here, counted in the run's usage when
//!   the call went out, replayed or live), then the egress door's allowlists, address
//!   checks, caps and timeouts (inside `Tools::send`), and the whole answer recorded synced
//!   before the guest sees it. A refusal reaches the guest as `denied` and the agent's log
//!   says which rule refused it (event kind `egress`, as for its own requests).
//! - A call in flight at a crash is made again by the resumed run (at least once), with
//!   the same `Idempotency-Key`: derived from the agent and the call's journal step.
//! - A slow tool parks the agent as a slow Mind answer does (`park`).

use std::{sync::Arc, time::Instant};

use serde::{Deserialize, Serialize};
use tokio_util::task::AbortOnDropHandle;

use super::http::{fits_journal, idempotency_key, refused};
use crate::{
    runtime::{
        bindings::{mind, tools as wt},
        journal::Call,
        park::{Pending, Waited},
        state::{AgentState, Services},
    },
    tools::ToolError,
};

/// The journal's names of the two calls.
const LIST: &str = "tools.list";
const CALL: &str = "tools.call";

/// What a call did: its answer to the guest, and the bytes it moved when a request went
/// out (the arguments' and the result's), which count against the run's budgets.
#[derive(Serialize, Deserialize)]
struct Outcome {
    answer: Result<String, wt::ToolError>,
    moved: Option<u64>,
    /// The egress rule that refused it, and why (live only: logged, not journaled).
    #[serde(skip)]
    refusal: Option<(String, String)>,
}

impl Outcome {
    /// A call that sent nothing.
    fn unsent(error: wt::ToolError) -> Self {
        Self {
            answer: Err(error),
            moved: None,
            refusal: None,
        }
    }

    /// The outcome of `Tools::resolve` or `Tools::send`, whose request carried `sent` bytes.
    fn of(answer: Result<String, ToolError>, sent: u64) -> Self {
        let moved = match &answer {
            Ok(text) => Some(sent + text.len() as u64),
            Err(ToolError::Failed(_)) => Some(sent),
            Err(_) => None,
        };
        let refusal = match &answer {
            Err(ToolError::Denied { rule, message }) => Some((rule.clone(), message.clone())),
            _ => None,
        };
        Self {
            answer: answer.map_err(wit_error),
            moved,
            refusal,
        }
    }

    /// The call's task, joined.
    fn joined(done: Result<Self, tokio::task::JoinError>, sent: u64) -> Self {
        done.unwrap_or_else(|e| Self {
            answer: Err(wt::ToolError::Failed(format!(
                "the call did not finish: {e}"
            ))),
            moved: Some(sent),
            refusal: None,
        })
    }
}

fn wit_error(e: ToolError) -> wt::ToolError {
    match e {
        ToolError::Unknown(m) => wt::ToolError::Unknown(m),
        e @ ToolError::Server(_) => wt::ToolError::Unknown(e.to_string()),
        ToolError::InvalidArguments(m) => wt::ToolError::InvalidArguments(m),
        e @ ToolError::Denied { .. } => wt::ToolError::Denied(e.to_string()),
        ToolError::Failed(m) => wt::ToolError::Failed(m),
    }
}

impl AgentState {
    /// The tools offered to the agent, live.
    async fn offered(&mut self, outside: Arc<Services>) -> wasmtime::Result<Vec<mind::ToolSpec>> {
        let specs =
            (outside.tools.specs(&self.agent.account).await).map_err(wasmtime::Error::msg)?;
        Ok((specs.into_iter())
            .filter(|spec| self.agent.offers(&spec.name))
            .map(|spec| mind::ToolSpec {
                name: spec.name,
                description: spec.description,
                parameters_json: spec.parameters,
            })
            .collect())
    }

    /// One call, live: the tool found (`Tools::resolve`), the budgets, then `Tools::send`
    /// as a task of its own (raced against a stop, parked when slow), its answer checked to
    /// fit the journal.
    async fn call_live(
        &mut self,
        outside: Arc<Services>,
        (func, args): (&'static str, u64),
        step: u64,
        name: String,
        arguments: String,
    ) -> wasmtime::Result<Outcome> {
        let agent = self.agent.clone();
        if agent.stop.requested() {
            return Ok(Outcome::unsent(wt::ToolError::Stopped));
        }
        if !agent.offers(&name) {
            return Ok(Outcome::unsent(wt::ToolError::Unknown(format!(
                "this agent was not given the tool {name:?}: its spawn's tools field names the ones it may use"
            ))));
        }
        let sent = (name.len() + arguments.len()) as u64;
        // An unknown tool or bad arguments are told as such, whatever the budgets say.
        let call = match outside
            .tools
            .resolve(&agent.account, &name, &arguments)
            .await
        {
            Ok(call) => call,
            Err(e) => return Ok(Outcome::of(Err(e), sent)),
        };
        let plan = self.plan(&outside).await?;
        let max_response = match self.budget(&outside, plan, sent).await? {
            Ok(max) => max,
            Err(refusal) => {
                refused(
                    &outside,
                    &agent,
                    refusal.rule,
                    &refusal.message,
                    ("tool", &name),
                )
                .await?;
                let why = format!("{} (egress rule: {})", refusal.message, refusal.rule);
                return Ok(Outcome::unsent(wt::ToolError::Denied(why)));
            }
        };
        // A node that lost its claim on the agent calls nothing (see `mind`).
        agent.journal.holds().await?;
        let tools = outside.tools.clone();
        let key = idempotency_key(&agent.agent_id, step);
        let since = Instant::now();
        let request = AbortOnDropHandle::new(tokio::spawn(async move {
            let answer = tools.send(plan, call, &key, max_response).await;
            Outcome::of(answer, sent)
        }));
        let in_flight = |request: AbortOnDropHandle<_>| Pending::Answer {
            func,
            args,
            answer: Box::pin(async move {
                serde_json::to_value(Outcome::joined(request.await, sent)).unwrap_or_default()
            }),
        };
        let outcome = match agent.wait_or_park(since, request, in_flight).await {
            Waited::Done(done) => Outcome::joined(done, sent),
            Waited::Stopped => Outcome {
                answer: Err(wt::ToolError::Stopped),
                moved: Some(sent),
                refusal: None,
            },
            Waited::Parked(pending) => return Err(self.hibernate(pending)),
        };
        if let Some((rule, why)) = &outcome.refusal {
            refused(&outside, &agent, rule, why, ("tool", &name)).await?;
        }
        if let Err((_, why)) = fits_journal(&agent, &outcome) {
            refused(&outside, &agent, "journal", &why, ("tool", &name)).await?;
            return Ok(Outcome {
                answer: Err(wt::ToolError::Failed(why)),
                moved: outcome.moved,
                refusal: None,
            });
        }
        Ok(outcome)
    }
}

impl wt::Host for AgentState {
    async fn list(&mut self) -> wasmtime::Result<Vec<mind::ToolSpec>> {
        let call = Call::read(LIST, &());
        self.journaled(call, |s, outside| Box::pin(s.offered(outside)))
            .await
    }

    async fn call(
        &mut self,
        name: String,
        arguments_json: String,
    ) -> wasmtime::Result<Result<String, wt::ToolError>> {
        let call = Call::effect(CALL, &(&name, &arguments_json));
        let made = (call.func(), call.args());
        let step = self.agent.journal.next_step();
        let outcome = self
            .journaled(call, |s, outside| {
                Box::pin(s.call_live(outside, made, step, name, arguments_json))
            })
            .await?;
        if let Some(bytes) = outcome.moved {
            self.usage.http_requests += 1;
            self.usage.http_bytes += bytes;
        }
        Ok(outcome.answer)
    }
}
