//! Where accounts and keys live, behind one trait the API, the console, MCP and the CLI
//! call, so none of them knows the backend: [`KeyStore`](super::KeyStore) keeps them in the
//! data dir's redb, [`PgAccounts`](super::PgAccounts) in PostgreSQL shared by every node
//! (a key made or revoked through any node counts on every node from its next request).
//!
//! What both backends must agree on — the key's shape, what is stored of it, which account
//! names are valid — is here, once.

use std::{collections::HashMap, sync::Arc};

use anyhow::bail;
use async_trait::async_trait;
use rand::RngExt;
use sha2::{Digest, Sha256};

use super::{AccountInfo, KeyInfo, Plan, Principal};

/// Accounts, their plans and their API keys.
#[async_trait]
pub trait AccountStore: Send + Sync + 'static {
    /// Creates a key for `account`, creating the account (plan default free) if new. An
    /// explicit `plan` also changes an existing account's plan. Returns the secret, which
    /// is shown once and never stored.
    async fn create(&self, account: &str, plan: Option<Plan>) -> anyhow::Result<(String, KeyInfo)>;

    /// Revokes a key given either the secret itself or its `key_…` id.
    async fn revoke(&self, key: &str) -> anyhow::Result<KeyInfo>;

    /// Every key, oldest first.
    async fn list(&self) -> anyhow::Result<Vec<KeyInfo>>;

    /// Every account's plan (what `/metrics` sums live memories by).
    async fn plans(&self) -> anyhow::Result<HashMap<String, Plan>>;

    /// Every account, by name, with its count of unrevoked keys.
    async fn accounts(&self) -> anyhow::Result<Vec<AccountInfo>>;

    /// Moves an existing account to `plan`; its keys act on the new plan from their next
    /// request, as [`authenticate`](Self::authenticate) reads the plan afresh each time.
    async fn set_plan(&self, account: &str, plan: Plan) -> anyhow::Result<AccountInfo>;

    /// The principal a presented key acts for; `None` for unknown or revoked keys.
    async fn authenticate(&self, secret: &str) -> anyhow::Result<Option<Principal>>;

    /// The plan of `account`; `None` when no such account exists.
    async fn plan(&self, account: &str) -> anyhow::Result<Option<Plan>>;
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

pub(super) fn validate_account(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'));
    if !ok {
        bail!(
            "account name {name:?} is invalid: use 1-64 characters from letters, digits, '-', '_', '.', '@'"
        );
    }
    Ok(())
}

/// The error for a key that is neither a known secret nor a known id.
pub(super) fn no_such_key(key: &str) -> anyhow::Error {
    anyhow::anyhow!("no key {key:?} (give the key or its key_… id)")
}

/// The error for a plan change of an account nobody made.
pub(super) fn no_such_account(account: &str) -> anyhow::Error {
    anyhow::anyhow!("no account {account:?} (`keys create` makes accounts)")
}

#[cfg(test)]
mod tests;
