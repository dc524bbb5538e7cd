//! The application layer: what every door shares. REST (`crate::api`), MCP (`crate::mcp`)
//! and the console are siblings on it, and none imports another: each reads its own
//! transport, then calls the same operations with the same typed requests, and renders the
//! same typed responses and refusals its own way.
//!
//! Here: the state every operation reaches ([`AppState`]), authentication of a key to a
//! [`Principal`](crate::accounts::Principal) ([`authenticate`]), the bound on an account's
//! requests in flight ([`InFlight`]), the operations' request and response types (their
//! schemas are the OpenAPI document's), and their refusal ([`AppError`]: the
//! specification's code, message, details, kind and wait). Nothing here knows an HTTP status;
//! the domain below knows neither doors nor plans' limits.

pub mod agents;
mod auth;
pub mod cursor;
mod error;
mod in_flight;
pub mod memory;
pub mod params;
mod refusal;
pub mod schema;
pub mod streams;
pub mod tools;
pub mod usage;
pub mod views;

use std::sync::Arc;

pub use auth::{Caller, authenticate, bearer, invalid_id_token, is_id_token, sign_in};
pub use error::{AppError, AppResult, CURRENT_REQUEST, Kind};
pub use in_flight::{Admitted, InFlight, RequestLimitDetails};
pub use refusal::StreamLimitDetails;

use crate::{
    accounts::{Accounts, Ledger, Plan, PlanLimits, TokenBudgets},
    billing::Billing,
    config::Config,
    console::Console,
    memory::MemoryService,
    mind::Mind,
    runtime::{AgentStore, Runtime},
    tools::Tools,
};

/// What every operation can reach.
#[derive(Clone)]
pub struct AppState {
    pub keys: Accounts,
    pub memory: MemoryService,
    pub config: Arc<Config>,
    pub runtime: Runtime,
    pub records: AgentStore,
    pub usage: Ledger,
    /// The plans' monthly Mind-token budgets, which the host's own Mind jobs check.
    pub budgets: TokenBudgets,
    /// The Mind, for the host's own jobs (consolidation summaries).
    pub mind: Arc<dyn Mind>,
    /// Console sign-in (ID tokens).
    pub console: Arc<Console>,
    /// Tenants' registered tools.
    pub tools: Arc<Tools>,
    /// Each account's requests in flight on this node, under its plan's bound.
    pub in_flight: InFlight,
    /// Checkout, portal and the payment provider's webhooks.
    pub billing: Arc<Billing>,
}

impl AppState {
    /// What `plan` allows: the one place every operation learns an account's limits from
    /// its plan.
    pub fn limits(&self, plan: Plan) -> &PlanLimits {
        self.config.plans.limits(plan)
    }
}
