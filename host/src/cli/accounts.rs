//! `wasmind accounts list|set-plan|hosts|allow-host|deny-host`: accounts, their plans and
//! the hosts their agents may reach over HTTP beyond everyone's and their plan's
//! (`[egress]`), through the running server when there is one (a change applies to the
//! account's next request), else on the data dir's files; on the postgres backend, in the
//! database.

use clap::Subcommand;

use super::target::Target;
use crate::{
    accounts::{AccountInfo, Plan},
    admin::{Request, Response},
    egress::policy::Allow,
};

/// The request that sets `account`'s entries to its current ones as `edit` leaves them.
fn edited(
    target: &Target,
    account: &str,
    edit: impl FnOnce(&mut Vec<Allow>),
) -> anyhow::Result<Request> {
    let request = Request::Egress {
        account: account.to_owned(),
    };
    let Response::Egress { mut allow, .. } = target.run(request)? else {
        anyhow::bail!("unexpected answer to an accounts command");
    };
    edit(&mut allow);
    Ok(Request::SetEgress {
        account: account.to_owned(),
        allow,
    })
}

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
    /// Lists the hosts the account's agents may reach beyond everyone's and its plan's.
    Hosts {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        account: String,
    },
    /// Lets the account's agents reach a host (replacing its entry, if it has one).
    AllowHost {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        account: String,
        /// A host name, an IP address, or `*.` and a domain (its subdomains).
        #[arg(long)]
        host: String,
        /// A port (repeat for more); none: the scheme's own.
        #[arg(long = "port")]
        ports: Vec<u16>,
        /// `https` (the default) or `http` (repeat for both).
        #[arg(long = "scheme")]
        schemes: Vec<String>,
    },
    /// Takes a host off the account's own entries.
    DenyHost {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        account: String,
        #[arg(long)]
        host: String,
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
        AccountsCommand::Hosts { target, account } => (target, Request::Egress { account }),
        AccountsCommand::AllowHost {
            target,
            account,
            host,
            ports,
            schemes,
        } => {
            let schemes = match schemes.is_empty() {
                true => vec!["https".into()],
                false => schemes,
            };
            let entry = Allow {
                host,
                ports,
                schemes,
            };
            let request = edited(&target, &account, |allow| {
                allow.retain(|a| a.host != entry.host);
                allow.push(entry);
            })?;
            (target, request)
        }
        AccountsCommand::DenyHost {
            target,
            account,
            host,
        } => {
            let request = edited(&target, &account, |allow| allow.retain(|a| a.host != host))?;
            (target, request)
        }
    };
    match target.run(request)? {
        Response::Accounts { accounts } => {
            println!(
                "{:<24} {:<10} {:<15} {:>11} {:<8}",
                "ACCOUNT", "PLAN", "CREATED", "ACTIVE_KEYS", "PLAN_SET_BY"
            );
            accounts.iter().for_each(print_row);
        }
        Response::PlanSet { account } => {
            println!("account {} is now on plan {}", account.name, account.plan);
        }
        Response::Egress { account, allow } => {
            println!("{:<32} {:<16} {:<12} {account}", "HOST", "PORTS", "SCHEMES");
            for a in allow {
                let ports: Vec<String> = a.ports.iter().map(u16::to_string).collect();
                let ports = if ports.is_empty() {
                    "default".into()
                } else {
                    ports.join(",")
                };
                println!("{:<32} {:<16} {:<12}", a.host, ports, a.schemes.join(","));
            }
        }
        _ => anyhow::bail!("unexpected answer to an accounts command"),
    }
    Ok(())
}

fn print_row(a: &AccountInfo) {
    println!(
        "{:<24} {:<10} {:<15} {:>11} {:<8}",
        a.name,
        a.plan,
        a.created_at,
        a.active_keys,
        a.plan_source.as_str()
    );
}
