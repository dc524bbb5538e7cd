//! `wasmind agent …`: what an agent's author does — make a crate, deploy its component.

use std::{path::PathBuf, time::Duration};

use anyhow::Context;
use clap::{Args, Subcommand};
use reqwest::Method;

use super::{
    agent_new::{self, NewArgs},
    remote::{Remote, RemoteArgs},
};

/// How long `deploy` waits for the server's answer, which comes once it has compiled the
/// component: seconds for a Rust one, up to minutes for a Python one (~18 MiB, CPython
/// within) on a busy machine — past reqwest's default of 30 s.
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(600);

/// `wasmind agent` subcommands.
#[derive(Subcommand)]
pub enum AgentCommand {
    /// Writes a ready agent crate: a tool-using agent, its native test, the build line.
    New(NewArgs),
    /// Uploads a built component (`POST /api/v1/agents/components`) and prints what the
    /// server stored; spawn it with `wasmind agents spawn --agent NAME`.
    Deploy(DeployArgs),
}

/// `wasmind agent deploy`.
#[derive(Debug, Args)]
pub struct DeployArgs {
    /// The component: `target/wasm32-wasip2/release/NAME.wasm`.
    file: PathBuf,
    /// Its name, snake_case.
    #[arg(long)]
    name: String,
    /// Its version, semver (e.g. 0.1.0).
    #[arg(long)]
    version: String,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// Runs one `agent` subcommand.
pub fn run(command: AgentCommand) -> anyhow::Result<()> {
    match command {
        AgentCommand::New(args) => agent_new::run(&args),
        AgentCommand::Deploy(args) => deploy(&args),
    }
}

fn deploy(args: &DeployArgs) -> anyhow::Result<()> {
    let bytes =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let query = serde_urlencoded::to_string([
        ("name", args.name.as_str()),
        ("version", args.version.as_str()),
    ])?;
    let remote = Remote::new(&args.remote);
    let request = remote
        .request(Method::POST, &format!("/api/v1/agents/components?{query}"))
        .header(reqwest::header::CONTENT_TYPE, "application/wasm")
        .body(bytes)
        .timeout(UPLOAD_TIMEOUT);
    let stored = remote.send(request)?;
    println!("{}", serde_json::to_string_pretty(&stored)?);
    Ok(())
}
