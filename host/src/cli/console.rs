//! `wasmind console login`: a short-lived sign-in link for the console, for operators
//! without an identity provider. The link carries an ID token signed by the server's own
//! key, which lives in a file of the data dir (not the database), so this works whether or
//! not a server holds the data dir.

use std::{path::PathBuf, time::Duration};

use anyhow::{Context, bail};
use clap::Subcommand;

use crate::{accounts::KeyStore, console::OwnKey, data_dir::DataDir};

#[derive(Subcommand)]
pub(super) enum ConsoleCommand {
    /// Prints a sign-in link `BASE/console#token=<ID token>` for an account.
    Login {
        #[arg(long, env = "WASMIND_DATA_DIR")]
        data_dir: PathBuf,
        /// The account to sign in to (it must exist by the time the link is used).
        #[arg(long)]
        account: String,
        /// Where the console is served.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        url: String,
        /// How long the token in the link is valid, in minutes.
        #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=1440))]
        ttl_minutes: u64,
    },
}

pub(super) fn run(command: ConsoleCommand) -> anyhow::Result<()> {
    match command {
        ConsoleCommand::Login {
            data_dir,
            account,
            url,
            ttl_minutes,
        } => {
            warn_if_unknown(&data_dir, &account);
            let key = OwnKey::load_or_create(&data_dir)?;
            let token = key.sign(&account, Duration::from_secs(ttl_minutes * 60))?;
            let base = url.trim_end_matches('/');
            if base.is_empty() {
                bail!("--url must not be empty");
            }
            println!("{base}/console#token={token}");
        }
    }
    Ok(())
}

/// Says so on stderr when the data dir is free and has no such account; while a server
/// holds the data dir the account cannot be read here, and the server checks it at sign-in.
fn warn_if_unknown(data_dir: &std::path::Path, account: &str) {
    let Ok(dir) = DataDir::open(data_dir) else {
        return;
    };
    let known = KeyStore::new(dir.db().clone())
        .and_then(|keys| keys.plan(account))
        .context("reading accounts");
    if matches!(known, Ok(None)) {
        eprintln!(
            "wasmind: warning: account {account:?} does not exist yet; the link signs in once \
             it does (`wasmind keys create --account {account}`)"
        );
    }
}
