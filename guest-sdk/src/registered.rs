//! The tools the agent's account registered (`/api/v1/tools`: HTTP endpoints, and the tools
//! of remote MCP servers as `mcp_<server>_<tool>`), which the host lists and calls for the
//! agent. Their secrets stay on the host; the agent sees names, descriptions, schemas and
//! result texts. Each call passes the account's egress policy and budgets and is journaled
//! like the agent's own HTTP, so a resumed agent is answered from its journal.

use std::{fmt, sync::Arc};

use serde_json::Value;

use crate::ToolSpec;

/// Why a call of a registered tool gave no result. The run goes on: tell the Mind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// No tool of that name is offered to this agent.
    #[error("unknown tool: {0}")]
    Unknown(String),
    /// The arguments are not a JSON object, or do not fit the tool's schema.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The egress policy or a plan's budget refused the call; nothing was sent.
    #[error("denied: {0}")]
    Denied(String),
    /// The call was made and failed: a status, a timeout, the connection, the protocol.
    #[error("failed: {0}")]
    Failed(String),
    /// A stop was requested.
    #[error("stopped")]
    Stopped,
}

/// Where the tools come from: the host's `tools` import, or a test double.
pub(crate) trait ToolsBackend: Send + Sync {
    fn list(&self) -> Vec<ToolSpec>;
    fn call(&self, name: &str, arguments_json: &str) -> Result<String, ToolError>;
}

/// The account's registered tools, as offered to this agent.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use wasmind_sdk::{ToolSpec, testing::{FakeTools, TestContext}};
///
/// let weather = ToolSpec::new("weather", "Today's weather in a city", json!({"type": "object"}));
/// let t = TestContext::default().with_tools(FakeTools::new().tool(weather, |_| Ok("sunny".into())));
/// assert_eq!(t.ctx().tools().list()[0].name, "weather");
/// assert_eq!(t.ctx().tools().call("weather", &json!({"city": "Oslo"})), Ok("sunny".to_string()));
/// ```
#[derive(Clone)]
pub struct Tools {
    backend: Arc<dyn ToolsBackend>,
}

impl fmt::Debug for Tools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tools").finish_non_exhaustive()
    }
}

impl Tools {
    pub(crate) fn new(backend: Arc<dyn ToolsBackend>) -> Self {
        Self { backend }
    }

    /// The tools offered to this agent, by name, ready to pass to
    /// [`Mind::complete`](crate::Mind::complete).
    pub fn list(&self) -> Vec<ToolSpec> {
        self.backend.list()
    }

    /// Calls the tool `name` with its arguments object: the result's text.
    pub fn call(&self, name: &str, arguments: &Value) -> Result<String, ToolError> {
        self.backend.call(name, &arguments.to_string())
    }

    /// Calls the tool `name` with its arguments as JSON text (as the Mind wrote them).
    pub fn call_json(&self, name: &str, arguments_json: &str) -> Result<String, ToolError> {
        self.backend.call(name, arguments_json)
    }
}
