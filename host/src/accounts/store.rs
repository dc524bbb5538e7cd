//! Where accounts and keys live, behind one trait the API, the console, MCP and the CLI
//! call, so none of them knows the backend: [`KeyStore`] (`store/embedded.rs`) keeps them
//! in the data dir's redb, [`PgAccounts`] (`store/postgres.rs`) in PostgreSQL shared by every node
//! (a key made or revoked through any node counts on every node from its next request).
//!
//! What both backends must agree on — the key's shape, what is stored of it, which account
//! names are valid — is here, once.

mod embedded;
mod postgres;

use std::{collections::HashMap, sync::Arc};

use async_trait::async_trait;
use rand::RngExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use self::embedded::KeyStore;
pub use self::postgres::PgAccounts;
use super::{
    Plan, PlanSource, Plans,
    error::{AccountError, Result},
};
use crate::{clock::iso8601, egress::policy::Allow, storage::StoreError};

/// Who a request acts for, as established by its API key.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    /// The account every query of the request is scoped to.
    pub account: Arc<str>,
    /// The account's plan tier.
    pub plan: Plan,
    /// The key's public id (`key_…`), for per-key rate limits and logs.
    pub key_id: Arc<str>,
}

/// What `keys list` shows of a key: never the secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyInfo {
    pub id: String,
    pub account: String,
    pub plan: Plan,
    pub created_at: u64,
    pub revoked_at: Option<u64>,
}

/// What `accounts list` shows of an account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountInfo {
    pub name: String,
    pub plan: Plan,
    /// Who set the plan last.
    #[serde(default)]
    pub plan_source: PlanSource,
    pub created_at: u64,
    /// Keys of the account not revoked.
    pub active_keys: u32,
}

/// How long a revoked key keeps its place under the plan's `keys`: the longest spawn-rate
/// window. Spawn windows are per key (§8), so a key revoked and replaced at once would
/// hand the account a fresh key's windows while the old key's still count its spawns;
/// held for this long, the keys whose windows may still count a spawn never outnumber the
/// plan's `keys`, and making keys cannot raise an account's spawn rate.
pub const REVOKED_KEY_HOLD_MS: u64 = 3_600_000;

/// The places an account's keys take under its plan's `keys`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Places {
    /// Keys not revoked.
    pub active: u32,
    /// Keys revoked less than [`REVOKED_KEY_HOLD_MS`] ago.
    pub held: u32,
    /// When the first of the held places frees (epoch ms), if any is held.
    pub frees_at: Option<u64>,
}

impl Places {
    /// The places the keys revoked at `revoked` (each `None` when active) take at `now`.
    pub fn of(revoked: impl IntoIterator<Item = Option<u64>>, now: u64) -> Self {
        let mut places = Places::default();
        for at in revoked {
            match at {
                None => places.active += 1,
                Some(at) if now < at.saturating_add(REVOKED_KEY_HOLD_MS) => {
                    places.held += 1;
                    let frees = at.saturating_add(REVOKED_KEY_HOLD_MS);
                    places.frees_at = Some(places.frees_at.map_or(frees, |f| f.min(frees)));
                }
                Some(_) => {}
            }
        }
        places
    }

    /// Every place taken.
    pub fn taken(&self) -> u32 {
        self.active.saturating_add(self.held)
    }
}

/// Why a key was not created.
#[derive(Debug, thiserror::Error)]
pub enum CreateKeyError {
    /// The account name is not one an account may have; the message says which are.
    #[error(
        "account name {0:?} is invalid: use 1-64 characters from letters, digits, '-', '_', '.', '@'"
    )]
    InvalidAccount(String),
    /// The account's keys take its plan's `keys` places: active ones, and those revoked
    /// within the last hour ([`REVOKED_KEY_HOLD_MS`]).
    #[error("{}", key_limit_message(.account, *.plan, .places, *.max))]
    KeyLimit {
        account: String,
        plan: Plan,
        places: Places,
        max: u32,
    },
    /// Reading or writing the store failed.
    #[error(transparent)]
    Storage(#[from] StoreError),
}

/// What [`CreateKeyError::KeyLimit`] says: what takes the places, and when one frees.
fn key_limit_message(account: &str, plan: Plan, places: &Places, max: u32) -> String {
    let Places {
        active,
        held,
        frees_at,
    } = *places;
    let taken = match held {
        0 => format!("{active} active API keys"),
        _ => format!("{active} active API keys and {held} revoked within the last hour"),
    };
    let frees = match frees_at {
        Some(at) => format!("a place frees at {}", iso8601(at)),
        None => "revoke a key to free its place an hour later".to_owned(),
    };
    format!(
        "account {account:?} has {taken}, the {plan} plan's maximum of {max} (a revoked key \
         keeps its place for an hour, while its spawn-rate windows last); {frees}, or move the \
         account to a larger plan"
    )
}

crate::storage::storage_errors_into!(CreateKeyError);

/// Accounts, their plans and their API keys.
#[async_trait]
pub trait AccountStore: Send + Sync + 'static {
    /// Creates a key for `account`, creating the account (plan default free) if new. An
    /// explicit `plan` also changes an existing account's plan. Refused when the account's
    /// keys already take its plan's `keys` (of `plans`) places — the active ones, and those
    /// revoked within the last hour ([`REVOKED_KEY_HOLD_MS`]) — counted in the same step as
    /// the insert, so two creations at once never pass the bound together. Every door that
    /// makes keys (the console, the operator's CLI) comes through here. Returns the secret,
    /// which is shown once and never stored.
    async fn create(
        &self,
        account: &str,
        plan: Option<Plan>,
        plans: &Plans,
    ) -> Result<(String, KeyInfo), CreateKeyError>;

    /// Revokes a key given either the secret itself or its `key_…` id (the operator's
    /// revocation, of any account's key).
    async fn revoke(&self, key: &str) -> Result<KeyInfo>;

    /// Revokes `account`'s key `key_id` (idempotent); `None` when the account has no key of
    /// that id — another account's key, or a secret given in place of an id, is not found.
    async fn revoke_own(&self, account: &str, key_id: &str) -> Result<Option<KeyInfo>>;

    /// Every key, oldest first.
    async fn list(&self) -> Result<Vec<KeyInfo>>;

    /// The keys of `account`, revoked ones included, newest first (as the console and the
    /// usage report list them): one indexed query.
    async fn keys(&self, account: &str) -> Result<Vec<KeyInfo>>;

    /// Every account's plan (what `/metrics` sums live memories by).
    async fn plans(&self) -> Result<HashMap<String, Plan>>;

    /// Every account, by name, with its count of unrevoked keys.
    async fn accounts(&self) -> Result<Vec<AccountInfo>>;

    /// Moves an existing account to `plan`, recording `source` as who did; its keys act on
    /// the new plan from their next request, as [`authenticate`](Self::authenticate) reads
    /// the plan afresh each time.
    async fn set_plan(&self, account: &str, plan: Plan, source: PlanSource) -> Result<AccountInfo>;

    /// The principal a presented key acts for; `None` for unknown or revoked keys.
    async fn authenticate(&self, secret: &str) -> Result<Option<Principal>>;

    /// The plan of `account`; `None` when no such account exists.
    async fn plan(&self, account: &str) -> Result<Option<Plan>>;

    /// The hosts the operator lets `account`'s agents reach beyond everyone's and its
    /// plan's (`[egress]`); none for an unknown account.
    async fn egress(&self, account: &str) -> Result<Vec<Allow>>;

    /// Replaces them (the operator's); an unknown account is an error.
    async fn set_egress(&self, account: &str, allow: Vec<Allow>) -> Result<Vec<Allow>>;
}

/// The account store a server or CLI command runs on; cheap to clone.
pub type Accounts = Arc<dyn AccountStore>;

/// A new key: the secret to show once, the SHA-256 (hex) to store, and its public id.
pub(super) struct NewKey {
    pub(super) secret: String,
    pub(super) hash: String,
    pub(super) id: String,
}

impl NewKey {
    /// `wm_` followed by 64 hex digits of randomness.
    pub(super) fn generate() -> Self {
        let secret = format!("wm_{}", hex::encode(rand::rng().random::<[u8; 32]>()));
        Self {
            hash: hash_key(&secret),
            secret,
            id: crate::id::new_id("key_"),
        }
    }
}

/// What is stored of a key, and what a presented key is looked up by.
pub(super) fn hash_key(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

pub(super) fn validate_account(name: &str) -> Result<(), CreateKeyError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'));
    if !ok {
        return Err(CreateKeyError::InvalidAccount(name.to_owned()));
    }
    Ok(())
}

/// The refusal of one more key for `account` on `plan` whose keys take `places`, if
/// `plans` bound it there.
pub(super) fn key_bound(
    account: &str,
    plan: Plan,
    places: Places,
    plans: &Plans,
) -> Result<(), CreateKeyError> {
    let max = plans.limits(plan).keys;
    if places.taken() < max {
        return Ok(());
    }
    Err(CreateKeyError::KeyLimit {
        account: account.to_owned(),
        plan,
        places,
        max,
    })
}

/// The error for a key that is neither a known secret nor a known id.
pub(super) fn no_such_key(key: &str) -> AccountError {
    AccountError::NoSuchKey(key.to_owned())
}

/// The error for a plan change of an account nobody made.
pub(super) fn no_such_account(account: &str) -> AccountError {
    AccountError::NoSuchAccount(account.to_owned())
}

#[cfg(test)]
mod tests;
