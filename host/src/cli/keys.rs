//! `wasmind keys create|revoke|list`: API keys, through the running server when there is
//! one (live at once), else on the data dir's files; on the postgres backend, in the
//! database (live on every node at once).

use clap::Subcommand;

use super::target::Target;
use crate::{
    accounts::Plan,
    admin::{Request, Response},
};

#[derive(Subcommand)]
pub(super) enum KeysCommand {
    /// Creates a key (and the account, if new); prints the key alone on stdout.
    Create {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        account: String,
        /// Plan tier: free, liftoff or lightyear (default free for a new account).
        #[arg(long)]
        plan: Option<Plan>,
    },
    /// Revokes a key, given the key itself or its key_… id.
    Revoke {
        #[command(flatten)]
        target: Target,
        key: String,
    },
    /// Lists keys: ids, accounts, plans, created/revoked — never the secrets.
    List {
        #[command(flatten)]
        target: Target,
    },
}

pub(super) fn run(command: KeysCommand) -> anyhow::Result<()> {
    let (target, request) = match command {
        KeysCommand::Create {
            target,
            account,
            plan,
        } => (target, Request::CreateKey { account, plan }),
        KeysCommand::Revoke { target, key } => (target, Request::RevokeKey { key }),
        KeysCommand::List { target } => (target, Request::ListKeys),
    };
    match target.run(request)? {
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
