//! `wasmind keys create|revoke|list`: API keys on the data dir's files.

use std::path::PathBuf;

use clap::Subcommand;

use crate::{
    accounts::{KeyStore, Plan},
    data_dir::DataDir,
};

#[derive(Subcommand)]
pub(super) enum KeysCommand {
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

pub(super) fn run(command: KeysCommand) -> anyhow::Result<()> {
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
