//! Tools' secrets at rest: sealed with AES-256-GCM under a key that lives outside the data
//! dir and the database (`[tools] secret_key_file`), so a copy of either holds only
//! ciphertext. Each sealed secret is bound to its account and tool (the additional data),
//! so it opens nowhere else, and names the key that sealed it (a digest of it), so a node
//! given another key says so instead of failing obscurely.
//!
//! The key file is made once (32 random bytes as 64 hex digits, 0600, in a 0700 directory)
//! by the first process that needs it ([`crate::private_file`]); an operator may write
//! their own (`openssl rand -hex 32`). Nodes of the postgres backend must all be given the
//! same file.

use std::{
    os::unix::fs::{DirBuilderExt, PermissionsExt},
    path::Path,
};

use anyhow::{Context, bail};
use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use base64::{Engine as _, engine::general_purpose::STANDARD};
use sha2::{Digest, Sha256};

use crate::{private_file, secret::Secret};

/// Bytes of the key.
const KEY_BYTES: usize = 32;
/// The format of a sealed secret: `v1.<key id>.<base64 of nonce and ciphertext>`.
const VERSION: &str = "v1";

/// Why a sealed secret did not open.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unsealable {
    #[error(
        "the secret was sealed under another key ({0}) than this node's [tools] secret_key_file \
         ({1}): give every node the key file the secret was sealed with, or register the tool again"
    )]
    OtherKey(String, String),
    #[error("the sealed secret is damaged")]
    Damaged,
}

/// The key, and its id.
pub struct Sealer {
    key: LessSafeKey,
    id: String,
}

impl Sealer {
    /// The key at `path` (made if missing), refused when it lies inside `data_dir` or can
    /// be read by anyone but its owner.
    pub fn open(path: &Path, data_dir: &Path) -> anyhow::Result<Self> {
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        let parent = parent.unwrap_or(Path::new("."));
        if let Ok(data) = data_dir.canonicalize()
            && resolved(parent).starts_with(data)
        {
            bail!(
                "[tools] secret_key_file {} is inside the data dir {}: a copy of the data dir \
                 would then open the tools' secrets; keep the key elsewhere",
                path.display(),
                data_dir.display()
            );
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        let bytes = private_file::read_or_publish(path, || {
            let mut key = [0u8; KEY_BYTES];
            aws_lc_rs::rand::fill(&mut key).map_err(|_| anyhow::anyhow!("no randomness"))?;
            Ok(format!("{}\n", hex::encode(key)).into_bytes())
        })?;
        let mode = std::fs::metadata(path)?.permissions().mode();
        if mode & 0o077 != 0 {
            bail!(
                "[tools] secret_key_file {} can be read by its group or others (mode {:o}): \
                 `chmod 600` it",
                path.display(),
                mode & 0o7777
            );
        }
        Self::from_key_file(&bytes).with_context(|| format!("reading {}", path.display()))
    }

    /// A key file's key: 64 hex digits (white space around them ignored), or 32 bytes.
    fn from_key_file(bytes: &[u8]) -> anyhow::Result<Self> {
        let text = std::str::from_utf8(bytes).map(str::trim).ok();
        let key = match text.and_then(|t| hex::decode(t).ok()) {
            Some(key) if key.len() == KEY_BYTES => key,
            _ if bytes.len() == KEY_BYTES => bytes.to_vec(),
            _ => bail!("a tools key is 64 hex digits (e.g. `openssl rand -hex 32`) or 32 bytes"),
        };
        Ok(Self::from_key(&key))
    }

    fn from_key(key: &[u8]) -> Self {
        let digest = Sha256::new()
            .chain_update(b"wasmind tools key\0")
            .chain_update(key)
            .finalize();
        let unbound = UnboundKey::new(&AES_256_GCM, key).expect("a 32-byte key");
        Self {
            key: LessSafeKey::new(unbound),
            id: hex::encode(&digest[..8]),
        }
    }

    /// The key's id, which its sealed secrets name.
    pub fn key_id(&self) -> &str {
        &self.id
    }

    /// `secret` sealed for tool `name` of `account`.
    pub fn seal(&self, account: &str, name: &str, secret: &Secret) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        aws_lc_rs::rand::fill(&mut nonce).expect("randomness");
        let mut sealed = secret.expose().as_bytes().to_vec();
        (self.key)
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(bound_to(account, name)),
                &mut sealed,
            )
            .expect("sealing never fails for a valid key");
        let mut blob = nonce.to_vec();
        blob.extend_from_slice(&sealed);
        format!("{VERSION}.{}.{}", self.id, STANDARD.encode(blob))
    }

    /// The secret `sealed` holds, if it was sealed for tool `name` of `account` under
    /// this key.
    pub fn open_secret(
        &self,
        account: &str,
        name: &str,
        sealed: &str,
    ) -> Result<Secret, Unsealable> {
        let mut parts = sealed.splitn(3, '.');
        let (Some(VERSION), Some(id), Some(blob)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(Unsealable::Damaged);
        };
        if id != self.id {
            return Err(Unsealable::OtherKey(id.to_string(), self.id.clone()));
        }
        let blob = STANDARD.decode(blob).map_err(|_| Unsealable::Damaged)?;
        if blob.len() < NONCE_LEN {
            return Err(Unsealable::Damaged);
        }
        let (nonce, sealed) = blob.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| Unsealable::Damaged)?;
        let mut sealed = sealed.to_vec();
        let plain = (self.key)
            .open_in_place(nonce, Aad::from(bound_to(account, name)), &mut sealed)
            .map_err(|_| Unsealable::Damaged)?;
        String::from_utf8(plain.to_vec())
            .map(Secret::from)
            .map_err(|_| Unsealable::Damaged)
    }
}

/// `path` with its symbolic links and `..` resolved as far as it exists, the rest as given.
fn resolved(path: &Path) -> std::path::PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut rest = Vec::new();
    let mut existing = absolute.as_path();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// The id of the key a sealed secret names.
pub fn key_id_of(sealed: &str) -> Option<&str> {
    sealed.split('.').nth(1)
}

/// The additional data a tool's secret is sealed with: whose and which tool it is.
fn bound_to(account: &str, name: &str) -> Vec<u8> {
    format!("wasmind.tools\0{account}\0{name}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_opens_for_its_tool_under_its_key_only() {
        let sealer = Sealer::from_key(&[7; KEY_BYTES]);
        let secret = Secret::from("sk-live-123");
        let sealed = sealer.seal("acme", "weather", &secret);
        assert!(!sealed.contains("sk-live"), "{sealed}");
        assert_eq!(key_id_of(&sealed), Some(sealer.key_id()));
        let opened = sealer.open_secret("acme", "weather", &sealed).unwrap();
        assert_eq!(opened.expose(), "sk-live-123");
        assert_ne!(
            sealed,
            sealer.seal("acme", "weather", &secret),
            "a nonce each"
        );
        assert_eq!(
            sealer.open_secret("other", "weather", &sealed).err(),
            Some(Unsealable::Damaged)
        );
        assert_eq!(
            sealer.open_secret("acme", "news", &sealed).err(),
            Some(Unsealable::Damaged)
        );
        let other = Sealer::from_key(&[8; KEY_BYTES]);
        assert!(matches!(
            other.open_secret("acme", "weather", &sealed),
            Err(Unsealable::OtherKey(..))
        ));
        let mut tampered = sealed;
        tampered.replace_range(tampered.len() - 3.., "AAA");
        assert!(sealer.open_secret("acme", "weather", &tampered).is_err());
    }

    #[test]
    fn the_key_file_is_made_once_private_and_never_in_the_data_dir() {
        let home = tempfile::tempdir().unwrap();
        let data = home.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let path = home.path().join("config/wasmind/tools.key");
        let first = Sealer::open(&path, &data).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = Sealer::open(&path, &data).unwrap();
        assert_eq!(first.key_id(), again.key_id());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.trim().len(), 64, "{text}");
        let inside = Sealer::open(&data.join("keys/tools.key"), &data);
        let err = inside.err().unwrap().to_string();
        assert!(err.contains("inside the data dir"), "{err}");
        assert!(!data.join("keys").exists(), "nothing is made inside it");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = Sealer::open(&path, &data).err().unwrap().to_string();
        assert!(err.contains("chmod 600"), "{err}");
        let own = home.path().join("own.key");
        std::fs::write(&own, "zz").unwrap();
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o600)).unwrap();
        let err = format!("{:#}", Sealer::open(&own, &data).err().unwrap());
        assert!(err.contains("64 hex digits"), "{err}");
    }
}
