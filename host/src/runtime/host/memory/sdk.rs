//! The account's memory as the guest SDK's [`wasmind_sdk::Memory`], so that programs outside
//! the sandbox (the MCP server) run the SDK's memory tools — the very argument parsing,
//! results and failure texts agents run — over the very host side agents reach
//! ([`AccountMemory`]): one implementation, two doors.
//!
//! The SDK's memory is synchronous (a guest blocks on its host calls); this backend blocks
//! its thread on the async [`AccountMemory`], so its operations must run off the async
//! workers (`tokio::task::spawn_blocking`).

use std::sync::Arc;

use tokio::runtime::Handle;
use wasmind_sdk as sdk;

use super::AccountMemory;
use crate::{
    memory::{MemoryService, Provenance, Quota},
    runtime::bindings::memory as wit,
};

/// The memory tools' view of `account`'s memory, with its plan's memory `quota`, writing
/// with `provenance`. Its operations block: call them on a blocking thread of the current
/// tokio runtime.
pub fn account_memory(
    service: MemoryService,
    account: String,
    quota: Quota,
    provenance: Provenance,
) -> sdk::Memory {
    let memory = AccountMemory {
        service,
        account,
        quota,
        provenance,
        fence: None,
    };
    sdk::Memory::new(Arc::new(Blocking {
        memory,
        runtime: Handle::current(),
    }))
}

struct Blocking {
    memory: AccountMemory,
    runtime: Handle,
}

type Sdk<T> = Result<T, sdk::MemoryError>;

impl sdk::MemoryBackend for Blocking {
    fn put(&self, r: &sdk::PutRequest) -> Sdk<sdk::PutResult> {
        let request = wit::PutRequest {
            key: r.key.clone(),
            value: r.value.clone(),
            namespace: r.namespace.clone(),
            tags: r.tags.clone(),
            importance: r.importance,
            expires_in_days: r.expires_in_days,
        };
        let p = self.wait(self.memory.put(request, r.observed_at))?;
        Ok(sdk::PutResult {
            memory_id: p.memory_id,
            key: p.key,
            namespace: p.namespace,
        })
    }

    fn get(&self, key: &str, namespace: Option<&str>) -> Sdk<Option<sdk::MemoryRecord>> {
        let got = self.memory.get(key.into(), namespace.map(Into::into));
        Ok(self.wait(got)?.map(record))
    }

    fn list(&self, r: &sdk::ListRequest) -> Sdk<Vec<sdk::MemoryRecord>> {
        let request = wit::ListRequest {
            namespace: r.namespace.clone(),
            tags: r.tags.clone(),
            limit: r.limit,
        };
        let records = self.wait(self.memory.list(request))?;
        Ok(records.into_iter().map(record).collect())
    }

    fn delete(&self, key: &str, namespace: Option<&str>) -> Sdk<()> {
        self.wait(self.memory.delete(key.into(), namespace.map(Into::into)))
    }

    fn search(&self, r: &sdk::SearchRequest) -> Sdk<Vec<sdk::SearchHit>> {
        let request = wit::SearchRequest {
            query: r.query.clone(),
            namespace: r.namespace.clone(),
            tags: r.tags.clone(),
            limit: r.limit,
            mode: r.mode.clone(),
        };
        let hits = self.wait(self.memory.search(request))?;
        Ok(hits.into_iter().map(hit).collect())
    }
}

impl Blocking {
    fn wait<T>(&self, call: impl Future<Output = Result<T, wit::MemoryError>>) -> Sdk<T> {
        self.runtime.block_on(call).map_err(error)
    }
}

fn record(m: wit::MemoryRecord) -> sdk::MemoryRecord {
    sdk::MemoryRecord {
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

fn hit(h: wit::SearchHit) -> sdk::SearchHit {
    sdk::SearchHit {
        key: h.key,
        value: h.value,
        namespace: h.namespace,
        tags: h.tags,
        importance: h.importance,
        score: h.score,
        breakdown: sdk::Breakdown {
            semantic: h.breakdown.semantic,
            keyword: h.breakdown.keyword,
            importance: h.breakdown.importance,
            time_decay: h.breakdown.time_decay,
        },
        created_at: h.created_at,
    }
}

/// The guest's error as the SDK's: the same variants, the same words.
fn error(e: wit::MemoryError) -> sdk::MemoryError {
    match e {
        wit::MemoryError::Invalid(m) => sdk::MemoryError::Invalid(m),
        wit::MemoryError::QuotaExceeded(m) => sdk::MemoryError::QuotaExceeded(m),
        wit::MemoryError::NotFound(m) => sdk::MemoryError::NotFound(m),
        wit::MemoryError::NotConfigured => sdk::MemoryError::NotConfigured,
        wit::MemoryError::Stopped => sdk::MemoryError::Stopped,
        wit::MemoryError::Internal(m) => sdk::MemoryError::Internal(m),
    }
}
