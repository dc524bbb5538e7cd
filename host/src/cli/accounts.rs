//! `wasmind accounts list|set-plan`: accounts and their plans, through the running server
//! when there is one (a plan change applies to the account's next request), else on the
//! data dir's files; on the postgres backend, in the database.

use clap::Subcommand;

use super::target::Target;
use crate::{
    accounts::{AccountInfo, Plan},
    admin::{Request, Response},
};

#[derive(Subcommand)]
pub(super) enum AccountsCommand {
    /// Lists accounts: name, plan, created (epoch ms), keys not revoked.
    List {
        #[command(flatten)]
        target: Target,
    },
    /// Moves an existing account to another plan tier.
    SetPlan {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        account: String,
        /// free, liftoff or lightyear.
        #[arg(long)]
        plan: Plan,
    },
}

pub(super) fn run(command: AccountsCommand) -> anyhow::Result<()> {
    let (target, request) = match command {
        AccountsCommand::List { target } => (target, Request::ListAccounts),
        AccountsCommand::SetPlan {
            target,
            account,
            plan,
        } => (target, Request::SetPlan { account, plan }),
    };
    match target.run(request)? {
        Response::Accounts { accounts } => {
            println!(
                "{:<24} {:<10} {:<15} {:>11}",
                "ACCOUNT", "PLAN", "CREATED", "ACTIVE_KEYS"
            );
            accounts.iter().for_each(print_row);
        }
        Response::PlanSet { account } => {
            println!("account {} is now on plan {}", account.name, account.plan);
        }
        _ => anyhow::bail!("unexpected answer to an accounts command"),
    }
    Ok(())
}

fn print_row(a: &AccountInfo) {
    println!(
        "{:<24} {:<10} {:<15} {:>11}",
        a.name, a.plan, a.created_at, a.active_keys
    );
}
