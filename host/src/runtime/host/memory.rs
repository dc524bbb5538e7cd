//! `memory`: the memory service, scoped to the agent's account and its plan's quota,
//! with the shared rules (`wasmind-rules`) of the HTTP API and the guest SDK: the same
//! validation, defaults, limits and words.

use wasmind_rules::{
    RuleError, list_limit, search_limit, validate_address, validate_filters, validate_not_future,
    validate_query,
};

use crate::{
    clock::now_ms,
    memory::{
        DEFAULT_IMPORTANCE, DEFAULT_NAMESPACE, Door, ListQuery, Memory, MemoryError, MemoryService,
        Mode, Provenance, PutInput, Quota, RunFence, SearchHit, SearchQuery, embed::EmbedError,
    },
    runtime::{bindings::memory, journal::Call, state::AgentState},
};

type Answer<T> = wasmtime::Result<Result<T, memory::MemoryError>>;
type Outcome<T> = Result<T, memory::MemoryError>;

/// A domain error as the guest sees it; storage faults stay opaque.
impl From<MemoryError> for memory::MemoryError {
    fn from(e: MemoryError) -> Self {
        match e {
            MemoryError::Invalid { .. } => memory::MemoryError::Invalid(e.to_string()),
            MemoryError::QuotaExceeded { .. } => memory::MemoryError::QuotaExceeded(e.to_string()),
            MemoryError::NotFound { .. } => memory::MemoryError::NotFound(e.to_string()),
            // The account's queue at this node is full: the message says to retry.
            MemoryError::Busy | MemoryError::Embed(EmbedError::Busy) => {
                memory::MemoryError::Internal(e.to_string())
            }
            // Another node runs the agent now: this run's writes are refused, and its next
            // journal write ends it.
            MemoryError::Stale(_) => {
                tracing::warn!(error = %e, "a stale run's memory write was refused");
                memory::MemoryError::Internal(e.to_string())
            }
            other => {
                tracing::error!(error = %other, "memory tool failed");
                memory::MemoryError::Internal("the memory service failed; try again".into())
            }
        }
    }
}

impl From<RuleError> for memory::MemoryError {
    fn from(e: RuleError) -> Self {
        memory::MemoryError::Invalid(e.message)
    }
}

fn record(m: Memory) -> memory::MemoryRecord {
    memory::MemoryRecord {
        key: m.key,
        value: m.value,
        namespace: m.namespace,
        tags: m.tags,
        importance: m.importance,
        created_at: m.created_at,
        updated_at: m.updated_at,
        access_count: m.access_count,
    }
}

fn hit(h: SearchHit) -> memory::SearchHit {
    memory::SearchHit {
        key: h.memory.key,
        value: h.memory.value,
        namespace: h.memory.namespace,
        tags: h.memory.tags,
        importance: h.memory.importance,
        score: h.score,
        breakdown: memory::Breakdown {
            semantic: h.breakdown.semantic,
            keyword: h.breakdown.keyword,
            importance: h.breakdown.importance,
            time_decay: h.breakdown.time_decay,
        },
        created_at: h.memory.created_at,
    }
}

/// One account's memory as its agents reach it through the `memory` interface: everything
/// the interface does apart from the agent's own state (its memory mode, its stop), so the
/// guest SDK's test double can be held against exactly this (see the tests).
#[derive(Clone)]
pub(crate) struct AccountMemory {
    pub service: MemoryService,
    pub account: String,
    /// The account plan's memory quota: live memories, versions kept per key.
    pub quota: Quota,
    /// Who writes through it: recorded on every version it puts.
    pub provenance: Provenance,
    /// The claim of the agent's node its writes are made under (on the postgres
    /// backend): a node that lost it writes nothing. `None` elsewhere (MCP, the embedded
    /// backend).
    pub fence: Option<RunFence>,
}

impl AccountMemory {
    /// A put of `request`, its fact observed at `observed_at` (epoch ms, not in the
    /// future) or at the write.
    pub async fn put(
        &self,
        request: memory::PutRequest,
        observed_at: Option<u64>,
    ) -> Outcome<memory::PutResult> {
        if let Some(at) = observed_at {
            validate_not_future("observed_at", at, now_ms())?;
        }
        let input = PutInput {
            account: self.account.clone(),
            key: request.key,
            value: request.value,
            namespace: request
                .namespace
                .unwrap_or_else(|| DEFAULT_NAMESPACE.into()),
            tags: request.tags,
            importance: request.importance.unwrap_or(DEFAULT_IMPORTANCE),
            expires_in_days: request.expires_in_days,
            observed_at,
            provenance: self.provenance.clone(),
        };
        let o = (self.service)
            .put_fenced(input, self.quota, self.fence.clone())
            .await?;
        Ok(memory::PutResult {
            memory_id: o.memory.memory_id,
            key: o.memory.key,
            namespace: o.memory.namespace,
        })
    }

    pub async fn get(
        &self,
        key: String,
        namespace: Option<String>,
    ) -> Outcome<Option<memory::MemoryRecord>> {
        let namespace = namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.into());
        validate_address(&key, &namespace)?;
        match self.service.get(&self.account, &namespace, &key).await {
            Ok(m) => Ok(Some(record(m))),
            Err(MemoryError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn list(&self, request: memory::ListRequest) -> Outcome<Vec<memory::MemoryRecord>> {
        validate_filters(request.namespace.as_deref(), &request.tags)?;
        let query = ListQuery {
            limit: list_limit(request.limit)? as usize,
            namespace: request.namespace,
            tags: request.tags,
            before: None,
            time: Default::default(),
        };
        let page = self.service.list(&self.account, query).await?;
        Ok(page.memories.into_iter().map(record).collect())
    }

    pub async fn delete(&self, key: String, namespace: Option<String>) -> Outcome<()> {
        let namespace = namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.into());
        validate_address(&key, &namespace)?;
        let fence = self.fence.clone();
        (self.service)
            .delete_by(&self.account, &namespace, &key, &self.provenance, fence)
            .await?;
        Ok(())
    }

    pub async fn search(&self, request: memory::SearchRequest) -> Outcome<Vec<memory::SearchHit>> {
        validate_query(&request.query)?;
        validate_filters(request.namespace.as_deref(), &request.tags)?;
        let limit = search_limit(request.limit)? as usize;
        let mode = request
            .mode
            .as_deref()
            .map(str::parse::<Mode>)
            .transpose()?;
        let query = SearchQuery {
            query: request.query,
            namespace: request.namespace,
            tags: request.tags,
            limit,
            mode: mode.unwrap_or_default(),
            min_score: 0.0,
            rerank: false,
            time: Default::default(),
        };
        let hits = self.service.search(&self.account, query).await?;
        Ok(hits.into_iter().map(hit).collect())
    }
}

impl AgentState {
    /// The agent's account memory in `service`, or why the agent may not use it: it was
    /// given none, or it is stopping. Its writes name the agent and the journal step of
    /// the call being made.
    fn memory(&self, service: &MemoryService) -> Outcome<AccountMemory> {
        if !self.agent.memory_mode.has_memory() {
            return Err(memory::MemoryError::NotConfigured);
        }
        if self.agent.stop.requested() {
            return Err(memory::MemoryError::Stopped);
        }
        Ok(AccountMemory {
            service: service.clone(),
            account: self.agent.account.clone(),
            quota: self.agent.memory_quota,
            provenance: Provenance {
                agent_id: Some(self.agent.agent_id.clone()),
                step: Some(self.agent.journal.next_step()),
                ..Provenance::door(Door::AgentTool)
            },
            fence: self.agent.memory_fence(),
        })
    }
}

/// A memory call through the journal: made live, `outcome` is the call on the agent's
/// account memory, or why it may not use it.
macro_rules! journaled {
    ($state:ident, $call:expr, |$memory:ident| $outcome:expr) => {{
        $state
            .journaled($call, |s, outside| {
                let memory = s.memory(&outside.memory);
                let outcome = async move {
                    let $memory = memory?;
                    $outcome.await
                };
                Box::pin(async move { Ok(outcome.await) })
            })
            .await
    }};
}

impl memory::Host for AgentState {
    async fn put(&mut self, request: memory::PutRequest) -> Answer<memory::PutResult> {
        let call = Call::keyed_effect("memory.put", &request);
        journaled!(self, call, |memory| memory.put(request, None))
    }

    async fn put_observed(
        &mut self,
        request: memory::PutRequest,
        observed_at: u64,
    ) -> Answer<memory::PutResult> {
        let call = Call::keyed_effect("memory.put_observed", &(&request, observed_at));
        journaled!(self, call, |memory| memory.put(request, Some(observed_at)))
    }

    async fn get(
        &mut self,
        key: String,
        namespace: Option<String>,
    ) -> Answer<Option<memory::MemoryRecord>> {
        // Counts an access: a write, though one whose repetition does no harm.
        let call = Call::read("memory.get", &(&key, &namespace));
        journaled!(self, call, |memory| memory.get(key, namespace))
    }

    async fn list(&mut self, request: memory::ListRequest) -> Answer<Vec<memory::MemoryRecord>> {
        let call = Call::read("memory.list", &request);
        journaled!(self, call, |memory| memory.list(request))
    }

    async fn delete(&mut self, key: String, namespace: Option<String>) -> Answer<()> {
        let call = Call::effect("memory.delete", &(&key, &namespace));
        journaled!(self, call, |memory| memory.delete(key, namespace))
    }

    async fn search(&mut self, request: memory::SearchRequest) -> Answer<Vec<memory::SearchHit>> {
        let call = Call::read("memory.search", &request);
        journaled!(self, call, |memory| memory.search(request))
    }
}

mod sdk;

pub use sdk::account_memory;

#[cfg(test)]
mod tests;
