//! Event streams (the console's and MCP's `GET /mcp`), counted together per account on
//! this node: one place to open one, within the plan's `event_streams`, so every door
//! bounds and refuses alike.

use super::AppError;
use crate::{
    accounts::{Plan, Plans},
    console::{StreamSlot, Streams},
};

/// A place for one more event stream of `account` within its `plan`'s `event_streams`,
/// held until the slot is dropped; past them, 429 `stream_limit_reached`.
pub fn open(
    streams: &Streams,
    plans: &Plans,
    account: &str,
    plan: Plan,
) -> Result<StreamSlot, AppError> {
    let max = plans.limits(plan).event_streams;
    (streams.open(account, max)).map_err(|full| AppError::stream_limit(plan, full))
}
