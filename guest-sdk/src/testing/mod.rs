//! In-process test doubles (native builds only), so an agent's logic is unit-tested with
//! plain `cargo test`: a [`ScriptedMind`] that answers from a script and records what it
//! was asked, an [`InMemoryMemory`] with the host's validation rules, defaults, versioning,
//! quota and soft delete, [`FakeTools`] for the account's registered tools, [`FakeHttp`]
//! for outgoing HTTP, a
//! [`ProgressRecorder`], and a [`StopFlag`].
//!
//! [`TestContext`] wires them into a [`Context`] the way the host does: once a stop is
//! requested, the Mind answers [`MindError::Stopped`](crate::MindError::Stopped) and memory
//! operations fail with [`MemoryError::Stopped`].
//!
//! [`check_replay`] checks that an agent replays (runs the same calls again on the
//! recorded results), as the host's resume after a restart needs.
//!
//! # Examples
//!
//! ```
//! use serde_json::json;
//! use wasmind_sdk::{Completion, Context, ToolCall, ToolLoop};
//! use wasmind_sdk::testing::{ScriptedMind, TestContext};
//!
//! fn run(ctx: &Context, task: &str) -> Result<String, String> {
//!     ToolLoop::new("You remember things.").run(ctx, task)
//! }
//!
//! let t = TestContext::new(ScriptedMind::new([
//!     Completion::call(ToolCall::new("c1", "service_memory_put", &json!({"key": "x", "value": "1"}))),
//!     Completion::text("saved"),
//! ]));
//! assert_eq!(run(t.ctx(), "remember x = 1"), Ok("saved".into()));
//! // The second request carried the tool result back to the Mind.
//! let last = t.mind().requests().pop().unwrap();
//! assert!(last.messages.last().unwrap().content.contains("\"key\":\"x\""));
//! ```

mod http;
mod memory;
mod mind;
mod progress;
mod replay;
mod tools;

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

pub use http::{FakeHttp, SentRequest};
pub use memory::InMemoryMemory;
pub use mind::{MindRequest, ScriptedMind};
pub use progress::{LogEntry, ProgressRecorder};
pub use replay::{ReplayDiverged, check_replay};
pub use tools::FakeTools;

use crate::{
    Context, Http, Memory, MemoryError, Mind, Progress, Tools, context::ControlBackend,
    memory::MemoryBackend,
};

/// A stop request that tests set. Cheap to clone; clones share the flag (so a clone can be
/// moved to another thread and set while the agent runs).
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// Requests the stop.
    ///
    /// # Examples
    ///
    /// ```
    /// let flag = wasmind_sdk::testing::StopFlag::default();
    /// flag.clone().request();
    /// assert!(flag.is_requested());
    /// ```
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the stop was requested.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!wasmind_sdk::testing::StopFlag::default().is_requested());
    /// ```
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

impl ControlBackend for StopFlag {
    fn stop_requested(&self) -> bool {
        self.is_requested()
    }
}

/// A [`Context`] over test doubles, with handles on each double to script and inspect them.
///
/// # Examples
///
/// ```
/// use wasmind_sdk::{Completion, testing::{ScriptedMind, TestContext}};
///
/// let t = TestContext::new(ScriptedMind::new([Completion::text("done")]));
/// // hand `t.ctx()` to the agent, then look at `t.mind()`, `t.memory()`, `t.progress()`.
/// # let _ = t;
/// ```
#[derive(Debug, Clone)]
pub struct TestContext {
    ctx: Context,
    mind: ScriptedMind,
    memory: InMemoryMemory,
    progress: ProgressRecorder,
    tools: FakeTools,
    http: FakeHttp,
    stop: StopFlag,
}

impl Default for TestContext {
    /// A context whose Mind has no script (every completion fails as unavailable).
    fn default() -> Self {
        Self::new(ScriptedMind::default())
    }
}

impl TestContext {
    /// A context over `mind` and a fresh, empty [`InMemoryMemory`] without quota.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{Completion, testing::{ScriptedMind, TestContext}};
    ///
    /// let t = TestContext::new(ScriptedMind::new([Completion::text("hi")]));
    /// assert!(t.memory().is_empty());
    /// ```
    pub fn new(mind: ScriptedMind) -> Self {
        Self::with_memory(mind, InMemoryMemory::new())
    }

    /// A context over `mind` and `memory` (e.g. one with a quota, or seeded).
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{PutRequest, testing::{InMemoryMemory, ScriptedMind, TestContext}};
    ///
    /// let t = TestContext::with_memory(ScriptedMind::default(), InMemoryMemory::new().with_quota(1));
    /// t.ctx().memory().put(&PutRequest::new("one", "1")).unwrap();
    /// let full = t.ctx().memory().put(&PutRequest::new("two", "2")).unwrap_err();
    /// assert!(full.to_string().starts_with("memory quota exceeded"));
    /// ```
    pub fn with_memory(mind: ScriptedMind, memory: InMemoryMemory) -> Self {
        let backend: Arc<dyn MemoryBackend> = Arc::new(memory.clone());
        Self::assemble(mind, memory, backend)
    }

    /// A context whose agent was given no memory: every memory operation fails with
    /// [`MemoryError::NotConfigured`]. ([`memory`](Self::memory) is then an unused store.)
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{MemoryError, testing::{ScriptedMind, TestContext}};
    ///
    /// let t = TestContext::without_memory(ScriptedMind::default());
    /// assert_eq!(t.ctx().memory().get("anything", None), Err(MemoryError::NotConfigured));
    /// ```
    pub fn without_memory(mind: ScriptedMind) -> Self {
        Self::assemble(mind, InMemoryMemory::new(), Arc::new(NoMemory))
    }

    fn assemble(
        mind: ScriptedMind,
        memory: InMemoryMemory,
        backend: Arc<dyn MemoryBackend>,
    ) -> Self {
        let stop = StopFlag::default();
        let progress = ProgressRecorder::default();
        let tools = FakeTools::new();
        let http = FakeHttp::new();
        mind.attach_stop(stop.clone());
        memory.attach_stop(stop.clone());
        let ctx = Context::from_parts(
            Mind::new(Arc::new(mind.clone())),
            Memory::new(backend),
            Progress::new(Arc::new(progress.clone())),
            Tools::new(Arc::new(tools.clone())),
            Http::new(Arc::new(http.clone())),
            Arc::new(stop.clone()),
        );
        Self {
            ctx,
            mind,
            memory,
            progress,
            tools,
            http,
            stop,
        }
    }

    /// This context with `http` answering its outgoing requests (by default none is
    /// answered).
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::testing::{FakeHttp, TestContext};
    ///
    /// let t = TestContext::default().with_http(FakeHttp::new().page("https://x.example/", 200, "ok"));
    /// assert!(t.ctx().http().get("https://x.example/").is_ok());
    /// ```
    pub fn with_http(self, http: FakeHttp) -> Self {
        http.attach_stop(self.stop.clone());
        let backend = Http::new(Arc::new(http.clone()));
        Self {
            ctx: self.ctx.with_http(backend),
            http,
            ..self
        }
    }

    /// The outgoing HTTP double: the requests made.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = wasmind_sdk::testing::TestContext::default();
    /// assert!(t.http().requests().is_empty());
    /// ```
    pub fn http(&self) -> &FakeHttp {
        &self.http
    }

    /// This context with `tools` as the account's registered tools (by default it has none).
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::json;
    /// use wasmind_sdk::{ToolSpec, testing::{FakeTools, TestContext}};
    ///
    /// let clock = ToolSpec::new("clock", "The time", json!({"type": "object"}));
    /// let t = TestContext::default().with_tools(FakeTools::new().tool(clock, |_| Ok("noon".into())));
    /// assert_eq!(t.ctx().tools().list().len(), 1);
    /// ```
    pub fn with_tools(self, tools: FakeTools) -> Self {
        tools.attach_stop(self.stop.clone());
        let backend = Tools::new(Arc::new(tools.clone()));
        Self {
            ctx: self.ctx.with_tools(backend),
            tools,
            ..self
        }
    }

    /// The registered tools' double: the calls made.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = wasmind_sdk::testing::TestContext::default();
    /// assert!(t.tools().calls().is_empty());
    /// ```
    pub fn tools(&self) -> &FakeTools {
        &self.tools
    }

    /// The context to hand to the agent function.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{Context, testing::TestContext};
    ///
    /// fn agent(ctx: &Context, task: &str) -> Result<String, String> { Ok(task.into()) }
    /// let t = TestContext::default();
    /// assert_eq!(agent(t.ctx(), "echo"), Ok("echo".into()));
    /// ```
    pub fn ctx(&self) -> &Context {
        &self.ctx
    }

    /// The scripted Mind: what it was asked, what is left of its script.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{Completion, testing::{ScriptedMind, TestContext}};
    ///
    /// let t = TestContext::new(ScriptedMind::new([Completion::text("a"), Completion::text("b")]));
    /// assert_eq!(t.mind().remaining(), 2);
    /// ```
    pub fn mind(&self) -> &ScriptedMind {
        &self.mind
    }

    /// The memory store the context writes to.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{PutRequest, testing::TestContext};
    ///
    /// let t = TestContext::default();
    /// t.ctx().memory().put(&PutRequest::new("k", "v")).unwrap();
    /// assert_eq!(t.memory().len(), 1);
    /// ```
    pub fn memory(&self) -> &InMemoryMemory {
        &self.memory
    }

    /// Every progress entry and log event so far.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::testing::TestContext;
    ///
    /// let t = TestContext::default();
    /// t.ctx().progress().report("info", "hello");
    /// assert_eq!(t.progress().reports()[0].1, "hello");
    /// ```
    pub fn progress(&self) -> &ProgressRecorder {
        &self.progress
    }

    /// The stop flag (clone it to set it from another thread).
    ///
    /// # Examples
    ///
    /// ```
    /// let t = wasmind_sdk::testing::TestContext::default();
    /// t.stop().request();
    /// assert!(t.ctx().stop_requested());
    /// ```
    pub fn stop(&self) -> &StopFlag {
        &self.stop
    }

    /// Requests a stop, as `DELETE /api/v1/agents/{id}` does.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = wasmind_sdk::testing::TestContext::default();
    /// t.request_stop();
    /// assert!(t.ctx().stop_requested());
    /// ```
    pub fn request_stop(&self) {
        self.stop.request();
    }
}

/// The memory of an agent that was given none.
struct NoMemory;

impl MemoryBackend for NoMemory {
    fn put(&self, _: &crate::PutRequest) -> Result<crate::PutResult, MemoryError> {
        Err(MemoryError::NotConfigured)
    }

    fn get(&self, _: &str, _: Option<&str>) -> Result<Option<crate::MemoryRecord>, MemoryError> {
        Err(MemoryError::NotConfigured)
    }

    fn list(&self, _: &crate::ListRequest) -> Result<Vec<crate::MemoryRecord>, MemoryError> {
        Err(MemoryError::NotConfigured)
    }

    fn delete(&self, _: &str, _: Option<&str>) -> Result<(), MemoryError> {
        Err(MemoryError::NotConfigured)
    }

    fn search(&self, _: &crate::SearchRequest) -> Result<Vec<crate::SearchHit>, MemoryError> {
        Err(MemoryError::NotConfigured)
    }
}
