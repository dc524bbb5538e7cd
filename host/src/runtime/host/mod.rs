//! The host side of each WIT interface, one file per interface. Guest-visible failures
//! travel as WIT `result`s; only host faults trap.

mod control;
mod memory;
mod mind;
mod progress;

/// Runs blocking storage work off the async workers.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> wasmtime::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| wasmtime::format_err!("host task failed: {e}"))
}
