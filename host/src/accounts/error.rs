//! Errors of the accounts domain. A key or account the operator names that does not exist
//! says what to give instead (the CLI prints it as it is); everything else is a store's
//! failure ([`StoreError`]), internal to callers (the API answers 500 and logs it).

use crate::storage::StoreError;

/// Everything an accounts, keys or usage operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// Neither a known secret nor a known key id.
    #[error("no key {0:?} (give the key or its key_… id)")]
    NoSuchKey(String),
    /// A plan change of an account nobody made.
    #[error("no account {0:?} (`keys create` makes accounts)")]
    NoSuchAccount(String),
    #[error(transparent)]
    Storage(#[from] StoreError),
}

crate::storage::storage_errors_into!(AccountError);

/// The result of an accounts operation.
pub type Result<T, E = AccountError> = std::result::Result<T, E>;
