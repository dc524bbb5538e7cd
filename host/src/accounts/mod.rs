//! Accounts, their plan tier, and the API keys that act for them.
//!
//! A key belongs to exactly one account; every request is scoped to the key's account, so
//! nothing in the service ever takes an account id from a caller. Keys are stored hashed:
//! a stolen database reveals no usable key.

mod error;
mod ledger;
mod plan;
mod rate;
mod store;
mod tokens;

pub use error::AccountError;
pub use ledger::{Ledger, MonthUsage, PgUsage, UsageLedger, UsageStore, add_usage};
pub use plan::{Plan, PlanLimits, PlanSource, Plans};
pub use rate::{RateLimiter, RateRefusal, Window};
pub use store::{
    AccountInfo, AccountStore, Accounts, CreateKeyError, KeyInfo, KeyStore, PgAccounts, Places,
    Principal, REVOKED_KEY_HOLD_MS,
};
pub use tokens::{MonthTokens, TokenBudgets, TokenError, TokensSpent};
