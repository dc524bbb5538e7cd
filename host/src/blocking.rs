//! Blocking storage work (redb transactions, index writes) run off the async workers, with
//! one error policy: the work's own error and a task that never finished (it panicked, or
//! the runtime is shutting down) come back as one typed [`BlockingError`], so each caller
//! decides once what either means for it (the API answers 500, an agent's host call traps,
//! the supervisor logs) instead of unwrapping or silently dropping the join failure.

use std::fmt;

/// Why blocking work gave no value.
#[derive(Debug)]
pub enum BlockingError<E> {
    /// The work ran and returned this error.
    Failed(E),
    /// The work panicked or was cancelled before it returned.
    Aborted(tokio::task::JoinError),
}

impl<E: fmt::Display> fmt::Display for BlockingError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockingError::Failed(e) => e.fmt(f),
            BlockingError::Aborted(e) => write!(f, "blocking task did not finish: {e}"),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for BlockingError<E> {}

/// Runs `work` on tokio's blocking pool and waits for it.
pub async fn run_blocking<T, E>(
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, BlockingError<E>>
where
    T: Send + 'static,
    E: Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(BlockingError::Failed),
        Err(e) => Err(BlockingError::Aborted(e)),
    }
}

/// Runs `work` on a clone of `store` on the blocking pool: how a store whose methods block
/// (on redb) serves the async traits the domains share with their postgres backends. A
/// task that did not finish is the domain's error too (its storage failure).
pub async fn with_store<S, T, E>(
    store: &S,
    work: impl FnOnce(&S) -> Result<T, E> + Send + 'static,
) -> Result<T, E>
where
    S: Clone + Send + 'static,
    T: Send + 'static,
    E: From<tokio::task::JoinError> + Send + 'static,
{
    let store = store.clone();
    run_blocking(move || work(&store))
        .await
        .map_err(|e| match e {
            BlockingError::Failed(e) => e,
            BlockingError::Aborted(e) => e.into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn values_errors_and_panics_are_told_apart() {
        assert_eq!(run_blocking(|| Ok::<_, String>(7)).await.unwrap(), 7);
        let failed = run_blocking(|| Err::<(), _>("disk full".to_string())).await;
        assert!(matches!(&failed, Err(BlockingError::Failed(e)) if e == "disk full"));
        assert_eq!(failed.unwrap_err().to_string(), "disk full");
        let aborted = run_blocking(|| -> Result<(), String> { panic!("boom") }).await;
        assert!(matches!(aborted, Err(BlockingError::Aborted(_))));
    }
}
