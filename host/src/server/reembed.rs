//! `wasmind memory reembed`: a data dir's re-embedding with the configured embedder, run
//! offline to its end (no server may hold the data dir), its progress printed as it goes.
//! The same steps as a server's background re-embedding (`[embedder] upgrade`), so either
//! may take over where the other was stopped.

use std::{path::Path, time::Duration, time::Instant};

use anyhow::Context;

use super::stores::serving;
use crate::{
    config::Config,
    data_dir::DataDir,
    memory::{MemoryService, embed, reembed::ReembedReport},
    storage::Backend,
};

/// How often progress is printed.
const EVERY: Duration = Duration::from_secs(2);

/// Re-embeds the memories of the data dir at `data_dir` with `config`'s embedder, printing
/// progress to stderr and the outcome to stdout.
pub fn reembed(data_dir: &Path, config: &Config) -> anyhow::Result<()> {
    anyhow::ensure!(
        config.storage.backend == Backend::Embedded,
        "re-embedding is not available on the postgres backend yet: the database keeps the \
         embedder it records"
    );
    let dir = DataDir::open(data_dir)?;
    let embedder = embed::from_config(&config.embedder)?;
    let current = embed::identity(config.embedder.kind, &*embedder);
    let recorded = embed::check_identity(dir.db(), config.embedder.kind, &*embedder, true)?;
    let (serving, upgrade) = serving(recorded, embedder, &config.embedder)?;
    let Some(upgrade) = upgrade else {
        println!(
            "nothing to do: the memories are embedded by {} already, the configured \
             embedder; to move them to another, configure it (`[embedder] kind` and `model`, \
             env WASMIND_EMBEDDER and WASMIND_EMBEDDER_MODEL) and run this again",
            current
        );
        return Ok(());
    };
    let progress = upgrade.progress.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let started = Instant::now();
    let identity = runtime.block_on(async {
        let memory = MemoryService::open_upgrading(
            dir.db().clone(),
            &dir.index_dir("memory"),
            serving,
            &config.memory,
            Some(upgrade),
        )
        .context("opening the memory store")?;
        let printer = tokio::spawn(async move {
            loop {
                tokio::time::sleep(EVERY).await;
                eprintln!("{}", line(&progress.report(), started.elapsed()));
            }
        });
        let identity = memory.reembed().await;
        printer.abort();
        let checkpoint = memory.clone();
        tokio::task::spawn_blocking(move || checkpoint.checkpoint()).await??;
        let done = memory.reembedding();
        anyhow::Ok((identity?, done))
    })?;
    let (identity, done) = identity;
    if let Some(report) = done {
        println!("{}", line(&report, started.elapsed()));
    }
    println!(
        "re-embedded: the memories are embedded by {}",
        identity.unwrap_or_default()
    );
    drop(runtime);
    dir.close(Duration::from_secs(5));
    Ok(())
}

/// One progress line: state, versions done of all, and the rate since the start.
fn line(report: &ReembedReport, elapsed: Duration) -> String {
    let rate = report.done as f64 / elapsed.as_secs_f64().max(1e-3);
    format!(
        "{}: {} of {} versions re-embedded from {} to {} in {:.1} s ({rate:.0}/s)",
        report.state.as_str(),
        report.done,
        report.total,
        report.from,
        report.to,
        elapsed.as_secs_f64(),
    )
}
