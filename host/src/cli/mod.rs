//! The operator's command line: `serve`, `keys create|revoke|list`, `accounts
//! list|set-plan`, `usage`, `memory reembed`, `console login`, the `mcp` bridge, `agent new|deploy` and `agents spawn`, one module per command
//! group. The operator commands go through the running server's admin socket when there
//! is one (`admin`), else to the files.

use std::{collections::BTreeMap, net::SocketAddr, path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};

use crate::{
    logging::{self, LogFormat},
    server,
};

mod accounts;
mod agent;
mod agent_new;
mod agents;
mod billing;
mod console;
mod keys;
mod mcp;
mod memory;
mod remote;
mod target;
mod usage;

use accounts::AccountsCommand;
use agent::AgentCommand;
use agents::AgentsCommand;
use billing::BillingCommand;
use console::ConsoleCommand;
use keys::KeysCommand;
use memory::MemoryCommand;

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
        /// Log lines as `text` (for people) or `json` (one object per line, for machines).
        #[arg(long, env = "WASMIND_LOG_FORMAT", default_value = "text")]
        log_format: LogFormat,
    },
    /// Manages API keys (live through a running server, else on the files).
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Lists accounts and changes their plans (live through a running server, else on the
    /// files).
    Accounts {
        #[command(subcommand)]
        command: AccountsCommand,
    },
    /// Bridges an MCP client that starts a command (stdio) to a wasmind server's `/mcp`,
    /// with the API key in the environment variable WASMIND_API_KEY (never on the command
    /// line, where other users of the machine could read it).
    Mcp {
        /// The server's MCP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
        #[arg(long)]
        url: String,
    },
    /// The memory store's upkeep: `reembed` re-embeds it with the configured embedder.
    Memory {
        #[command(subcommand)]
        command: MemoryCommand,
    },
    /// Prints metered usage, one line per account and month: agent run hours and the
    /// tokens agents' Minds spent.
    Usage {
        #[command(flatten)]
        target: target::Target,
        /// Only this calendar month (UTC), as YYYY-MM; default: every month.
        #[arg(long, value_parser = usage::month)]
        month: Option<String>,
        /// Only this account; default: every account.
        #[arg(long)]
        account: Option<String>,
    },
    /// An agent's author's commands: `new` writes a ready agent crate, `deploy` uploads
    /// its component (over the API, with WASMIND_URL and WASMIND_API_KEY).
    Agent {
        #[command(subcommand)]
        command: AgentCommand,
    },
    /// Runs agents over the API (WASMIND_URL, WASMIND_API_KEY): `spawn`, optionally
    /// followed to its end.
    Agents {
        #[command(subcommand)]
        command: AgentsCommand,
    },
    /// An account's plan at the payment provider, through the public API: status, a
    /// checkout to upgrade, the portal.
    Billing {
        #[command(subcommand)]
        command: BillingCommand,
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
        Err(e) => match e.downcast_ref::<agents::Unsuccessful>() {
            // The agent's error is printed already; the status says how it ended.
            Some(agents::Unsuccessful(code)) => ExitCode::from(*code),
            None => {
                eprintln!("wasmind: {e:#}");
                ExitCode::FAILURE
            }
        },
    }
}

fn execute(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Serve {
            data_dir,
            listen,
            config,
            log_format,
        } => {
            logging::init(log_format);
            let env: BTreeMap<String, String> = std::env::vars().collect();
            server::serve(&data_dir, listen, config.as_deref(), &env)
        }
        Command::Keys { command } => keys::run(command),
        Command::Accounts { command } => accounts::run(command),
        Command::Mcp { url } => {
            let key = std::env::var("WASMIND_API_KEY")
                .map_err(|_| anyhow::anyhow!("set WASMIND_API_KEY to the API key to send"))?;
            mcp::run(&url, &key)
        }
        Command::Usage {
            target,
            month,
            account,
        } => usage::run(&target, month.as_deref(), account.as_deref()),
        Command::Console { command } => console::run(command),
        Command::Memory { command } => memory::run(command),
        Command::Agent { command } => agent::run(command),
        Command::Agents { command } => agents::run(command),
        Command::Billing { command } => billing::run(command),
    }
}
