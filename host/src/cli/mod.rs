//! The operator's command line: `serve`, `keys create|revoke|list`, `usage` and
//! `console login`, one module per command group.

use std::{collections::BTreeMap, net::SocketAddr, path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};

use crate::server;

mod console;
mod keys;
mod usage;

use console::ConsoleCommand;
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
    /// The console: a sign-in link for an account (works while a server runs).
    Console {
        #[command(subcommand)]
        command: ConsoleCommand,
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
        Command::Usage {
            data_dir,
            month,
            account,
        } => usage::run(&data_dir, month.as_deref(), account.as_deref()),
        Command::Console { command } => console::run(command),
    }
}
