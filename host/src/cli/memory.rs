//! `wasmind memory reembed`: re-embeds a data dir's memories with the configured embedder
//! (`[embedder] kind` and `model`, env WASMIND_EMBEDDER and WASMIND_EMBEDDER_MODEL),
//! offline, reporting its progress; see `server::reembed`.

use clap::Subcommand;

use super::target::Target;
use crate::server;

#[derive(Subcommand)]
pub(super) enum MemoryCommand {
    /// Re-embeds every stored memory version with the configured embedder, then records
    /// it as the data dir's: run with the server stopped; stopped midway, it (or a server
    /// started with `[embedder] upgrade = true`) goes on where it was.
    Reembed {
        #[command(flatten)]
        target: Target,
    },
}

pub(super) fn run(command: MemoryCommand) -> anyhow::Result<()> {
    match command {
        MemoryCommand::Reembed { target } => {
            crate::logging::init(crate::logging::LogFormat::Text);
            server::reembed(target.data_dir(), &target.config()?)
        }
    }
}
