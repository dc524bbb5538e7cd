//! The operator's command line: `serve`, `keys create|revoke|list` and `usage`.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::ExitCode,
};

use clap::{Parser, Subcommand};

use crate::{
    accounts::{KeyStore, Plan, UsageStore},
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
    /// Prints metered usage, one line per account and month: agent run hours and the
    /// tokens agents' Minds spent (only while no server holds the data dir).
    Usage {
        #[arg(long, env = "WASMIND_DATA_DIR")]
        data_dir: PathBuf,
        /// Only this calendar month (UTC), as YYYY-MM; default: every month.
        #[arg(long, value_parser = month)]
        month: Option<String>,
        /// Only this account; default: every account.
        #[arg(long)]
        account: Option<String>,
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
        Command::Usage {
            data_dir,
            month,
            account,
        } => usage(&data_dir, month.as_deref(), account.as_deref()),
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

fn usage(data_dir: &Path, month: Option<&str>, account: Option<&str>) -> anyhow::Result<()> {
    let dir = DataDir::open(data_dir)?;
    println!(
        "{:<24} {:<7} {:>10} {:>14} {:>14}",
        "ACCOUNT", "MONTH", "RUN_HOURS", "INPUT_TOKENS", "OUTPUT_TOKENS"
    );
    for (row_account, row_month, used) in UsageStore::new(dir.db().clone())?.all()? {
        if account.is_some_and(|a| a != row_account) || month.is_some_and(|m| m != row_month) {
            continue;
        }
        let hours = used.run_ms as f64 / 3_600_000.0;
        println!(
            "{row_account:<24} {row_month:<7} {hours:>10.4} {:>14} {:>14}",
            used.input_tokens, used.output_tokens
        );
    }
    Ok(())
}

/// Parses `--month`: `YYYY-MM`, as usage is keyed.
fn month(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let valid = bytes.len() == 7
        && bytes[4] == b'-'
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| i == 4 || b.is_ascii_digit())
        && matches!(text[5..].parse::<u8>(), Ok(1..=12));
    if valid {
        Ok(text.to_owned())
    } else {
        Err(format!("{text:?} is not a month of the form YYYY-MM"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn months_are_yyyy_mm() {
        assert_eq!(super::month("2026-05").as_deref(), Ok("2026-05"));
        for bad in [
            "2026-5",
            "2026-13",
            "2026-00",
            "2026/05",
            "2026-+1",
            "26-05-01",
            "май-05",
        ] {
            assert!(super::month(bad).is_err(), "{bad}");
        }
    }
}
