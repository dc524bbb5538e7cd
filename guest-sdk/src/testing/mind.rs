//! `ScriptedMind`: answers from a script, records every request.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use super::StopFlag;
use crate::{Completion, Message, MindError, ToolSpec, mind::MindBackend};

/// One request the Mind received.
#[derive(Debug, Clone, PartialEq)]
pub struct MindRequest {
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
}

/// One step of the script.
#[derive(Debug, Clone)]
enum Step {
    Answer(Result<Completion, MindError>),
    /// A stop is requested while this completion is pending.
    Stop,
}

#[derive(Debug, Default)]
struct Script {
    steps: VecDeque<Step>,
    requests: Vec<MindRequest>,
    stop: Option<StopFlag>,
}

/// A Mind that answers from a queue of scripted completions, in order, and records every
/// request so a test can assert what the agent sent (the tool results, the prompt, …).
///
/// Like the host's Mind, it answers [`MindError::Stopped`] once a stop was requested. When
/// the script is exhausted it answers [`MindError::Unavailable`] saying so. Cheap to clone;
/// clones share the script.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use wasmind_sdk::{Completion, MindError, ToolCall, testing::ScriptedMind};
///
/// let mind = ScriptedMind::new([Completion::call(ToolCall::new("c1", "service_memory_list", &json!({})))])
///     .then_error(MindError::Unavailable("provider down".into()))
///     .then(Completion::text("recovered"))
///     .then_stop();
/// assert_eq!(mind.remaining(), 4);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ScriptedMind {
    script: Arc<Mutex<Script>>,
}

impl ScriptedMind {
    /// A Mind that answers with `completions`, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{Completion, testing::ScriptedMind};
    ///
    /// let mind = ScriptedMind::new([Completion::text("first"), Completion::text("second")]);
    /// assert_eq!(mind.remaining(), 2);
    /// ```
    pub fn new(completions: impl IntoIterator<Item = Completion>) -> Self {
        let mind = Self::default();
        mind.lock()
            .steps
            .extend(completions.into_iter().map(|c| Step::Answer(Ok(c))));
        mind
    }

    /// Then answers `completion`.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{Completion, testing::ScriptedMind};
    ///
    /// let mind = ScriptedMind::default().then(Completion::text("only"));
    /// assert_eq!(mind.remaining(), 1);
    /// ```
    pub fn then(self, completion: Completion) -> Self {
        self.lock().steps.push_back(Step::Answer(Ok(completion)));
        self
    }

    /// Then fails with `error`.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{Context, Message, MindError, testing::{ScriptedMind, TestContext}};
    ///
    /// let t = TestContext::new(ScriptedMind::default().then_error(MindError::InvalidRequest("too long".into())));
    /// let err = t.ctx().mind().complete(&[Message::user("…")], &[]).unwrap_err();
    /// assert_eq!(err, MindError::InvalidRequest("too long".into()));
    /// ```
    pub fn then_error(self, error: MindError) -> Self {
        self.lock().steps.push_back(Step::Answer(Err(error)));
        self
    }

    /// Then a stop is requested while the completion is pending (as when the user stops the
    /// agent mid-thought): the stop flag is set and the Mind answers [`MindError::Stopped`].
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{Message, MindError, testing::{ScriptedMind, TestContext}};
    ///
    /// let t = TestContext::new(ScriptedMind::default().then_stop());
    /// assert_eq!(t.ctx().mind().complete(&[Message::user("…")], &[]), Err(MindError::Stopped));
    /// assert!(t.ctx().stop_requested());
    /// ```
    pub fn then_stop(self) -> Self {
        self.lock().steps.push_back(Step::Stop);
        self
    }

    /// Every request received so far, oldest first.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{Completion, Message, testing::{ScriptedMind, TestContext}};
    ///
    /// let t = TestContext::new(ScriptedMind::new([Completion::text("ok")]));
    /// t.ctx().mind().complete(&[Message::user("ping")], &[]).unwrap();
    /// assert_eq!(t.mind().requests()[0].messages, [Message::user("ping")]);
    /// ```
    pub fn requests(&self) -> Vec<MindRequest> {
        self.lock().requests.clone()
    }

    /// How many scripted steps are left.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wasmind_sdk::testing::ScriptedMind::default().remaining(), 0);
    /// ```
    pub fn remaining(&self) -> usize {
        self.lock().steps.len()
    }

    pub(super) fn attach_stop(&self, stop: StopFlag) {
        self.lock().stop = Some(stop);
    }

    fn lock(&self) -> MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl MindBackend for ScriptedMind {
    fn complete(&self, messages: &[Message], tools: &[ToolSpec]) -> Result<Completion, MindError> {
        let mut script = self.lock();
        script.requests.push(MindRequest {
            messages: messages.to_vec(),
            tools: tools.to_vec(),
        });
        let stop = script.stop.clone().unwrap_or_default();
        if stop.is_requested() {
            return Err(MindError::Stopped);
        }
        let call = script.requests.len();
        match script.steps.pop_front() {
            Some(Step::Answer(answer)) => answer,
            Some(Step::Stop) => {
                stop.request();
                Err(MindError::Stopped)
            }
            None => Err(MindError::Unavailable(format!(
                "ScriptedMind: the script has no completion left for call {call}"
            ))),
        }
    }
}
