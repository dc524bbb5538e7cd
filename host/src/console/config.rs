//! The `[console]` section: which identity provider's ID tokens sign a tenant in to the
//! console. Without it only tokens signed by the server's own key (`wasmind console login`)
//! are accepted.

use std::path::PathBuf;

use serde::Deserialize;

/// The claim that names the account unless `account_claim` says otherwise.
pub const DEFAULT_ACCOUNT_CLAIM: &str = "wasmind_account";

/// The `[console]` section of the config file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ConsoleConfig {
    /// The identity provider's issuer (`iss` of its ID tokens); `None`: no provider.
    pub issuer: Option<String>,
    /// The audience its ID tokens must name (`aud`): the console's client id there.
    pub audience: Option<String>,
    /// Its signing keys as a JWKS document on disk…
    pub jwks_file: Option<PathBuf>,
    /// …or at a URL (fetched at start, and again when a token names a key not yet seen).
    pub jwks_url: Option<String>,
    /// The claim whose string value is the wasmind account a token signs in to.
    pub account_claim: String,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        Self {
            issuer: None,
            audience: None,
            jwks_file: None,
            jwks_url: None,
            account_claim: DEFAULT_ACCOUNT_CLAIM.to_string(),
        }
    }
}

/// Where the identity provider's keys come from.
#[derive(Debug, Clone, PartialEq)]
pub enum KeySource {
    File(PathBuf),
    Url(String),
}

/// A configured identity provider, checked whole.
#[derive(Debug, Clone, PartialEq)]
pub struct Provider {
    pub issuer: String,
    pub audience: String,
    pub keys: KeySource,
    pub account_claim: String,
}

impl ConsoleConfig {
    /// The identity provider, if one is configured; a partial configuration is an error
    /// naming what is missing, so a typo never silently turns the provider off.
    pub fn provider(&self) -> anyhow::Result<Option<Provider>> {
        let keys = match (&self.jwks_file, &self.jwks_url) {
            (Some(_), Some(_)) => {
                anyhow::bail!("[console] give jwks_file or jwks_url, not both")
            }
            (Some(f), None) => Some(KeySource::File(f.clone())),
            (None, Some(u)) => Some(KeySource::Url(u.clone())),
            (None, None) => None,
        };
        match (&self.issuer, &self.audience, keys) {
            (None, None, None) => Ok(None),
            (Some(issuer), Some(audience), Some(keys)) => {
                if self.account_claim.is_empty() {
                    anyhow::bail!("[console] account_claim must not be empty");
                }
                Ok(Some(Provider {
                    issuer: issuer.clone(),
                    audience: audience.clone(),
                    keys,
                    account_claim: self.account_claim.clone(),
                }))
            }
            (issuer, audience, keys) => {
                let missing: Vec<&str> = [
                    issuer.is_none().then_some("issuer"),
                    audience.is_none().then_some("audience"),
                    keys.is_none().then_some("jwks_file or jwks_url"),
                ]
                .into_iter()
                .flatten()
                .collect();
                anyhow::bail!(
                    "[console] an identity provider needs issuer, audience and jwks_file or \
                     jwks_url; missing: {}",
                    missing.join(", ")
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_whole_or_refused() {
        assert_eq!(ConsoleConfig::default().provider().unwrap(), None);
        let mut c = ConsoleConfig {
            issuer: Some("https://idp.example".into()),
            audience: Some("wasmind".into()),
            jwks_url: Some("https://idp.example/jwks".into()),
            ..ConsoleConfig::default()
        };
        let p = c.provider().unwrap().unwrap();
        assert_eq!(p.account_claim, DEFAULT_ACCOUNT_CLAIM);
        assert_eq!(p.keys, KeySource::Url("https://idp.example/jwks".into()));
        c.audience = None;
        let err = c.provider().unwrap_err().to_string();
        assert!(err.contains("missing: audience"), "{err}");
        c.audience = Some("wasmind".into());
        c.jwks_file = Some("keys.json".into());
        let err = c.provider().unwrap_err().to_string();
        assert!(err.contains("not both"), "{err}");
    }
}
