//! GET /api/v1/egress (the console's view is in `console::reads`): the hosts the account's
//! agents may send HTTP requests to, each with the list it is on. The operator writes the
//! lists (`[egress]` in the config, `wasmind accounts allow-host`); the tenant reads them,
//! so an agent author learns why a request was refused without asking.

use axum::{Json, extract::State};
use serde::Serialize;
use utoipa::ToSchema;

use super::auth::AccountAuth;
use crate::{
    app::{AppResult, AppState},
    egress::policy,
};

/// One host the account's agents may reach.
#[derive(Serialize, ToSchema)]
pub struct EgressEntry {
    /// A host name, an IP address, or `*.` and a domain (any of its subdomains).
    #[schema(example = "api.example.com")]
    pub host: String,
    /// The ports allowed; empty: the scheme's own (443 for https, 80 for http).
    pub ports: Vec<u16>,
    /// The schemes allowed (`https`, `http`).
    pub schemes: Vec<String>,
    /// Which list it is on: `everyone` (every account's), `plan` (the account's plan's) or
    /// `account` (set for this account by the operator).
    #[schema(example = "account")]
    pub from: &'static str,
}

/// The account's effective allowlist: a request whose scheme, host and port no entry
/// allows is refused (deny by default), and so is one to a non-public address unless the
/// operator allowed its range.
#[derive(Serialize, ToSchema)]
pub struct EgressList {
    pub plan: &'static str,
    pub entries: Vec<EgressEntry>,
}

/// The hosts the account's agents may send HTTP requests to.
#[utoipa::path(operation_id = "egress", get, path = "/api/v1/egress", tag = "agents",
    security(("bearerAuth" = []), ("idToken" = [])),
    responses(
        (status = 200, description = "the account's effective allowlist", body = EgressList),
    ))]
pub async fn egress(
    State(state): State<AppState>,
    AccountAuth(who): AccountAuth,
) -> AppResult<Json<EgressList>> {
    let plan = who.plan;
    let own = state.keys.egress(&who.account).await?;
    let config = &state.config.egress;
    let entries = policy::effective(&config.allow, &config.plans, plan, &own)
        .map(|(source, a)| EgressEntry {
            host: a.host.clone(),
            ports: a.ports.clone(),
            schemes: a.schemes.clone(),
            from: source.as_str(),
        })
        .collect();
    Ok(Json(EgressList {
        plan: plan.as_str(),
        entries,
    }))
}
