//! What callers ask of the runtime about components, each one async call run on the
//! blocking pool: upload, read, list, delete, and what a spawn's `agent` runs.

use super::{
    names::{check_name, check_version},
    ops::{Upload, UploadError},
    store::ComponentRecord,
};
use crate::{
    blocking::{BlockingError, run_blocking},
    runtime::{
        bindings::AgentPre, lifecycle::Runtime, records::AgentComponent, spawn::SpawnRefusal,
        state::AgentState,
    },
};

fn blocking_error<E: Into<anyhow::Error>>(e: BlockingError<E>) -> anyhow::Error {
    match e {
        BlockingError::Failed(e) => e.into(),
        BlockingError::Aborted(e) => e.into(),
    }
}

impl Runtime {
    /// Stores an account's component once it is checked (name, version, not a duplicate,
    /// within the plan's count) and validated and precompiled, which happens on the
    /// blocking pool. Answers no sooner than the first upload of the same bytes did.
    pub async fn upload_component(&self, up: Upload) -> Result<ComponentRecord, UploadError> {
        check_name(&up.name).map_err(UploadError::InvalidName)?;
        check_version(&up.version).map_err(UploadError::InvalidVersion)?;
        let inner = self.inner.clone();
        let (record, pad) = run_blocking(move || inner.components.upload(&inner.compiled, up))
            .await
            .map_err(|e| match e {
                BlockingError::Failed(e) => e,
                BlockingError::Aborted(e) => UploadError::Storage(e.into()),
            })?;
        tokio::time::sleep(pad).await;
        Ok(record)
    }

    /// The account's component `id`, if it has one.
    pub async fn component(
        &self,
        account: &str,
        id: &str,
    ) -> anyhow::Result<Option<ComponentRecord>> {
        let (inner, account, id) = (self.inner.clone(), account.to_string(), id.to_string());
        run_blocking(move || inner.components.store.get(&account, &id))
            .await
            .map_err(blocking_error)
    }

    /// Up to `limit` of the account's components newest first, below list position
    /// `before`; also the position to continue from when more remain.
    pub async fn components(
        &self,
        account: &str,
        before: Option<u64>,
        limit: usize,
    ) -> anyhow::Result<(Vec<ComponentRecord>, Option<u64>)> {
        let (inner, account) = (self.inner.clone(), account.to_string());
        run_blocking(move || inner.components.store.list(&account, before, limit))
            .await
            .map_err(blocking_error)
    }

    /// Deletes the account's component `id` and returns it; its bytes and artifact go with
    /// the last component that has them. Agents already running it keep running.
    pub async fn delete_component(
        &self,
        account: &str,
        id: &str,
    ) -> anyhow::Result<Option<ComponentRecord>> {
        let (inner, account, id) = (self.inner.clone(), account.to_string(), id.to_string());
        run_blocking(move || inner.components.delete(&inner.compiled, &account, &id))
            .await
            .map_err(blocking_error)
    }

    /// What a spawn runs: the default agent when `spec` is `None`, else the account's
    /// component it names, loaded (never compiled) on a cache miss.
    pub(in crate::runtime) async fn agent_for(
        &self,
        account: &str,
        spec: Option<String>,
    ) -> Result<(Option<AgentComponent>, AgentPre<AgentState>), SpawnRefusal> {
        let Some(spec) = spec else {
            return Ok((None, self.inner.compiled.default.clone()));
        };
        let (inner, account) = (self.inner.clone(), account.to_string());
        let (component, pre) =
            run_blocking(move || inner.components.resolve(&inner.compiled, &account, &spec))
                .await
                .map_err(|e| match e {
                    BlockingError::Failed(e) => e,
                    BlockingError::Aborted(e) => SpawnRefusal::Storage(e.into()),
                })?;
        Ok((Some(component), pre))
    }
}
