//! The replay check: whether an agent is deterministic the way the host's resume needs.
//! A server that restarts runs each agent it had alive again from the start, answering its
//! host calls from the journal of the first run; an agent that makes another call than
//! the recorded one fails `replay_diverged`. [`check_replay`] does the same in-process:
//! it runs the agent once on a [`TestContext`] recording every host call and its result,
//! then again with the recorded results answering, and compares the calls.

use std::{
    any::Any,
    sync::{Arc, Mutex},
};

use serde_json::Value;

use super::TestContext;
use crate::{
    Completion, Context, ListRequest, LogKind, Memory, MemoryError, MemoryRecord, Message, Mind,
    MindError, Progress, PutRequest, PutResult, SearchHit, SearchRequest, ToolError, ToolSpec,
    Tools,
    context::ControlBackend,
    http::{Answer, Http, HttpBackend, HttpError},
    memory::MemoryBackend,
    mind::MindBackend,
    progress::ProgressBackend,
    registered::ToolsBackend,
};

/// Where a replayed run departed from the recorded one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the agent does not replay: at call {step} it made {made}, where the first run made {recorded}"
)]
pub struct ReplayDiverged {
    /// The call (1, 2, …) where the runs part.
    pub step: usize,
    /// What the replayed run did there.
    pub made: String,
    /// What the first run did.
    pub recorded: String,
}

/// One recorded call: what was called with what, and what it answered.
struct Recorded {
    call: String,
    result: Box<dyn Any + Send>,
}

#[derive(Default)]
struct Tape {
    calls: Vec<Recorded>,
    /// The next recorded call to answer, once replaying.
    replay: Option<usize>,
    diverged: Option<ReplayDiverged>,
}

/// A context whose every host call goes through the tape: recorded over `inner`, or
/// answered from the tape.
struct Taped {
    inner: Context,
    tape: Mutex<Tape>,
}

impl Taped {
    /// `live` recorded, or the recorded answer to `call`; once the replay diverged,
    /// `diverged` (the agent is then let finish as fast as it can).
    fn answer<R: Clone + Send + 'static>(
        &self,
        call: String,
        live: impl FnOnce() -> R,
        diverged: impl FnOnce() -> R,
    ) -> R {
        let mut tape = self.tape.lock().unwrap();
        let Some(step) = tape.replay else {
            let result = live();
            let answer = Box::new(result.clone());
            tape.calls.push(Recorded {
                call,
                result: answer,
            });
            return result;
        };
        if tape.diverged.is_some() {
            return diverged();
        }
        let answer = tape.calls.get(step).and_then(|recorded| {
            (recorded.call == call)
                .then(|| recorded.result.downcast_ref::<R>().cloned())
                .flatten()
        });
        if let Some(answer) = answer {
            tape.replay = Some(step + 1);
            return answer;
        }
        let recorded = tape.calls.get(step).map_or_else(
            || "no further call (it had returned)".to_string(),
            |r| r.call.clone(),
        );
        tape.diverged = Some(ReplayDiverged {
            step: step + 1,
            made: call,
            recorded,
        });
        diverged()
    }
}

fn context(taped: &Arc<Taped>) -> Context {
    Context::from_parts(
        Mind::new(taped.clone()),
        Memory::new(taped.clone()),
        Progress::new(taped.clone()),
        Tools::new(taped.clone()),
        Http::new(taped.clone()),
        taped.clone(),
    )
}

const DIVERGED: &str = "the replay diverged";

impl MindBackend for Taped {
    fn complete(&self, messages: &[Message], tools: &[ToolSpec]) -> Result<Completion, MindError> {
        self.answer(
            format!("mind.complete({messages:?}, {tools:?})"),
            || self.inner.mind().complete(messages, tools),
            || Err(MindError::Unavailable(DIVERGED.into())),
        )
    }
}

impl MemoryBackend for Taped {
    fn put(&self, request: &PutRequest) -> Result<PutResult, MemoryError> {
        self.answer(
            format!("memory.put({request:?})"),
            || self.inner.memory().put(request),
            || Err(MemoryError::Internal(DIVERGED.into())),
        )
    }

    fn get(&self, key: &str, namespace: Option<&str>) -> Result<Option<MemoryRecord>, MemoryError> {
        self.answer(
            format!("memory.get({key:?}, {namespace:?})"),
            || self.inner.memory().get(key, namespace),
            || Err(MemoryError::Internal(DIVERGED.into())),
        )
    }

    fn list(&self, request: &ListRequest) -> Result<Vec<MemoryRecord>, MemoryError> {
        self.answer(
            format!("memory.list({request:?})"),
            || self.inner.memory().list(request),
            || Err(MemoryError::Internal(DIVERGED.into())),
        )
    }

    fn delete(&self, key: &str, namespace: Option<&str>) -> Result<(), MemoryError> {
        self.answer(
            format!("memory.delete({key:?}, {namespace:?})"),
            || self.inner.memory().delete(key, namespace),
            || Err(MemoryError::Internal(DIVERGED.into())),
        )
    }

    fn search(&self, request: &SearchRequest) -> Result<Vec<SearchHit>, MemoryError> {
        self.answer(
            format!("memory.search({request:?})"),
            || self.inner.memory().search(request),
            || Err(MemoryError::Internal(DIVERGED.into())),
        )
    }
}

impl ToolsBackend for Taped {
    fn list(&self) -> Vec<ToolSpec> {
        let live = || self.inner.tools().list();
        self.answer("tools.list()".to_string(), live, Vec::new)
    }

    fn call(&self, name: &str, arguments_json: &str) -> Result<String, ToolError> {
        self.answer(
            format!("tools.call({name:?}, {arguments_json:?})"),
            || self.inner.tools().call_json(name, arguments_json),
            || Err(ToolError::Failed(DIVERGED.into())),
        )
    }
}

impl HttpBackend for Taped {
    fn send(&self, request: &::http::Request<Vec<u8>>) -> Result<Answer, HttpError> {
        let call = format!(
            "http.send({} {}, {:?}, {:?})",
            request.method(),
            request.uri(),
            request.headers(),
            String::from_utf8_lossy(request.body())
        );
        let live = || self.inner.http().backend().send(request);
        self.answer(call, live, || Err(HttpError(DIVERGED.into())))
    }
}

impl ProgressBackend for Taped {
    fn report(&self, kind: &str, message: &str) {
        let call = format!("progress.report({kind:?}, {message:?})");
        self.answer(call, || self.inner.progress().report(kind, message), || ());
    }

    fn log(&self, kind: LogKind, message: &str, data: Option<Value>) {
        let call = format!("progress.log({kind:?}, {message:?}, {data:?})");
        let live = || self.inner.progress().log(kind, message, data.clone());
        self.answer(call, live, || ());
    }
}

impl ControlBackend for Taped {
    fn stop_requested(&self) -> bool {
        let call = "control.stop_requested()".to_string();
        self.answer(call, || self.inner.stop_requested(), || true)
    }
}

/// Runs `agent` on `task` over `t`, then again with the first run's results answering
/// its host calls, as a server resuming it after a restart does; returns the calls it
/// made, in order, or where the second run departed from the first (another call, another
/// argument, a call more or fewer, another answer). The test doubles of `t` see the first
/// run only.
///
/// An agent replays when all the outside data it uses comes through its host calls: see
/// the SDK's README, "Agents that survive a restart".
///
/// # Examples
///
/// ```
/// use wasmind_sdk::{Completion, Context, ToolLoop, testing::{ScriptedMind, TestContext, check_replay}};
///
/// fn run(ctx: &Context, task: &str) -> Result<String, String> {
///     ToolLoop::new("You answer.").run(ctx, task)
/// }
///
/// let t = TestContext::new(ScriptedMind::new([Completion::text("42")]));
/// let calls = check_replay(&t, "the answer?", run).unwrap();
/// assert!(calls.iter().any(|c| c.starts_with("mind.complete(")));
/// ```
pub fn check_replay(
    t: &TestContext,
    task: &str,
    agent: impl Fn(&Context, &str) -> Result<String, String>,
) -> Result<Vec<String>, ReplayDiverged> {
    let taped = Arc::new(Taped {
        inner: t.ctx().clone(),
        tape: Mutex::default(),
    });
    let ctx = context(&taped);
    let first = agent(&ctx, task);
    taped.tape.lock().unwrap().replay = Some(0);
    let second = agent(&ctx, task);
    let tape = taped.tape.lock().unwrap();
    if let Some(diverged) = &tape.diverged {
        return Err(diverged.clone());
    }
    let step = tape.replay.unwrap_or_default();
    if let Some(missed) = tape.calls.get(step) {
        return Err(ReplayDiverged {
            step: step + 1,
            made: "no further call (it returned)".into(),
            recorded: missed.call.clone(),
        });
    }
    if first != second {
        return Err(ReplayDiverged {
            step: step + 1,
            made: format!("the answer {second:?}"),
            recorded: format!("the answer {first:?}"),
        });
    }
    Ok(tape.calls.iter().map(|c| c.call.clone()).collect())
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::testing::ScriptedMind;

    /// Takes outside data (the time) between its host calls, and writes it.
    fn clock_reader(ctx: &Context, _task: &str) -> Result<String, String> {
        ctx.progress().report("info", "starting");
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH);
        let nanos = now.unwrap_or_default().as_nanos().to_string();
        ctx.memory()
            .put(&PutRequest::new("seen_at", nanos))
            .map_err(|e| e.to_string())?;
        Ok("noted".into())
    }

    #[test]
    fn an_agent_taking_outside_data_around_its_calls_does_not_replay() {
        let t = TestContext::default();
        let diverged = check_replay(&t, "note the time", clock_reader).unwrap_err();
        assert_eq!(diverged.step, 2);
        assert!(diverged.made.starts_with("memory.put("), "{diverged}");
        // The doubles saw the first run only.
        assert_eq!(t.memory().len(), 1);
        assert_eq!(t.progress().reports().len(), 1);
    }

    #[test]
    fn an_agent_whose_data_comes_through_its_calls_replays_and_the_doubles_see_one_run() {
        let t = TestContext::new(ScriptedMind::new([Completion::text("Paris")]));
        let agent = |ctx: &Context, task: &str| {
            let answer = ctx.mind().complete(&[Message::user(task)], &[]);
            let text = answer.map_err(|e| e.to_string())?.text.unwrap_or_default();
            if !ctx.stop_requested() {
                ctx.memory()
                    .put(&PutRequest::new("capital", text.clone()))
                    .map_err(|e| e.to_string())?;
            }
            Ok(text)
        };
        let calls = check_replay(&t, "Capital of France?", agent).unwrap();
        assert_eq!(calls.len(), 3);
        assert!(calls[2].starts_with("memory.put("));
        assert_eq!(t.mind().requests().len(), 1);
        assert_eq!(t.memory().len(), 1);
    }

    #[test]
    fn a_call_fewer_or_another_answer_is_a_divergence_too() {
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let fewer = |ctx: &Context, _: &str| {
            if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                ctx.progress().report("info", "once");
            }
            Ok("done".to_string())
        };
        let diverged = check_replay(&TestContext::default(), "", fewer).unwrap_err();
        assert_eq!(diverged.step, 1);
        assert!(diverged.recorded.starts_with("progress.report("));

        let runs = std::sync::atomic::AtomicUsize::new(0);
        let other = |_: &Context, _: &str| {
            Ok(runs
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
                .to_string())
        };
        let diverged = check_replay(&TestContext::default(), "", other).unwrap_err();
        assert_eq!(diverged.step, 1);
        assert_eq!(diverged.made, "the answer Ok(\"1\")");
    }
}
