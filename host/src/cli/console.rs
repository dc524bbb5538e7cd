//! `wasmind console login`: a short-lived sign-in link for the console, for operators
//! without an identity provider. The link carries an ID token signed by the server's own
//! key, which lives in a file of the data dir (not the database, so this works whether or
//! not a server holds the data dir) — or, on the postgres backend, in the database every
//! node reads it from.

use std::time::Duration;

use anyhow::bail;
use clap::Subcommand;

use super::target::Target;
use crate::{
    accounts::{AccountError, AccountStore, KeyStore, PgAccounts},
    console::OwnKey,
    data_dir::DataDir,
    storage::{self, Backend},
};

#[derive(Subcommand)]
pub(super) enum ConsoleCommand {
    /// Prints a sign-in link `BASE/console#token=<ID token>` for an account.
    Login {
        #[command(flatten)]
        target: Target,
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
            target,
            account,
            url,
            ttl_minutes,
        } => {
            let key = own_key(&target, &account)?;
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

/// The key the target's servers accept, warning on stderr when `account` is known not to
/// exist.
fn own_key(target: &Target, account: &str) -> anyhow::Result<OwnKey> {
    let config = target.config()?;
    match config.storage.backend {
        Backend::Embedded => {
            warn_if_unknown(target.data_dir(), account);
            OwnKey::load_or_create(target.data_dir())
        }
        Backend::Postgres => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async {
                let pool = storage::connect(&config.storage).await?;
                let known = PgAccounts::new(pool.clone()).plan(account).await;
                warn_unless_known(account, &known);
                OwnKey::load_or_create_in(&pool).await
            })
        }
    }
}

/// While a server holds the data dir the account cannot be read here (the server checks it
/// at sign-in); otherwise says so when there is no such account.
fn warn_if_unknown(data_dir: &std::path::Path, account: &str) {
    let Ok(dir) = DataDir::open(data_dir) else {
        return;
    };
    let known = KeyStore::new(dir.db().clone())
        .map_err(AccountError::from)
        .and_then(|keys| keys.plan(account));
    warn_unless_known(account, &known);
}

fn warn_unless_known<P, E>(account: &str, known: &Result<Option<P>, E>) {
    if matches!(known, Ok(None)) {
        eprintln!(
            "wasmind: warning: account {account:?} does not exist yet; the link signs in once \
             it does (`wasmind keys create --account {account}`)"
        );
    }
}
