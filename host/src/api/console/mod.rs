//! The console's HTTP side: its API under `/api/v1/console/` (signed in with an ID token,
//! `auth`), the account's own routes (`account`: who, keys, usage), its views of agents,
//! memories and tools (`reads`, the public routes' bodies), its writes of tools (`tools`),
//! one agent's live event stream (`events`, SSE) and the page itself (`page`). Sign-in
//! rules are the domain's (`crate::console`).

pub mod account;
mod auth;
pub mod billing;
pub mod events;
pub mod page;
pub mod reads;
pub mod tools;
mod views;

pub use views::KeyQuotaDetails;
