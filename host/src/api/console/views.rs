//! What the console's own routes answer (the routes it shares with the public API answer
//! the public types). Times are ISO 8601 UTC, as on agent records.

use serde::Serialize;
use utoipa::ToSchema;

use crate::app::schema::plan;

/// GET /api/v1/console/me
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ConsoleMe)]
pub struct Me {
    /// The account signed in to.
    pub account: String,
    /// Its plan tier.
    #[schema(schema_with = plan)]
    pub plan: &'static str,
    /// The ID token's `sub`.
    pub subject: String,
    /// When the ID token expires (its `exp`).
    #[schema(format = DateTime)]
    pub expires_at: String,
}

/// One API key of the account; never its secret.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ConsoleKey)]
pub struct KeyEntry {
    /// The key's public id (`key_…`).
    pub key_id: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Null while the key is live.
    #[schema(format = DateTime)]
    pub revoked_at: Option<String>,
}

/// GET /api/v1/console/keys: newest first, revoked keys included.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ConsoleKeyList)]
pub struct KeyList {
    pub data: Vec<KeyEntry>,
}

/// POST /api/v1/console/keys: the secret, shown this once.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ConsoleCreatedKey)]
pub struct CreatedKey {
    pub key_id: String,
    /// The API key itself (`wm_` + 64 hex digits); it is stored only hashed.
    #[schema(pattern = "^wm_[0-9a-f]{64}$")]
    pub key: String,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// DELETE /api/v1/console/keys/{key_id}
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ConsoleRevokedKey)]
pub struct RevokedKey {
    pub key_id: String,
    /// When it was revoked (the first revocation, if it was already).
    #[schema(format = DateTime)]
    pub revoked_at: String,
}

/// The details of 402 `key_quota_exceeded`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyQuotaDetails {
    #[schema(schema_with = plan)]
    pub plan: &'static str,
    /// The account's unrevoked keys.
    pub active_keys: u32,
    /// Its keys revoked within the last hour, each still taking a place.
    pub revoked_keys: u32,
    /// The plan's `keys`.
    pub max_keys: u32,
}
