//! What callers ask of the runtime about components, each one async call: upload (within
//! the plan's uploads per hour), read, list, delete, and what a spawn's `agent` runs.

use std::time::Instant;

use super::{
    names::{check_name, check_version},
    ops::{Upload, UploadError},
    store::{ComponentRecord, StoreError},
};
use crate::runtime::{
    bindings::AgentPre,
    lifecycle::{Inner, Runtime},
    records::AgentComponent,
    spawn::SpawnRefusal,
    state::AgentState,
};

impl Runtime {
    /// Stores an account's component once it is checked (name, version, not a duplicate,
    /// within the plan's count) and validated and precompiled, which happens on the
    /// blocking pool. Answers no sooner than the first upload of the same bytes did.
    pub async fn upload_component(&self, up: Upload) -> Result<ComponentRecord, UploadError> {
        check_name(&up.name)?;
        check_version(&up.version)?;
        let inner = &self.inner;
        // Counted before the compile, which is the work bounded: a component that fails to
        // validate has cost it all the same.
        let per_hour = up.uploads_per_hour;
        (inner.uploads)
            .try_acquire(&up.account, u32::MAX, per_hour, Instant::now())
            .map_err(|refused| UploadError::RateLimited {
                plan: up.plan,
                per_hour,
                retry_after_secs: refused.retry_after_secs,
            })?;
        let (record, pad) = inner.components.upload(&inner.compiled, up).await?;
        tokio::time::sleep(pad).await;
        Ok(record)
    }

    /// The account's component uploads counted on this node in the last hour.
    pub fn uploads_in_hour(&self, account: &str) -> u32 {
        self.inner.uploads.used(account, Instant::now()).1
    }

    /// The account's component `id`, if it has one.
    pub async fn component(
        &self,
        account: &str,
        id: &str,
    ) -> Result<Option<ComponentRecord>, StoreError> {
        self.inner.components.get(account, id).await
    }

    /// Up to `limit` of the account's components newest first, below list position
    /// `before`; also the position to continue from when more remain.
    pub async fn components(
        &self,
        account: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<ComponentRecord>, Option<u64>), StoreError> {
        self.inner.components.list(account, before, limit).await
    }

    /// Deletes the account's component `id` and returns it; this node's artifact goes with
    /// the last component that has its bytes. Agents already running it keep running.
    pub async fn delete_component(
        &self,
        account: &str,
        id: &str,
    ) -> Result<Option<ComponentRecord>, StoreError> {
        let inner = &self.inner;
        inner.components.delete(&inner.compiled, account, id).await
    }
}

impl Inner {
    /// What a spawn runs: the default agent when `spec` is `None`, else the account's
    /// component it names, loaded on a cache miss (compiled only on a node that has no
    /// artifact of it yet).
    pub(in crate::runtime) async fn agent_for(
        &self,
        account: &str,
        spec: Option<String>,
    ) -> Result<(Option<AgentComponent>, AgentPre<AgentState>), SpawnRefusal> {
        let Some(spec) = spec else {
            return Ok((None, self.compiled.default.clone()));
        };
        let (component, pre) = self
            .components
            .resolve(&self.compiled, account, &spec)
            .await?;
        Ok((Some(component), pre))
    }
}
