//! `wasmind accounts list|set-plan`: accounts and their plans, through the running server
//! when there is one (a plan change applies to the account's next request), else on the
//! data dir's files.

use std::path::PathBuf;

use clap::Subcommand;

use crate::{
    accounts::{AccountInfo, Plan},
    admin::{self, Request, Response},
};

#[derive(Subcommand)]
pub(super) enum AccountsCommand {
    /// Lists accounts: name, plan, created (epoch ms), keys not revoked.
    List {
        #[arg(long, env = "WASMIND_DATA_DIR")]
        data_dir: PathBuf,
    },
    /// Moves an existing account to another plan tier.
    SetPlan {
        #[arg(long, env = "WASMIND_DATA_DIR")]
        data_dir: PathBuf,
        #[arg(long)]
        account: String,
        /// free, liftoff or lightyear.
        #[arg(long)]
        plan: Plan,
    },
}

pub(super) fn run(command: AccountsCommand) -> anyhow::Result<()> {
    let (data_dir, request) = match command {
        AccountsCommand::List { data_dir } => (data_dir, Request::ListAccounts),
        AccountsCommand::SetPlan {
            data_dir,
            account,
            plan,
        } => (data_dir, Request::SetPlan { account, plan }),
    };
    match admin::run(&data_dir, request)? {
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
