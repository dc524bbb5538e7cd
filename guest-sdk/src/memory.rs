//! Long-term memory of the agent's account (WIT interface `memory`): the operations,
//! defaults and limits of the memory HTTP API, scoped by the host to the account.

use std::{fmt, sync::Arc};

/// A write. Defaults: namespace `default`, importance 5, no expiry.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PutRequest {
    /// snake_case (`^[a-z][a-z0-9_]*$`), at most 128 characters.
    pub key: String,
    /// At most 5,000 characters.
    pub value: String,
    pub namespace: Option<String>,
    /// At most 20, each at most 50 characters.
    pub tags: Vec<String>,
    /// 1 to 10.
    pub importance: Option<f64>,
    pub expires_in_days: Option<f64>,
    /// When the fact was stated or observed (epoch milliseconds, not in the future); the
    /// write's time when `None`. Search's time decay and `as_of` reads go by it.
    pub observed_at: Option<u64>,
}

impl PutRequest {
    /// A write of `value` at `key` with every default.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::PutRequest;
    ///
    /// let put = PutRequest::new("favourite_food", "pizza")
    ///     .namespace("prefs")
    ///     .tags(["food"])
    ///     .importance(8.0)
    ///     .expires_in_days(30.0)
    ///     .observed_at(1_700_000_000_000);
    /// assert_eq!(put.namespace.as_deref(), Some("prefs"));
    /// ```
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            value: value.into(),
            ..Self::default()
        }
    }

    /// In `namespace` instead of `default`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// With these tags.
    pub fn tags<T: Into<String>>(mut self, tags: impl IntoIterator<Item = T>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// With this importance (1 to 10) instead of 5.
    pub fn importance(mut self, importance: f64) -> Self {
        self.importance = Some(importance);
        self
    }

    /// Excluded from search after this many days.
    pub fn expires_in_days(mut self, days: f64) -> Self {
        self.expires_in_days = Some(days);
        self
    }

    /// Stated or observed at `epoch_ms`, not now.
    pub fn observed_at(mut self, epoch_ms: u64) -> Self {
        self.observed_at = Some(epoch_ms);
        self
    }
}

/// What a put created (or found identical).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutResult {
    /// `mem_` followed by an identifier; each version has its own.
    pub memory_id: String,
    pub key: String,
    pub namespace: String,
}

/// A live memory.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryRecord {
    pub key: String,
    pub value: String,
    pub namespace: String,
    pub tags: Vec<String>,
    pub importance: f64,
    /// Epoch milliseconds.
    pub created_at: u64,
    /// Epoch milliseconds.
    pub updated_at: u64,
    /// Fetches by key, this one included when it came from [`Memory::get`].
    pub access_count: u64,
}

/// A search. Defaults: every namespace, mode `hybrid`, limit 10 (at most 50).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SearchRequest {
    pub query: String,
    pub namespace: Option<String>,
    /// AND filter: results carry every tag.
    pub tags: Vec<String>,
    pub limit: Option<u32>,
    /// `hybrid`, `semantic` or `keyword`.
    pub mode: Option<String>,
}

impl SearchRequest {
    /// A search for `query` with every default.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::SearchRequest;
    ///
    /// let search = SearchRequest::new("what does the user eat?")
    ///     .namespace("prefs")
    ///     .tags(["food"])
    ///     .limit(3)
    ///     .mode("keyword");
    /// assert_eq!(search.limit, Some(3));
    /// ```
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            ..Self::default()
        }
    }

    /// Only in `namespace`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Only memories carrying every one of `tags`.
    pub fn tags<T: Into<String>>(mut self, tags: impl IntoIterator<Item = T>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// At most `limit` results (1 to 50).
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// `hybrid`, `semantic` or `keyword`.
    pub fn mode(mut self, mode: impl Into<String>) -> Self {
        self.mode = Some(mode.into());
        self
    }
}

/// The parts of a score, each from 0 to 1.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Breakdown {
    pub semantic: f64,
    pub keyword: f64,
    pub importance: f64,
    pub time_decay: f64,
}

/// One ranked result.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub key: String,
    pub value: String,
    pub namespace: String,
    pub tags: Vec<String>,
    pub importance: f64,
    /// Combined score, 0 to 1.
    pub score: f64,
    pub breakdown: Breakdown,
    /// Epoch milliseconds.
    pub created_at: u64,
}

/// A listing, newest first. Defaults: every namespace, limit 50 (at most 200).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListRequest {
    pub namespace: Option<String>,
    /// AND filter.
    pub tags: Vec<String>,
    pub limit: Option<u32>,
}

impl ListRequest {
    /// Everything, up to the default limit.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::ListRequest;
    ///
    /// let list = ListRequest::new().namespace("notes").tags(["todo"]).limit(5);
    /// assert_eq!(list.tags, ["todo"]);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Only in `namespace`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Only memories carrying every one of `tags`.
    pub fn tags<T: Into<String>>(mut self, tags: impl IntoIterator<Item = T>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// At most `limit` memories (1 to 200).
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }
}

/// Why a memory operation failed. None of these ends the agent's run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    /// Bad input; the text says what to fix.
    #[error("{0}")]
    Invalid(String),
    /// The account's memory pool is full. Displays as text beginning
    /// `memory quota exceeded`, whatever the host's words.
    #[error("{}", quota_text(.0))]
    QuotaExceeded(String),
    /// No live memory at that key.
    #[error("{0}")]
    NotFound(String),
    /// This agent was given no memory.
    #[error("{}", wasmind_rules::NOT_CONFIGURED)]
    NotConfigured,
    /// A stop was requested.
    #[error("the agent is stopping")]
    Stopped,
    /// The host failed; retrying may help.
    #[error("{0}")]
    Internal(String),
}

fn quota_text(detail: &str) -> String {
    const PREFIX: &str = wasmind_rules::QUOTA_EXCEEDED;
    match detail {
        "" => PREFIX.to_string(),
        d if d.starts_with(PREFIX) => d.to_string(),
        d => format!("{PREFIX}: {d}"),
    }
}

/// A broken rule of the shared rules is bad input, in the rule's words.
impl From<wasmind_rules::RuleError> for MemoryError {
    fn from(e: wasmind_rules::RuleError) -> Self {
        MemoryError::Invalid(e.message)
    }
}

/// Where memory operations go: the host's `memory` import, a test double, or any other
/// store a program wants the memory tools to run over (the wasmind server's MCP endpoint
/// runs [`run_memory_tool`](crate::run_memory_tool) over the account's memory this way, so
/// tools outside the sandbox are the very code agents run).
pub trait MemoryBackend: Send + Sync {
    /// See [`Memory::put`].
    fn put(&self, request: &PutRequest) -> Result<PutResult, MemoryError>;
    /// See [`Memory::get`].
    fn get(&self, key: &str, namespace: Option<&str>) -> Result<Option<MemoryRecord>, MemoryError>;
    /// See [`Memory::list`].
    fn list(&self, request: &ListRequest) -> Result<Vec<MemoryRecord>, MemoryError>;
    /// See [`Memory::delete`].
    fn delete(&self, key: &str, namespace: Option<&str>) -> Result<(), MemoryError>;
    /// See [`Memory::search`].
    fn search(&self, request: &SearchRequest) -> Result<Vec<SearchHit>, MemoryError>;
}

/// The account's long-term memory. Cheap to clone.
#[derive(Clone)]
pub struct Memory {
    backend: Arc<dyn MemoryBackend>,
}

impl fmt::Debug for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Memory")
    }
}

impl Memory {
    /// A memory whose operations go to `backend`.
    pub fn new(backend: Arc<dyn MemoryBackend>) -> Self {
        Self { backend }
    }

    /// Creates a memory, or a new version of the live one at the same (namespace, key);
    /// an identical value changes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{PutRequest, testing::TestContext};
    ///
    /// let t = TestContext::default();
    /// let put = t.ctx().memory().put(&PutRequest::new("favourite_food", "pizza"))?;
    /// assert_eq!((put.key.as_str(), put.namespace.as_str()), ("favourite_food", "default"));
    /// assert!(put.memory_id.starts_with("mem_"));
    /// # Ok::<(), wasmind_sdk::MemoryError>(())
    /// ```
    pub fn put(&self, request: &PutRequest) -> Result<PutResult, MemoryError> {
        self.backend.put(request)
    }

    /// The live memory at `key` in `namespace` (default `default`), counting the access;
    /// `None` when there is none.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{PutRequest, testing::TestContext};
    ///
    /// let t = TestContext::default();
    /// let memory = t.ctx().memory();
    /// memory.put(&PutRequest::new("user_name", "Ada"))?;
    /// let got = memory.get("user_name", None)?.unwrap();
    /// assert_eq!((got.value.as_str(), got.access_count), ("Ada", 1));
    /// assert_eq!(memory.get("user_name", Some("elsewhere"))?, None);
    /// # Ok::<(), wasmind_sdk::MemoryError>(())
    /// ```
    pub fn get(
        &self,
        key: &str,
        namespace: Option<&str>,
    ) -> Result<Option<MemoryRecord>, MemoryError> {
        self.backend.get(key, namespace)
    }

    /// Live memories, newest first, without ranking.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{ListRequest, PutRequest, testing::TestContext};
    ///
    /// let t = TestContext::default();
    /// let memory = t.ctx().memory();
    /// memory.put(&PutRequest::new("first", "one"))?;
    /// memory.put(&PutRequest::new("second", "two"))?;
    /// let keys: Vec<_> = memory.list(&ListRequest::new())?.into_iter().map(|m| m.key).collect();
    /// assert_eq!(keys, ["second", "first"]);
    /// # Ok::<(), wasmind_sdk::MemoryError>(())
    /// ```
    pub fn list(&self, request: &ListRequest) -> Result<Vec<MemoryRecord>, MemoryError> {
        self.backend.list(request)
    }

    /// Soft-deletes the live memory at `key` in `namespace` (default `default`); fails with
    /// [`MemoryError::NotFound`] when there is none.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{MemoryError, PutRequest, testing::TestContext};
    ///
    /// let t = TestContext::default();
    /// let memory = t.ctx().memory();
    /// memory.put(&PutRequest::new("stale", "old news"))?;
    /// memory.delete("stale", None)?;
    /// assert!(matches!(memory.delete("stale", None), Err(MemoryError::NotFound(_))));
    /// # Ok::<(), wasmind_sdk::MemoryError>(())
    /// ```
    pub fn delete(&self, key: &str, namespace: Option<&str>) -> Result<(), MemoryError> {
        self.backend.delete(key, namespace)
    }

    /// Ranked search by meaning and keywords.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{PutRequest, SearchRequest, testing::TestContext};
    ///
    /// let t = TestContext::default();
    /// let memory = t.ctx().memory();
    /// memory.put(&PutRequest::new("favourite_food", "pizza with mushrooms"))?;
    /// let hits = memory.search(&SearchRequest::new("mushrooms"))?;
    /// assert_eq!(hits[0].key, "favourite_food");
    /// assert!(hits[0].score > 0.0 && hits[0].score <= 1.0);
    /// # Ok::<(), wasmind_sdk::MemoryError>(())
    /// ```
    pub fn search(&self, request: &SearchRequest) -> Result<Vec<SearchHit>, MemoryError> {
        self.backend.search(request)
    }
}
