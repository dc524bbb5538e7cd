//! The console's own routes under `/api/v1/console/` (signed in with an ID token, `auth`):
//! the account's own routes that have no REST twin (`account`: who, keys, usage), one
//! agent's live event stream (`events`, SSE) and the page itself (`page`). Everything else
//! the console shows or changes it reaches through the public REST routes, which take its
//! ID token as well as an API key (`super::auth::AccountAuth`). Sign-in rules are the
//! domain's (`crate::console`).

pub mod account;
mod auth;
pub mod events;
pub mod page;
mod views;

pub(super) use auth::sign_in;
pub use views::KeyQuotaDetails;
