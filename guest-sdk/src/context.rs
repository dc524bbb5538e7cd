//! The context an agent runs in, and the macro that exports an agent function as the
//! component's `run`.

use std::{fmt, sync::Arc};

use crate::{Http, Memory, Mind, Progress, Tools};

/// Whether a stop was requested: the host's `control` import, or a test flag.
pub(crate) trait ControlBackend: Send + Sync {
    fn stop_requested(&self) -> bool;
}

/// Everything an agent can do beyond computing, handed to the agent function.
///
/// In a component it is built from the host's imports by
/// [`export_agent!`](crate::export_agent); in native tests
/// [`TestContext`](crate::testing::TestContext) builds one over test doubles.
#[derive(Clone)]
pub struct Context {
    mind: Mind,
    memory: Memory,
    progress: Progress,
    tools: Tools,
    http: Http,
    control: Arc<dyn ControlBackend>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("stop_requested", &self.stop_requested())
            .finish_non_exhaustive()
    }
}

impl Context {
    pub(crate) fn from_parts(
        mind: Mind,
        memory: Memory,
        progress: Progress,
        tools: Tools,
        http: Http,
        control: Arc<dyn ControlBackend>,
    ) -> Self {
        Self {
            mind,
            memory,
            progress,
            tools,
            http,
            control,
        }
    }

    /// This context with `http` in place of its outgoing HTTP.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn with_http(self, http: Http) -> Self {
        Self { http, ..self }
    }

    /// This context with `tools` in place of its tools.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn with_tools(self, tools: Tools) -> Self {
        Self { tools, ..self }
    }

    /// The Mind: chat completion with tool calls.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{Completion, Message, testing::{ScriptedMind, TestContext}};
    ///
    /// let t = TestContext::new(ScriptedMind::new([Completion::text("4")]));
    /// let c = t.ctx().mind().complete(&[Message::user("2 + 2?")], &[]).unwrap();
    /// assert_eq!(c.text.as_deref(), Some("4"));
    /// ```
    pub fn mind(&self) -> &Mind {
        &self.mind
    }

    /// The account's long-term memory.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{PutRequest, testing::TestContext};
    ///
    /// let t = TestContext::default();
    /// t.ctx().memory().put(&PutRequest::new("user_name", "Ada")).unwrap();
    /// assert_eq!(t.memory().value("user_name").as_deref(), Some("Ada"));
    /// ```
    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// Progress entries and log events for the agent's caller.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::testing::TestContext;
    ///
    /// let t = TestContext::default();
    /// t.ctx().progress().report("info", "reading");
    /// assert_eq!(t.progress().reports().len(), 1);
    /// ```
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// The tools the account registered, as offered to this agent (its spawn's `tools`
    /// field may name fewer): HTTP endpoints and MCP servers' tools that the host calls.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::testing::TestContext;
    ///
    /// let t = TestContext::default();
    /// assert!(t.ctx().tools().list().is_empty());
    /// ```
    pub fn tools(&self) -> &Tools {
        &self.tools
    }

    /// Outgoing HTTP (`wasi:http`), in the `http` crate's types: what the host sends is
    /// the operator's egress policy's to allow, and each exchange is journaled.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::testing::{FakeHttp, TestContext};
    ///
    /// let t = TestContext::default().with_http(FakeHttp::new().page("https://x.example/", 200, "hi"));
    /// assert_eq!(t.ctx().http().get("https://x.example/").unwrap().body(), b"hi");
    /// ```
    pub fn http(&self) -> &Http {
        &self.http
    }

    /// True once a stop was requested: finish promptly (the host interrupts the agent about
    /// 10 seconds later). Cheap; check it between steps.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::testing::TestContext;
    ///
    /// let t = TestContext::default();
    /// assert!(!t.ctx().stop_requested());
    /// t.request_stop();
    /// assert!(t.ctx().stop_requested());
    /// ```
    pub fn stop_requested(&self) -> bool {
        self.control.stop_requested()
    }
}

/// Runs `agent` on `task` with a context over the host's imports: the body of the `run`
/// export that [`export_agent!`] generates.
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub fn run_exported(
    agent: impl FnOnce(&Context, &str) -> Result<String, String>,
    task: &str,
) -> Result<String, String> {
    agent(&crate::host::context(), task)
}

/// Exports an agent function `fn(&Context, &str) -> Result<String, String>` as the
/// component's `run`.
///
/// Compiled for `wasm32` it implements the WIT export with a [`Context`] over the host's
/// imports; compiled natively it only checks the function's signature, so the crate's
/// tests call the function directly with a
/// [`TestContext`](crate::testing::TestContext). Use it once per crate, in a crate whose
/// `crate-type` includes `cdylib`.
///
/// # Examples
///
/// ```
/// use wasmind_sdk::Context;
///
/// fn run(ctx: &Context, task: &str) -> Result<String, String> {
///     ctx.progress().report("info", "echoing");
///     Ok(task.to_string())
/// }
///
/// wasmind_sdk::export_agent!(run);
/// ```
#[macro_export]
macro_rules! export_agent {
    ($agent:path) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct WasmindAgent;

            impl $crate::wit::Guest for WasmindAgent {
                fn run(
                    task: ::std::string::String,
                ) -> ::std::result::Result<::std::string::String, ::std::string::String> {
                    $crate::run_exported($agent, &task)
                }
            }

    $crate::wit::export!(WasmindAgent with_types_in $crate::wit);
        };

        #[cfg(not(target_arch = "wasm32"))]
        const _: fn(
            &$crate::Context,
            &str,
        ) -> ::std::result::Result<::std::string::String, ::std::string::String> = $agent;
    };
}
