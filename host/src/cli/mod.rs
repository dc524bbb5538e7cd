//! The operator's command line: `serve`, `keys create|revoke|list`, `usage` and the `mcp`
//! bridge, one module per command group.

use std::{collections::BTreeMap, net::SocketAddr, path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};

use crate::server;

mod keys;
mod mcp;
mod usage;

use keys::KeysCommand;

#[derive(Parser)]
#[command(
    name = "wasmind",
    version,
    about = "Sandboxed wasm AI agents and their long-term memory"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the HTTP API.
    Serve {
        /// Where the database and indexes live.
        #[arg(long, env = "WASMIND_DATA_DIR", default_value = "./wasmind-data")]
        data_dir: PathBuf,
        /// Address to listen on.
        #[arg(long, env = "WASMIND_LISTEN", default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// TOML configuration file (plans, embedder, mind, memory).
        #[arg(long, env = "WASMIND_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Manages API keys (only while no server holds the data dir).
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Bridges an MCP client that starts a command (stdio) to a wasmind server's `/mcp`,
    /// with the API key in the environment variable WASMIND_API_KEY (never on the command
    /// line, where other users of the machine could read it).
    Mcp {
        /// The server's MCP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
        #[arg(long)]
        url: String,
    },
    /// Prints metered usage, one line per account and month: agent run hours and the
    /// tokens agents' Minds spent (only while no server holds the data dir).
    Usage {
        #[arg(long, env = "WASMIND_DATA_DIR")]
        data_dir: PathBuf,
        /// Only this calendar month (UTC), as YYYY-MM; default: every month.
        #[arg(long, value_parser = usage::month)]
        month: Option<String>,
        /// Only this account; default: every account.
        #[arg(long)]
        account: Option<String>,
    },
}

/// Parses the command line and runs it.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    match execute(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wasmind: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn execute(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Serve {
            data_dir,
            listen,
            config,
        } => {
            let env: BTreeMap<String, String> = std::env::vars().collect();
            server::serve(&data_dir, listen, config.as_deref(), &env)
        }
        Command::Keys { command } => keys::run(command),
        Command::Mcp { url } => {
            let key = std::env::var("WASMIND_API_KEY")
                .map_err(|_| anyhow::anyhow!("set WASMIND_API_KEY to the API key to send"))?;
            mcp::run(&url, &key)
        }
        Command::Usage {
            data_dir,
            month,
            account,
        } => usage::run(&data_dir, month.as_deref(), account.as_deref()),
    }
}
