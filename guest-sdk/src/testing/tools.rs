//! `FakeTools`: registered tools that run closures, and record their calls.

use std::{
    fmt,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use serde_json::Value;

use super::StopFlag;
use crate::{ToolError, ToolSpec, registered::ToolsBackend};

/// What a fake tool does with its arguments object.
type Run = dyn Fn(&Value) -> Result<String, ToolError> + Send + Sync;

#[derive(Default)]
struct Registered {
    tools: Vec<(ToolSpec, Arc<Run>)>,
    calls: Vec<(String, Value)>,
    stop: Option<StopFlag>,
}

/// The account's registered tools, as a test double: each runs a closure. Like the host, a
/// call of a tool not offered is [`ToolError::Unknown`], arguments that are not a JSON
/// object are [`ToolError::InvalidArguments`], and once a stop is requested every call is
/// [`ToolError::Stopped`]. Cheap to clone; clones share the tools and the calls.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use wasmind_sdk::{ToolError, ToolSpec, testing::FakeTools};
///
/// let echo = ToolSpec::new("echo", "Says it back", json!({"type": "object"}));
/// let tools = FakeTools::new().tool(echo, |args| Ok(args["text"].to_string()));
/// # let t = wasmind_sdk::testing::TestContext::default().with_tools(tools.clone());
/// # let ctx = t.ctx();
/// assert_eq!(ctx.tools().call("echo", &json!({"text": "hi"})), Ok("\"hi\"".into()));
/// assert!(matches!(ctx.tools().call("nope", &json!({})), Err(ToolError::Unknown(_))));
/// assert_eq!(tools.calls().len(), 2);
/// ```
#[derive(Clone, Default)]
pub struct FakeTools {
    registered: Arc<Mutex<Registered>>,
}

impl fmt::Debug for FakeTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = (self.lock().tools.iter())
            .map(|(spec, _)| spec.name.clone())
            .collect();
        f.debug_struct("FakeTools").field("tools", &names).finish()
    }
}

impl FakeTools {
    /// No tools.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the tool `spec`, which runs `run` on the arguments object of each call.
    pub fn tool(
        self,
        spec: ToolSpec,
        run: impl Fn(&Value) -> Result<String, ToolError> + Send + Sync + 'static,
    ) -> Self {
        self.lock().tools.push((spec, Arc::new(run)));
        self
    }

    /// Every call made, as (name, arguments), oldest first.
    pub fn calls(&self) -> Vec<(String, Value)> {
        self.lock().calls.clone()
    }

    pub(super) fn attach_stop(&self, stop: StopFlag) {
        self.lock().stop = Some(stop);
    }

    fn lock(&self) -> MutexGuard<'_, Registered> {
        self.registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl ToolsBackend for FakeTools {
    fn list(&self) -> Vec<ToolSpec> {
        self.lock()
            .tools
            .iter()
            .map(|(spec, _)| spec.clone())
            .collect()
    }

    fn call(&self, name: &str, arguments_json: &str) -> Result<String, ToolError> {
        let mut registered = self.lock();
        let arguments: Value = serde_json::from_str(arguments_json)
            .map_err(|e| ToolError::InvalidArguments(format!("the arguments are not JSON: {e}")))?;
        registered.calls.push((name.to_string(), arguments.clone()));
        if registered.stop.as_ref().is_some_and(StopFlag::is_requested) {
            return Err(ToolError::Stopped);
        }
        if !arguments.is_object() {
            return Err(ToolError::InvalidArguments(
                "the arguments must be a JSON object".into(),
            ));
        }
        let Some((_, run)) = registered.tools.iter().find(|(spec, _)| spec.name == name) else {
            return Err(ToolError::Unknown(format!(
                "this account has no tool named {name:?}"
            )));
        };
        let run = run.clone();
        drop(registered);
        run(&arguments)
    }
}
