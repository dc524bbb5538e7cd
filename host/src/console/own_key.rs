//! The server's own signing key: an ES256 (P-256) key pair kept in the data dir (in the
//! database on the postgres backend, so every node has the same), for operators without an
//! identity provider. `wasmind console login` signs short-lived ID
//! tokens with it; the server accepts them beside the provider's.
//!
//! The key is a file, not a redb table, so the CLI can read it while a server holds the
//! database lock. Whichever of them needs it first creates it, as a private file published
//! once (see [`private_file`](crate::private_file)): processes racing to create it all end
//! up with the one that won.

use std::{path::Path, time::Duration};

use anyhow::Context;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use jsonwebtoken::{
    Algorithm, DecodingKey, EncodingKey, Header,
    jwk::{Jwk, ThumbprintHash},
};
use serde_json::json;

use super::config::DEFAULT_ACCOUNT_CLAIM;
use crate::{clock::now_ms, private_file};

/// The key's file in the data dir.
pub const KEY_FILE: &str = "console-signing-key.pem";
/// The audience of every token the server signs.
pub const OWN_AUDIENCE: &str = "wasmind-console";
/// The `sub` of tokens minted by `wasmind console login`.
pub const OPERATOR_SUBJECT: &str = "operator";

/// The server's own key pair, and the issuer id derived from it.
pub struct OwnKey {
    encoding: EncodingKey,
    decoding: DecodingKey,
    /// `wasmind:<JWK thumbprint>`: stable for the data dir, and naming the key.
    issuer: String,
    kid: String,
}

impl OwnKey {
    /// Reads the data dir's key, creating it first if there is none.
    pub fn load_or_create(data_dir: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("creating data dir {}", data_dir.display()))?;
        let path = data_dir.join(KEY_FILE);
        let pem = private_file::read_or_publish(&path, || generate().map(String::into_bytes))?;
        Self::from_pem(&pem).with_context(|| format!("reading the key in {}", path.display()))
    }

    /// Reads the key every node of the postgres backend shares, creating it first if
    /// there is none (nodes racing to create it all end up with the one inserted first).
    pub async fn load_or_create_in(pool: &sqlx::PgPool) -> anyhow::Result<Self> {
        sqlx::query("INSERT INTO console_own_key (id, pem) VALUES (1, $1) ON CONFLICT DO NOTHING")
            .bind(generate()?)
            .execute(pool)
            .await
            .context("storing the console signing key")?;
        let pem: String = sqlx::query_scalar("SELECT pem FROM console_own_key WHERE id = 1")
            .fetch_one(pool)
            .await
            .context("reading the console signing key")?;
        Self::from_pem(pem.as_bytes()).context("reading the database's console signing key")
    }

    fn from_pem(pem: &[u8]) -> anyhow::Result<Self> {
        let encoding = EncodingKey::from_ec_pem(pem)?;
        let jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256)?;
        let decoding = DecodingKey::from_jwk(&jwk)?;
        let kid = jwk.thumbprint(ThumbprintHash::SHA256)?;
        Ok(Self {
            encoding,
            decoding,
            issuer: format!("wasmind:{kid}"),
            kid,
        })
    }

    /// The `iss` of the tokens this key signs.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The key that checks this key's signatures.
    pub fn decoding(&self) -> &DecodingKey {
        &self.decoding
    }

    /// An ID token for `account`, valid for `ttl` from now.
    pub fn sign(&self, account: &str, ttl: Duration) -> anyhow::Result<String> {
        let now = now_ms() / 1_000;
        let claims = json!({
            "iss": self.issuer,
            "aud": OWN_AUDIENCE,
            "sub": OPERATOR_SUBJECT,
            "iat": now,
            "exp": now + ttl.as_secs(),
            DEFAULT_ACCOUNT_CLAIM: account,
        });
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        Ok(jsonwebtoken::encode(&header, &claims, &self.encoding)?)
    }
}

/// A new key pair as PKCS#8 PEM.
fn generate() -> anyhow::Result<String> {
    let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING)
        .map_err(|_| anyhow::anyhow!("generating the console signing key failed"))?;
    let der = pair
        .to_pkcs8v1()
        .map_err(|_| anyhow::anyhow!("encoding the console signing key failed"))?;
    Ok(pem::encode(&pem::Pem::new(
        "PRIVATE KEY",
        der.as_ref().to_vec(),
    )))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn created_once_private_and_stable() {
        let dir = tempfile::tempdir().unwrap();
        let first = OwnKey::load_or_create(dir.path()).unwrap();
        let path = dir.path().join(KEY_FILE);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = OwnKey::load_or_create(dir.path()).unwrap();
        assert_eq!(first.issuer(), again.issuer());
        assert!(first.issuer().starts_with("wasmind:"));
        let other = tempfile::tempdir().unwrap();
        assert_ne!(
            OwnKey::load_or_create(other.path()).unwrap().issuer(),
            first.issuer()
        );
        // Only the key file is left: no staging file.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn racing_creators_agree() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let issuers: Vec<String> = (0..8)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || OwnKey::load_or_create(&path).unwrap().issuer)
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect();
        assert!(issuers.windows(2).all(|w| w[0] == w[1]), "{issuers:?}");
    }
}
