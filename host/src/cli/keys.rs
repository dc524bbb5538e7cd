//! `wasmind keys create|revoke|list`: API keys, through the running server when there is
//! one (live at once), else on the data dir's files.

use std::path::PathBuf;

use clap::Subcommand;

use crate::{
    accounts::Plan,
    admin::{self, Request, Response},
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
    let (data_dir, request) = match command {
        KeysCommand::Create {
            data_dir,
            account,
            plan,
        } => (data_dir, Request::CreateKey { account, plan }),
        KeysCommand::Revoke { data_dir, key } => (data_dir, Request::RevokeKey { key }),
        KeysCommand::List { data_dir } => (data_dir, Request::ListKeys),
    };
    match admin::run(&data_dir, request)? {
        Response::KeyCreated { secret, .. } => println!("{secret}"),
        Response::KeyRevoked { key } => println!("revoked {} (account {})", key.id, key.account),
        Response::Keys { keys } => {
            println!(
                "{:<32} {:<24} {:<10} {:<15} REVOKED",
                "ID", "ACCOUNT", "PLAN", "CREATED"
            );
            for k in keys {
                let revoked = k.revoked_at.map_or("-".to_string(), |t| t.to_string());
                println!(
                    "{:<32} {:<24} {:<10} {:<15} {revoked}",
                    k.id, k.account, k.plan, k.created_at
                );
            }
        }
        _ => anyhow::bail!("unexpected answer to a keys command"),
    }
    Ok(())
}
