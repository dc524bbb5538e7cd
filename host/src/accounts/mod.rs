//! Accounts, their plan tier, and the API keys that act for them.
//!
//! A key belongs to exactly one account; every request is scoped to the key's account, so
//! nothing in the service ever takes an account id from a caller. Keys are stored hashed:
//! a stolen database reveals no usable key.

mod error;
mod keys;
mod ledger;
mod plan;
mod postgres;
mod rate;
mod store;
mod tokens;
mod usage;

pub use error::AccountError;
pub use keys::{AccountInfo, KeyInfo, KeyStore, Principal};
pub use ledger::{Ledger, PgUsage, UsageLedger, add_usage};
pub use plan::{Plan, PlanLimits, PlanSource, Plans};
pub use postgres::PgAccounts;
pub use rate::{RateLimiter, RateRefusal, Window};
pub use store::{AccountStore, Accounts, CreateKeyError, Places, REVOKED_KEY_HOLD_MS};
pub use tokens::{MonthTokens, TokenBudgets, TokenError, TokensSpent};
pub use usage::{MonthUsage, UsageStore};
