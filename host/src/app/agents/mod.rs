//! The agent operations both doors call (§4.3): spawn within the plan's limits and a page
//! of the account's agents, with their typed requests and responses, and the refusals of
//! agent lookups; the account's own agent components' types (`components`).

pub mod components;
mod request;
mod response;
pub mod upload;

pub use self::components::{COMPONENTS_CURSOR, component_not_found};
pub use self::request::{LIST_DEFAULT, LIST_MAX, ListQuery, LogsQuery, SpawnBody};
pub use self::response::*;
use super::{AppError, AppResult, AppState, Kind, cursor::Pager};
use crate::{
    accounts::Principal,
    runtime::{AgentError, AgentRecord, RecordError},
};

/// Cursor kinds of the agent list and of log pages.
pub const AGENTS_CURSOR: Pager = Pager::new("a1");
pub const LOGS_CURSOR: Pager = Pager::new("l1");

/// 404 `agent_not_found`.
pub fn agent_not_found() -> AppError {
    AppError::new(Kind::NotFound, "agent_not_found", "no agent with that id")
}

/// A failure to read agent records is internal.
impl From<RecordError> for AppError {
    fn from(e: RecordError) -> Self {
        AppError::internal(&e)
    }
}

/// An agent of no agent of the caller's is 404 `agent_not_found`.
impl From<AgentError> for AppError {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::NotFound => agent_not_found(),
            AgentError::Storage(e) => e.into(),
        }
    }
}

/// Spawns the agent `body` asks for, acting for `who` within its plan's limits; the
/// runtime checks and admits it.
pub async fn spawn(state: &AppState, who: &Principal, body: SpawnBody) -> AppResult<SpawnedAgent> {
    let request = body.request(who, state.limits(who.plan));
    let record = state.runtime.spawn(request).await?;
    Ok(SpawnedAgent::from(&record))
}

/// A page of `account`'s agents, newest first, after `cursor` (a previous page's
/// `next_cursor`); `limit` is already within its bounds.
pub async fn list(
    state: &AppState,
    account: &str,
    limit: usize,
    cursor: Option<&str>,
) -> AppResult<AgentList> {
    let before = AGENTS_CURSOR.position(cursor)?;
    let (page, next) = state.records.list(account, before, limit).await?;
    Ok(AgentList::page(&page, next))
}

impl AgentList {
    /// A page of agents, and the cursor to the next if there is one.
    pub fn page(agents: &[AgentRecord], next: Option<u64>) -> Self {
        AgentList {
            data: agents.iter().map(AgentView::from).collect(),
            next_cursor: AGENTS_CURSOR.next(next),
        }
    }
}
