//! The console's domain side: signing a tenant in with an ID token. A token is checked
//! against the server's own key (`own_key`, what `wasmind console login` signs with) or
//! the configured identity provider's keys (`provider`) by the rules of `token`, and the
//! account it names must exist; an account's open event streams are bounded (`streams`).
//! The console's HTTP routes, its event stream and its page are in `api::console`; this
//! module knows no HTTP.

pub mod config;
pub mod own_key;
mod provider;
mod streams;
mod token;

pub use config::ConsoleConfig;
pub use own_key::OwnKey;
pub use streams::{StreamSlot, Streams, StreamsFull};
pub use token::{Claims, LEEWAY_SECS, TokenError};

use crate::accounts::{AccountError, Accounts, Plan};
use provider::ProviderKeys;
use token::Verifier;

/// Who a console request acts for.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// The account every query of the request is scoped to (it exists).
    pub account: String,
    /// Its plan tier.
    pub plan: Plan,
    /// The token's `sub`.
    pub subject: String,
    /// The token's `exp`, seconds since the epoch.
    pub expires_at: u64,
}

/// Why a sign-in failed.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// The token is not a valid ID token of a known account.
    #[error(transparent)]
    Refused(#[from] TokenError),
    /// Looking the account up failed.
    #[error("reading the account: {0}")]
    Storage(AccountError),
}

/// Signs tenants in to the console.
pub struct Console {
    verifier: Verifier,
    keys: Accounts,
    /// The event streams open on this node, per account.
    pub streams: Streams,
}

impl Console {
    /// Signs in with the server's `own` key and the provider's keys.
    pub fn open(own: OwnKey, config: &ConsoleConfig, keys: Accounts) -> anyhow::Result<Self> {
        let provider = config.provider()?.map(ProviderKeys::new).transpose()?;
        tracing::info!(
            own_issuer = own.issuer(),
            provider = provider.as_ref().map(|p| p.config.issuer.as_str()),
            "console sign-in ready"
        );
        Ok(Self {
            verifier: Verifier::new(own, provider),
            keys,
            streams: Streams::default(),
        })
    }

    /// The session a valid ID token of an existing account opens.
    pub async fn sign_in(&self, token: &str) -> Result<Session, SignInError> {
        let claims = self.verifier.verify(token).await?;
        let plan = self
            .keys
            .plan(&claims.account)
            .await
            .map_err(SignInError::Storage)?
            .ok_or_else(|| TokenError::UnknownAccount(claims.account.clone()))?;
        Ok(Session {
            account: claims.account,
            plan,
            subject: claims.subject,
            expires_at: claims.expires_at,
        })
    }
}
