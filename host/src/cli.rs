//! The operator's command line: `serve` and `keys create|revoke|list`.

use std::{collections::BTreeMap, net::SocketAddr, path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};

use crate::{
    accounts::{KeyStore, Plan},
    data_dir::DataDir,
    server,
};

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
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Creates a key (and the account, if new); prints the key alone on stdout.
    Create {
        #[arg(long, env = "WASMIND_DATA_DIR")]
        data_dir: PathBuf,
        #[arg(long)]
        account: String,
        /// Plan tier: free, liftoff or lightyear (default free for a new account).
        #[arg(long)]
        plan: Option<Plan>,
    },
    /// Revokes a key, given the key itself or its key_… id.
    Revoke {
        #[arg(long, env = "WASMIND_DATA_DIR")]
        data_dir: PathBuf,
        key: String,
    },
    /// Lists keys: ids, accounts, plans, created/revoked — never the secrets.
    List {
        #[arg(long, env = "WASMIND_DATA_DIR")]
        data_dir: PathBuf,
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
        Command::Keys { command } => keys(command),
    }
}

fn keys(command: KeysCommand) -> anyhow::Result<()> {
    match command {
        KeysCommand::Create {
            data_dir,
            account,
            plan,
        } => {
            let dir = DataDir::open(&data_dir)?;
            let (secret, _) = KeyStore::new(dir.db().clone())?.create(&account, plan)?;
            println!("{secret}");
        }
        KeysCommand::Revoke { data_dir, key } => {
            let dir = DataDir::open(&data_dir)?;
            let info = KeyStore::new(dir.db().clone())?.revoke(&key)?;
            println!("revoked {} (account {})", info.id, info.account);
        }
        KeysCommand::List { data_dir } => {
            let dir = DataDir::open(&data_dir)?;
            println!(
                "{:<32} {:<24} {:<10} {:<15} REVOKED",
                "ID", "ACCOUNT", "PLAN", "CREATED"
            );
            for k in KeyStore::new(dir.db().clone())?.list()? {
                let revoked = k.revoked_at.map_or("-".to_string(), |t| t.to_string());
                println!(
                    "{:<32} {:<24} {:<10} {:<15} {revoked}",
                    k.id, k.account, k.plan, k.created_at
                );
            }
        }
    }
    Ok(())
}
