//! `wasmind agent …`: what an agent's author does — make a crate.

use clap::Subcommand;

use super::agent_new::{self, NewArgs};

/// `wasmind agent` subcommands.
#[derive(Subcommand)]
pub enum AgentCommand {
    /// Writes a ready agent crate: a tool-using agent, its native test, the build line.
    New(NewArgs),
}

/// Runs one `agent` subcommand.
pub fn run(command: AgentCommand) -> anyhow::Result<()> {
    match command {
        AgentCommand::New(args) => agent_new::run(&args),
    }
}
