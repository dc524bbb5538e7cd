//! `memory`: the memory service, scoped to the agent's account and its plan's quota,
//! with the same validation, defaults and limits as the HTTP API.

use crate::{
    memory::{
        DEFAULT_IMPORTANCE, DEFAULT_LIMIT, DEFAULT_NAMESPACE, ListQuery, MAX_LIMIT, Memory,
        MemoryError, Mode, PutInput, SearchHit, SearchQuery, Source,
    },
    runtime::{bindings::memory, state::AgentState},
};

/// List size: default and maximum (§8 list tool limit).
const LIST_DEFAULT: u32 = 50;
const LIST_MAX: u32 = 200;

type Answer<T> = wasmtime::Result<Result<T, memory::MemoryError>>;

/// A domain error as the guest sees it; storage faults stay opaque.
fn guest_error(e: MemoryError) -> memory::MemoryError {
    match e {
        MemoryError::Invalid { .. } => memory::MemoryError::Invalid(e.to_string()),
        MemoryError::QuotaExceeded { .. } => memory::MemoryError::QuotaExceeded(e.to_string()),
        MemoryError::NotFound { .. } => memory::MemoryError::NotFound(e.to_string()),
        other => {
            tracing::error!(error = %other, "memory tool failed");
            memory::MemoryError::Internal("the memory service failed; try again".into())
        }
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

impl AgentState {
    /// The answer to any memory call when the agent has no memory or is stopping.
    fn refused<T>(&self) -> Option<Result<T, memory::MemoryError>> {
        if !self.agent.memory_mode.has_memory() {
            return Some(Err(memory::MemoryError::NotConfigured));
        }
        self.agent
            .stop
            .requested()
            .then_some(Err(memory::MemoryError::Stopped))
    }
}

impl memory::Host for AgentState {
    async fn put(&mut self, request: memory::PutRequest) -> Answer<memory::PutResult> {
        if let Some(refused) = self.refused() {
            return Ok(refused);
        }
        let input = PutInput {
            account: self.agent.account.clone(),
            key: request.key,
            value: request.value,
            namespace: request
                .namespace
                .unwrap_or_else(|| DEFAULT_NAMESPACE.into()),
            tags: request.tags,
            importance: request.importance.unwrap_or(DEFAULT_IMPORTANCE),
            expires_in_days: request.expires_in_days,
            source: Source::Manual,
        };
        let outcome = self
            .agent
            .services
            .memory
            .put(input, self.agent.memory_quota)
            .await;
        Ok(outcome
            .map(|o| memory::PutResult {
                memory_id: o.memory.memory_id,
                key: o.memory.key,
                namespace: o.memory.namespace,
            })
            .map_err(guest_error))
    }

    async fn get(
        &mut self,
        key: String,
        namespace: Option<String>,
    ) -> Answer<Option<memory::MemoryRecord>> {
        if let Some(refused) = self.refused() {
            return Ok(refused);
        }
        let namespace = namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.into());
        Ok(
            match self
                .agent
                .services
                .memory
                .get(&self.agent.account, &namespace, &key)
                .await
            {
                Ok(m) => Ok(Some(record(m))),
                Err(MemoryError::NotFound { .. }) => Ok(None),
                Err(e) => Err(guest_error(e)),
            },
        )
    }

    async fn list(&mut self, request: memory::ListRequest) -> Answer<Vec<memory::MemoryRecord>> {
        if let Some(refused) = self.refused() {
            return Ok(refused);
        }
        let query = ListQuery {
            namespace: request.namespace,
            tags: request.tags,
            limit: request.limit.unwrap_or(LIST_DEFAULT).clamp(1, LIST_MAX) as usize,
            before: None,
        };
        Ok(self
            .agent
            .services
            .memory
            .list(&self.agent.account, query)
            .await
            .map(|page| page.memories.into_iter().map(record).collect())
            .map_err(guest_error))
    }

    async fn delete(&mut self, key: String, namespace: Option<String>) -> Answer<()> {
        if let Some(refused) = self.refused() {
            return Ok(refused);
        }
        let namespace = namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.into());
        let outcome = self
            .agent
            .services
            .memory
            .delete(&self.agent.account, &namespace, &key, false)
            .await;
        Ok(outcome.map(|_| ()).map_err(guest_error))
    }

    async fn search(&mut self, request: memory::SearchRequest) -> Answer<Vec<memory::SearchHit>> {
        if let Some(refused) = self.refused() {
            return Ok(refused);
        }
        let mode = match request.mode.as_deref().map(str::parse::<Mode>).transpose() {
            Ok(mode) => mode.unwrap_or_default(),
            Err(e) => return Ok(Err(guest_error(e))),
        };
        if request.query.trim().is_empty() {
            return Ok(Err(memory::MemoryError::Invalid(
                "query must not be empty".into(),
            )));
        }
        let query = SearchQuery {
            query: request.query,
            namespace: request.namespace,
            tags: request.tags,
            limit: request
                .limit
                .map_or(DEFAULT_LIMIT, |l| l as usize)
                .clamp(1, MAX_LIMIT),
            mode,
            min_score: 0.0,
        };
        Ok(self
            .agent
            .services
            .memory
            .search(&self.agent.account, query)
            .await
            .map(|hits| hits.into_iter().map(hit).collect())
            .map_err(guest_error))
    }
}
