//! Checking an ID token (an OpenID Connect JWT) and reading who it signs in.
//!
//! The rules (also in docs/api.md, "Console"): the header's `alg` is RS256 or ES256 (nothing else,
//! `none` least of all); the unverified `iss` picks the trust: the server's own issuer
//! (ES256, its own key, audience `wasmind-console`, account in `wasmind_account`) or the
//! configured provider's (its JWKS key named by `kid`, or the first key of the token's
//! kind when there is no `kid`; the configured audience; the account in `account_claim`).
//! Then the signature, and the claims `iss`, `aud`, `exp` and `sub` are required, `exp`
//! and `nbf` (when present) are checked with [`LEEWAY_SECS`] of leeway for clock skew,
//! and the account claim must be a non-empty string.

use jsonwebtoken::{
    Algorithm, DecodingKey, Validation, dangerous, decode, decode_header, errors::ErrorKind,
};
use serde_json::{Map, Value};

use super::{
    config::DEFAULT_ACCOUNT_CLAIM,
    own_key::{OWN_AUDIENCE, OwnKey},
    provider::ProviderKeys,
};

/// Seconds of clock skew forgiven on `exp` and `nbf`.
pub const LEEWAY_SECS: u64 = 60;

/// Who a valid token signs in.
#[derive(Debug, Clone, PartialEq)]
pub struct Claims {
    /// The account named by the token's account claim (not yet checked to exist).
    pub account: String,
    /// `sub`: the person (or `operator` for `wasmind console login`).
    pub subject: String,
    /// `exp`, seconds since the epoch.
    pub expires_at: u64,
}

/// Why a token was refused; each says what is wrong in words a user can act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TokenError {
    #[error(
        "an API key is not an ID token: sign in to the console with an ID token (from \
         `wasmind console login` or your identity provider)"
    )]
    ApiKey,
    #[error("the ID token is malformed: {0}")]
    Malformed(String),
    #[error("the ID token's algorithm {0} is not accepted (RS256 or ES256)")]
    Algorithm(String),
    #[error("the ID token's issuer {0:?} is not trusted by this server")]
    UntrustedIssuer(String),
    #[error("the ID token's algorithm does not fit its issuer's key")]
    KeyMismatch,
    #[error("the ID token names a signing key the issuer does not have")]
    UnknownKey,
    #[error("the ID token's signature is invalid")]
    BadSignature,
    #[error("the ID token has expired; sign in again")]
    Expired,
    #[error("the ID token is not valid yet (nbf is in the future)")]
    NotYetValid,
    #[error("the ID token's audience is not this console's")]
    WrongAudience,
    #[error("the ID token has no {0:?} claim (or not a non-empty string)")]
    MissingClaim(String),
    #[error("the account {0:?} named by the ID token does not exist")]
    UnknownAccount(String),
}

/// Checks ID tokens against the server's own key and the configured provider.
pub struct Verifier {
    own: OwnKey,
    provider: Option<ProviderKeys>,
}

/// What a token is checked against, chosen by its issuer.
struct Trust {
    key: DecodingKey,
    audience: String,
    account_claim: String,
}

impl Verifier {
    pub fn new(own: OwnKey, provider: Option<ProviderKeys>) -> Self {
        Self { own, provider }
    }

    /// The claims of `token` if it is a valid ID token by the rules above.
    pub async fn verify(&self, token: &str) -> Result<Claims, TokenError> {
        if token.starts_with("wm_") {
            return Err(TokenError::ApiKey);
        }
        let header = decode_header(token).map_err(|e| {
            TokenError::Malformed(format!(
                "its header is not a JWT header with an accepted algorithm ({e})"
            ))
        })?;
        if !matches!(header.alg, Algorithm::RS256 | Algorithm::ES256) {
            return Err(TokenError::Algorithm(format!("{:?}", header.alg)));
        }
        let unverified: Map<String, Value> =
            dangerous::insecure_decode_claims(token).map_err(|e| {
                TokenError::Malformed(format!("its claims are not a JSON object ({e})"))
            })?;
        let issuer = string_claim(&unverified, "iss")?;
        let trust = self
            .trust(&issuer, header.kid.as_deref(), header.alg)
            .await?;

        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&issuer]);
        validation.set_audience(&[&trust.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        let claims = decode::<Map<String, Value>>(token, &trust.key, &validation)
            .map_err(|e| refusal(e.into_kind()))?
            .claims;
        let expires_at = claims
            .get("exp")
            .and_then(Value::as_u64)
            .ok_or_else(|| TokenError::MissingClaim("exp".into()))?;
        Ok(Claims {
            account: string_claim(&claims, &trust.account_claim)?,
            subject: string_claim(&claims, "sub")?,
            expires_at,
        })
    }

    async fn trust(
        &self,
        issuer: &str,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Trust, TokenError> {
        if issuer == self.own.issuer() {
            if alg != Algorithm::ES256 {
                return Err(TokenError::KeyMismatch);
            }
            return Ok(Trust {
                key: self.own.decoding().clone(),
                audience: OWN_AUDIENCE.into(),
                account_claim: DEFAULT_ACCOUNT_CLAIM.into(),
            });
        }
        let Some(provider) = self.provider.as_ref().filter(|p| p.config.issuer == issuer) else {
            return Err(TokenError::UntrustedIssuer(issuer.into()));
        };
        let key = provider.key(kid, alg).await.ok_or(TokenError::UnknownKey)?;
        Ok(Trust {
            key,
            audience: provider.config.audience.clone(),
            account_claim: provider.config.account_claim.clone(),
        })
    }
}

fn string_claim(claims: &Map<String, Value>, name: &str) -> Result<String, TokenError> {
    claims
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .ok_or_else(|| TokenError::MissingClaim(name.into()))
}

fn refusal(kind: ErrorKind) -> TokenError {
    match kind {
        ErrorKind::InvalidSignature => TokenError::BadSignature,
        ErrorKind::ExpiredSignature => TokenError::Expired,
        ErrorKind::ImmatureSignature => TokenError::NotYetValid,
        ErrorKind::InvalidAudience => TokenError::WrongAudience,
        ErrorKind::MissingRequiredClaim(claim) => TokenError::MissingClaim(claim),
        ErrorKind::InvalidAlgorithm => TokenError::KeyMismatch,
        other => TokenError::Malformed(format!("{other:?}")),
    }
}

#[cfg(test)]
#[path = "token_tests.rs"]
mod tests;
