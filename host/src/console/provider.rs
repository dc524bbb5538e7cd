//! The identity provider's signing keys (its JWKS): read from `jwks_file` at start, or
//! fetched from `jwks_url` on first use and again when a token names a key not yet seen
//! (providers rotate keys), at most once per [`REFETCH_EVERY`] so a stream of tokens with
//! made-up key ids cannot make the server hammer the provider.

use std::time::{Duration, Instant};

use anyhow::Context;
use jsonwebtoken::{
    Algorithm, DecodingKey,
    jwk::{AlgorithmParameters, Jwk, JwkSet},
};
use parking_lot::{Mutex, RwLock};

use super::config::{KeySource, Provider};

/// Shortest time between two fetches of a `jwks_url`.
const REFETCH_EVERY: Duration = Duration::from_secs(30);
/// Longest a fetch of a `jwks_url` may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// A configured provider and the keys it signs with.
pub struct ProviderKeys {
    pub config: Provider,
    keys: RwLock<JwkSet>,
    last_fetch: Mutex<Option<Instant>>,
    http: reqwest::Client,
}

impl ProviderKeys {
    /// Reads a `jwks_file` now (an unreadable one stops the start); a `jwks_url` waits for
    /// the first token.
    pub fn new(config: Provider) -> anyhow::Result<Self> {
        let keys = match &config.keys {
            KeySource::File(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading [console] jwks_file {}", path.display()))?;
                serde_json::from_str(&text).with_context(|| {
                    format!("[console] jwks_file {} is not a JWKS", path.display())
                })?
            }
            KeySource::Url(_) => JwkSet { keys: Vec::new() },
        };
        Ok(Self {
            config,
            keys: RwLock::new(keys),
            last_fetch: Mutex::new(None),
            http: reqwest::Client::builder().timeout(FETCH_TIMEOUT).build()?,
        })
    }

    /// The key that checks a token signed with `alg` under key id `kid`; `None` when the
    /// provider has no such key.
    pub async fn key(&self, kid: Option<&str>, alg: Algorithm) -> Option<DecodingKey> {
        if let Some(key) = self.find(kid, alg) {
            return Some(key);
        }
        self.refetch().await;
        self.find(kid, alg)
    }

    fn find(&self, kid: Option<&str>, alg: Algorithm) -> Option<DecodingKey> {
        let keys = self.keys.read();
        let fits = |jwk: &&Jwk| {
            kid.is_none_or(|kid| jwk.common.key_id.as_deref() == Some(kid))
                && matches!(
                    (&jwk.algorithm, alg),
                    (AlgorithmParameters::RSA(_), Algorithm::RS256)
                        | (AlgorithmParameters::EllipticCurve(_), Algorithm::ES256)
                )
        };
        keys.keys
            .iter()
            .find(fits)
            .and_then(|jwk| DecodingKey::from_jwk(jwk).ok())
    }

    /// Fetches a `jwks_url` again unless that was done lately; failures are logged and the
    /// keys held are kept.
    async fn refetch(&self) {
        let KeySource::Url(url) = &self.config.keys else {
            return;
        };
        {
            let mut last = self.last_fetch.lock();
            if last.is_some_and(|t| t.elapsed() < REFETCH_EVERY) {
                return;
            }
            *last = Some(Instant::now());
        }
        match self.fetch(url).await {
            Ok(set) => {
                tracing::info!(keys = set.keys.len(), %url, "identity provider keys fetched");
                *self.keys.write() = set;
            }
            Err(e) => {
                let error = format!("{e:#}");
                tracing::warn!(%url, %error, "fetching the identity provider's keys failed");
            }
        }
    }

    async fn fetch(&self, url: &str) -> anyhow::Result<JwkSet> {
        let response = self.http.get(url).send().await?.error_for_status()?;
        Ok(response.json().await?)
    }
}
