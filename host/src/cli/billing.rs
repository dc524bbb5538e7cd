//! `wasmind billing`: an account's plan at the payment provider through the public API
//! (`WASMIND_URL`, `WASMIND_API_KEY`): its state, a checkout to upgrade, the portal. Each
//! prints the server's JSON answer; a refusal is `code: message` on stderr, exit 1.

use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::json;

use super::remote::{Remote, RemoteArgs};

/// `wasmind billing` subcommands.
#[derive(Subcommand)]
pub enum BillingCommand {
    /// The account's plan and subscription (`GET /api/v1/billing`).
    Status(RemoteOnly),
    /// Opens a checkout for a plan (`POST /api/v1/billing/checkout`); prints its URL,
    /// where the payment is made.
    Checkout(CheckoutArgs),
    /// Opens the provider's portal (`POST /api/v1/billing/portal`); prints its URL.
    Portal(RemoteOnly),
}

/// The server and key, nothing else.
#[derive(Debug, Args)]
pub struct RemoteOnly {
    #[command(flatten)]
    remote: RemoteArgs,
}

/// `wasmind billing checkout`.
#[derive(Debug, Args)]
pub struct CheckoutArgs {
    /// liftoff or lightyear.
    #[arg(long)]
    plan: String,
    /// One of the plan's configured provider prices; default the plan's first.
    #[arg(long)]
    price_id: Option<String>,
    #[command(flatten)]
    remote: RemoteArgs,
}

pub fn run(command: BillingCommand) -> anyhow::Result<()> {
    let (remote, request) = match command {
        BillingCommand::Status(a) => {
            let remote = Remote::new(&a.remote);
            let request = remote.request(Method::GET, "/api/v1/billing");
            (remote, request)
        }
        BillingCommand::Checkout(a) => {
            let remote = Remote::new(&a.remote);
            let body = json!({ "plan": a.plan, "price_id": a.price_id });
            let request = remote
                .request(Method::POST, "/api/v1/billing/checkout")
                .json(&body);
            (remote, request)
        }
        BillingCommand::Portal(a) => {
            let remote = Remote::new(&a.remote);
            let request = remote.request(Method::POST, "/api/v1/billing/portal");
            (remote, request)
        }
    };
    let answer = remote.send(request)?;
    println!("{}", serde_json::to_string_pretty(&answer)?);
    Ok(())
}
