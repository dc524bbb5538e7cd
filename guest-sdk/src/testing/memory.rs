//! `InMemoryMemory`: a faithful in-process stand-in for the host's memory.
//!
//! Faithful in what an agent can observe: the validation rules and their messages, the
//! defaults and caps, versioning by (namespace, key), idempotent identical puts, the
//! live-memory quota, soft delete, expiry, access counting, newest-first listing. Search
//! is the one approximation: there are no embeddings, so "meaning" is the share of the
//! query's words found in the memory (key, value and tags); only memories sharing a word
//! with the query are found. Scores use the host's weights and lie in [0, 1].
//!
//! The rules and their words are not copied here: they come from `wasmind-rules`, the crate
//! the host validates with, and the host's tests run one script of calls against this
//! double and against the real memory tools and require the same answers.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use wasmind_rules::{
    Write, list_limit, not_found, quota_exceeded, search_limit, unknown_mode, validate_address,
    validate_filters, validate_not_future, validate_query,
};

use super::StopFlag;
use crate::{
    Breakdown, ListRequest, MemoryError, MemoryRecord, PutRequest, PutResult, SearchHit,
    SearchRequest,
    limits::{DEFAULT_IMPORTANCE, DEFAULT_NAMESPACE},
    memory::MemoryBackend,
};

/// Half-life of the search time decay, in days (the host's default).
const DECAY_HALF_LIFE_DAYS: f64 = 30.0;
const DAY_MS: f64 = 86_400_000.0;

/// One stored version of a memory.
#[derive(Debug, Clone)]
struct Version {
    memory_id: String,
    record: MemoryRecord,
    /// When its fact was observed, if not at the write (`updated_at`): search decays by it.
    observed_at: Option<u64>,
    expires_at: Option<u64>,
    deleted_at: Option<u64>,
    latest: bool,
}

impl Version {
    fn is_live(&self, now: u64) -> bool {
        self.latest && self.deleted_at.is_none() && self.expires_at.is_none_or(|at| at > now)
    }
}

#[derive(Debug, Default)]
struct Store {
    /// Every version ever written; the index is the version's id, so later is newer.
    versions: Vec<Version>,
    /// (namespace, key) → the latest version.
    heads: HashMap<(String, String), usize>,
    quota: Option<u64>,
    stop: Option<StopFlag>,
    /// Added to the wall clock ([`InMemoryMemory::advance_time`]).
    offset: Duration,
    /// The last time handed out, so time never goes backwards.
    last_now: u64,
}

/// An in-memory store with the host's rules (see the module docs). Cheap to clone; clones
/// share the store.
///
/// # Examples
///
/// ```
/// use wasmind_sdk::{PutRequest, testing::{InMemoryMemory, ScriptedMind, TestContext}};
///
/// let t = TestContext::with_memory(ScriptedMind::default(), InMemoryMemory::new().with_quota(100));
/// let memory = t.ctx().memory();
/// memory.put(&PutRequest::new("city", "Lisbon"))?;
/// memory.put(&PutRequest::new("city", "Porto"))?; // a new version
/// assert_eq!(t.memory().value("city").as_deref(), Some("Porto"));
/// assert_eq!(t.memory().version_count("default", "city"), 2);
/// assert_eq!(t.memory().len(), 1);
/// # Ok::<(), wasmind_sdk::MemoryError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct InMemoryMemory {
    store: Arc<Mutex<Store>>,
}

impl InMemoryMemory {
    /// An empty store without quota.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(wasmind_sdk::testing::InMemoryMemory::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `live_memories` live memories: a put that would add one more fails with
    /// [`MemoryError::QuotaExceeded`] (a new version of a live memory still succeeds).
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{PutRequest, testing::{InMemoryMemory, ScriptedMind, TestContext}};
    ///
    /// let t = TestContext::with_memory(ScriptedMind::default(), InMemoryMemory::new().with_quota(0));
    /// assert!(t.ctx().memory().put(&PutRequest::new("k", "v")).is_err());
    /// ```
    pub fn with_quota(self, live_memories: u64) -> Self {
        self.lock().quota = Some(live_memories);
        self
    }

    /// The live value at `key` in the `default` namespace, without counting an access.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{PutRequest, testing::TestContext};
    ///
    /// let t = TestContext::default();
    /// t.ctx().memory().put(&PutRequest::new("k", "v")).unwrap();
    /// assert_eq!(t.memory().value("k").as_deref(), Some("v"));
    /// ```
    pub fn value(&self, key: &str) -> Option<String> {
        self.peek(DEFAULT_NAMESPACE, key).map(|m| m.value)
    }

    /// The live memory at (`namespace`, `key`), without counting an access.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{PutRequest, testing::TestContext};
    ///
    /// let t = TestContext::default();
    /// t.ctx().memory().put(&PutRequest::new("k", "v").namespace("n").importance(9.0)).unwrap();
    /// assert_eq!(t.memory().peek("n", "k").unwrap().importance, 9.0);
    /// ```
    pub fn peek(&self, namespace: &str, key: &str) -> Option<MemoryRecord> {
        let mut store = self.lock();
        let now = store.now();
        store
            .live(namespace, key, now)
            .map(|i| store.versions[i].record.clone())
    }

    /// How many live memories the store holds (every namespace).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wasmind_sdk::testing::InMemoryMemory::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        let mut store = self.lock();
        store.live_count()
    }

    /// Whether the store holds no live memory.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(wasmind_sdk::testing::InMemoryMemory::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many versions of (`namespace`, `key`) were ever written, deleted ones included.
    ///
    /// # Examples
    ///
    /// ```
    /// use wasmind_sdk::{PutRequest, testing::TestContext};
    ///
    /// let t = TestContext::default();
    /// t.ctx().memory().put(&PutRequest::new("k", "v")).unwrap();
    /// t.ctx().memory().put(&PutRequest::new("k", "v")).unwrap(); // identical: no new version
    /// assert_eq!(t.memory().version_count("default", "k"), 1);
    /// ```
    pub fn version_count(&self, namespace: &str, key: &str) -> usize {
        let store = self.lock();
        let same = |v: &&Version| v.record.namespace == namespace && v.record.key == key;
        store.versions.iter().filter(same).count()
    }

    /// Moves the store's clock forward (to test expiry and time decay).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wasmind_sdk::{PutRequest, testing::TestContext};
    ///
    /// let t = TestContext::default();
    /// t.ctx().memory().put(&PutRequest::new("k", "v").expires_in_days(1.0)).unwrap();
    /// t.memory().advance_time(Duration::from_secs(2 * 86_400));
    /// assert!(t.memory().is_empty());
    /// ```
    pub fn advance_time(&self, by: Duration) {
        self.lock().offset += by;
    }

    pub(super) fn attach_stop(&self, stop: StopFlag) {
        self.lock().stop = Some(stop);
    }

    /// Locks the store for one operation, failing when a stop was requested.
    fn begin(&self) -> Result<(MutexGuard<'_, Store>, u64), MemoryError> {
        let mut store = self.lock();
        if store.stop.as_ref().is_some_and(StopFlag::is_requested) {
            return Err(MemoryError::Stopped);
        }
        let now = store.now();
        Ok((store, now))
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Store {
    fn now(&mut self) -> u64 {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            + self.offset;
        self.last_now = self.last_now.max(wall.as_millis() as u64);
        self.last_now
    }

    /// The live version at (namespace, key).
    fn live(&self, namespace: &str, key: &str, now: u64) -> Option<usize> {
        let head = *self.heads.get(&(namespace.to_string(), key.to_string()))?;
        self.versions[head].is_live(now).then_some(head)
    }

    fn live_count(&mut self) -> usize {
        let now = self.now();
        self.versions.iter().filter(|v| v.is_live(now)).count()
    }

    /// Live versions, newest first.
    fn live_newest_first(&self, now: u64) -> impl Iterator<Item = &Version> {
        self.versions.iter().rev().filter(move |v| v.is_live(now))
    }
}

impl MemoryBackend for InMemoryMemory {
    fn put(&self, request: &PutRequest) -> Result<PutResult, MemoryError> {
        let namespace = request
            .namespace
            .clone()
            .unwrap_or_else(|| DEFAULT_NAMESPACE.into());
        let importance = request.importance.unwrap_or(DEFAULT_IMPORTANCE);
        let write = Write {
            key: &request.key,
            value: &request.value,
            namespace: &namespace,
            tags: &request.tags,
            importance,
            expires_in_days: request.expires_in_days,
        };
        write.validate()?;
        let (mut store, now) = self.begin()?;
        if let Some(at) = request.observed_at {
            validate_not_future("observed_at", at, now)?;
        }
        let live = store.live(&namespace, &request.key, now);
        if let Some(i) = live
            && store.versions[i].record.value == request.value
        {
            let existing = &store.versions[i];
            return Ok(PutResult {
                memory_id: existing.memory_id.clone(),
                key: request.key.clone(),
                namespace,
            });
        }
        if live.is_none()
            && let Some(limit) = store.quota
        {
            let used = store.live_count() as u64;
            if used >= limit {
                return Err(MemoryError::QuotaExceeded(quota_exceeded(used, limit)));
            }
        }
        let address = (namespace.clone(), request.key.clone());
        if let Some(&previous) = store.heads.get(&address) {
            store.versions[previous].latest = false;
        }
        let kept = live.map(|i| &store.versions[i].record);
        let record = MemoryRecord {
            key: request.key.clone(),
            value: request.value.clone(),
            namespace: namespace.clone(),
            tags: request.tags.clone(),
            importance,
            created_at: kept.map_or(now, |r| r.created_at),
            updated_at: now,
            access_count: kept.map_or(0, |r| r.access_count),
        };
        let id = store.versions.len();
        let memory_id = format!("mem_{:016x}", id + 1);
        store.versions.push(Version {
            memory_id: memory_id.clone(),
            record,
            observed_at: request.observed_at,
            expires_at: request
                .expires_in_days
                .map(|d| now.saturating_add((d * DAY_MS).ceil() as u64)),
            deleted_at: None,
            latest: true,
        });
        store.heads.insert(address, id);
        Ok(PutResult {
            memory_id,
            key: request.key.clone(),
            namespace,
        })
    }

    fn get(&self, key: &str, namespace: Option<&str>) -> Result<Option<MemoryRecord>, MemoryError> {
        let namespace = namespace.unwrap_or(DEFAULT_NAMESPACE);
        validate_address(key, namespace)?;
        let (mut store, now) = self.begin()?;
        Ok(store.live(namespace, key, now).map(|i| {
            let record = &mut store.versions[i].record;
            record.access_count += 1;
            record.clone()
        }))
    }

    fn list(&self, request: &ListRequest) -> Result<Vec<MemoryRecord>, MemoryError> {
        validate_filters(request.namespace.as_deref(), &request.tags)?;
        let limit = list_limit(request.limit)? as usize;
        let (store, now) = self.begin()?;
        Ok(store
            .live_newest_first(now)
            .filter(|v| {
                request
                    .namespace
                    .as_ref()
                    .is_none_or(|n| *n == v.record.namespace)
            })
            .filter(|v| has_all(&v.record.tags, &request.tags))
            .take(limit)
            .map(|v| v.record.clone())
            .collect())
    }

    fn delete(&self, key: &str, namespace: Option<&str>) -> Result<(), MemoryError> {
        let namespace = namespace.unwrap_or(DEFAULT_NAMESPACE);
        validate_address(key, namespace)?;
        let (mut store, now) = self.begin()?;
        let Some(i) = store.live(namespace, key, now) else {
            return Err(MemoryError::NotFound(not_found(key, namespace)));
        };
        let version = &mut store.versions[i];
        version.deleted_at = Some(now);
        version.latest = false;
        Ok(())
    }

    fn search(&self, request: &SearchRequest) -> Result<Vec<SearchHit>, MemoryError> {
        validate_query(&request.query)?;
        validate_filters(request.namespace.as_deref(), &request.tags)?;
        let limit = search_limit(request.limit)? as usize;
        let weights = match request.mode.as_deref().unwrap_or("hybrid") {
            "hybrid" => [0.6, 0.2, 0.1, 0.1],
            "semantic" => [0.8, 0.0, 0.1, 0.1],
            "keyword" => [0.0, 0.8, 0.1, 0.1],
            other => return Err(unknown_mode(other).into()),
        };
        let query = words(&request.query);
        let (store, now) = self.begin()?;
        let found: Vec<(&Version, f64)> = store
            .live_newest_first(now)
            .filter(|v| {
                request
                    .namespace
                    .as_ref()
                    .is_none_or(|n| *n == v.record.namespace)
            })
            .filter(|v| has_all(&v.record.tags, &request.tags))
            .filter_map(|v| {
                let r = &v.record;
                let text = format!(
                    "{} {} {}",
                    r.key.replace('_', " "),
                    r.value,
                    r.tags.join(" ")
                );
                let shared = query.intersection(&words(&text)).count();
                (shared > 0).then(|| (v, shared as f64 / query.len() as f64))
            })
            .collect();
        let best = found
            .iter()
            .map(|(_, overlap)| *overlap)
            .fold(0.0, f64::max);
        let mut hits: Vec<SearchHit> = found
            .into_iter()
            .map(|(v, overlap)| {
                let r = &v.record;
                let observed = v.observed_at.unwrap_or(r.updated_at);
                let age_days = now.saturating_sub(observed) as f64 / DAY_MS;
                let breakdown = Breakdown {
                    semantic: overlap,
                    keyword: overlap / best,
                    importance: (r.importance / 10.0).clamp(0.0, 1.0),
                    time_decay: 0.5f64.powf(age_days / DECAY_HALF_LIFE_DAYS),
                };
                let [ws, wk, wi, wt] = weights;
                let score = ws * breakdown.semantic
                    + wk * breakdown.keyword
                    + wi * breakdown.importance
                    + wt * breakdown.time_decay;
                SearchHit {
                    key: r.key.clone(),
                    value: r.value.clone(),
                    namespace: r.namespace.clone(),
                    tags: r.tags.clone(),
                    importance: r.importance,
                    score: score.clamp(0.0, 1.0),
                    breakdown,
                    created_at: r.created_at,
                }
            })
            .collect();
        // Stable: equal scores stay newest first.
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(limit);
        Ok(hits)
    }
}

/// Words too common to count as a match.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "how",
    "i", "in", "is", "it", "me", "my", "of", "on", "or", "that", "the", "this", "to", "was",
    "what", "when", "where", "which", "who", "why", "with", "you", "your",
];

/// The distinct lowercase words of `text`, without stop words.
fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| !w.is_empty() && !STOP_WORDS.contains(&w.as_str()))
        .collect()
}

fn has_all(tags: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| tags.contains(w))
}

#[cfg(test)]
mod tests;
