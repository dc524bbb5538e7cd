//! The limits a spawn is admitted within, and the figures the console shows of them: the
//! account's monthly agent hours and Mind tokens, its concurrent agents, the key's rolling spawn-rate
//! windows — and this host's admission cap, which is always the node's own.
//!
//! Two keepers, one per backend: [`LocalLimits`] (`embedded.rs`) counts in this process's
//! memory, exact when one process holds every agent; [`SharedLimits`] (`postgres.rs`)
//! counts from PostgreSQL in the spawn's own transaction under a lock of the account, so
//! spawns at several nodes at once never pass a limit together.

mod embedded;
mod postgres;
#[cfg(test)]
mod tests;

use async_trait::async_trait;

pub use self::embedded::LocalLimits;
pub use self::postgres::SharedLimits;
use super::{
    admission::{Refusal, Slot},
    records::{AgentRecord, Fence},
    spawn::{MonthlyBudget, SpawnRefusal, SpawnStorageError},
};
use crate::accounts::{Plan, PlanLimits, RateRefusal, Window};

const MS_PER_HOUR: f64 = 3_600_000.0;

/// What a spawn is checked against.
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    pub plan: Plan,
    pub limits: &'a PlanLimits,
    /// Epoch milliseconds of the spawn.
    pub now: u64,
}

impl Asked<'_> {
    /// The monthly agent-hour budget, in ms.
    fn budget_ms(&self) -> u64 {
        (self.limits.agent_hours_per_month * MS_PER_HOUR) as u64
    }

    /// The refusal of a month whose run time (`used_ms`) or Mind tokens (`used_tokens`)
    /// reached the plan's budget, if one did; the agent-hours are named first.
    fn month(&self, used_ms: u64, used_tokens: u64) -> Result<(), SpawnRefusal> {
        let budget = if used_ms >= self.budget_ms() {
            MonthlyBudget::AgentHours
        } else if used_tokens >= self.limits.tokens_per_month {
            MonthlyBudget::Tokens
        } else {
            return Ok(());
        };
        Err(SpawnRefusal::MonthlyQuota {
            plan: self.plan,
            budget,
            used_hours: used_ms as f64 / MS_PER_HOUR,
            limit_hours: self.limits.agent_hours_per_month,
            used_tokens,
            limit_tokens: self.limits.tokens_per_month,
            resets_at: crate::clock::next_month_start(self.now),
        })
    }

    /// The refusal of a place not reserved.
    fn place(&self, refusal: Refusal) -> SpawnRefusal {
        match refusal {
            Refusal::ConcurrentLimit { current, max } => SpawnRefusal::ConcurrentLimit {
                plan: self.plan,
                current,
                max,
            },
            Refusal::AtCapacity { cap } => SpawnRefusal::AtCapacity { cap },
        }
    }

    /// The refusal of a full rate window.
    fn rate(&self, refused: RateRefusal) -> SpawnRefusal {
        SpawnRefusal::RateLimited {
            plan: self.plan,
            window: refused.window,
            retry_after_secs: refused.retry_after_secs,
            per_minute: self.limits.spawns_per_minute,
            per_hour: self.limits.spawns_per_hour,
        }
    }
}

/// An admitted spawn: its stored record, and where it runs.
pub struct Admitted {
    pub record: AgentRecord,
    pub place: Place,
}

/// Where an admitted spawn runs.
pub enum Place {
    /// On this node: its place here, and the fence of this node's claim on it.
    Here { slot: Slot, fence: Fence },
    /// On another node, which claimed it from this one (at its cap) and launched it.
    Elsewhere,
}

/// Keeps the limits of spawns.
#[async_trait]
pub trait SpawnLimits: Send + Sync {
    /// Checks, in order, the account's monthly agent hours and Mind tokens, a place among its concurrent
    /// agents and under this host's cap, and the key's rate windows; stores `record` when
    /// all admit, as one step against other spawns of the account, claimed by this node —
    /// or, with [`SharedLimits`] at this host's cap, by another node with room.
    async fn admit(&self, record: AgentRecord, asked: Asked<'_>) -> Result<Admitted, SpawnRefusal>;

    /// The account's agent run time in the month of `now`, in ms: its finished runs plus
    /// its running agents so far.
    async fn month_run_ms(&self, account: &str, now: u64) -> Result<u64, SpawnStorageError>;

    /// The account's agents spawning or running.
    async fn concurrent(&self, account: &str) -> Result<u32, SpawnStorageError>;

    /// Spawns of `key_id` counted in its rolling minute and hour.
    async fn spawns_in_windows(
        &self,
        account: &str,
        key_id: &str,
    ) -> Result<(u32, u32), SpawnStorageError>;
}

/// The whole seconds until a window whose oldest counted spawn is `oldest_ms` admits one
/// again (at least 1), as [`crate::accounts::RateLimiter`] counts them.
fn retry_after_secs(window: Window, oldest_ms: u64, now_ms: u64) -> u64 {
    let span_ms = match window {
        Window::Minute => 60_000,
        Window::Hour => 3_600_000,
    };
    let left_ms = (oldest_ms + span_ms).saturating_sub(now_ms);
    left_ms.div_ceil(1_000).max(1)
}
