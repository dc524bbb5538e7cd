//! The domains' refusals as the specification's errors (§4.3, §7, §8) — a spawn's, a Mind
//! job's for the month's tokens, a stream's or an MCP session's past the plan's bound:
//! codes, `details`, messages that say what to do, and the wait where waiting helps.

use serde::Serialize;
use utoipa::ToSchema;

use super::{
    agents::{ConcurrentLimitDetails, MonthlyQuotaDetails, RateLimitDetails, component_not_found},
    error::{AppError, Kind},
    memory::TokenQuotaDetails,
};
use crate::{
    accounts::{Plan, TokensSpent, Window},
    clock::iso8601,
    console::StreamsFull,
    invalid::Invalid,
    runtime::{MonthlyBudget, SpawnRefusal},
};

/// Seconds a client should wait before retrying at the concurrency cap or host capacity,
/// or before opening a stream or an MCP session again at its bound.
const RETRY_BUSY_SECS: u64 = 5;

impl From<SpawnRefusal> for AppError {
    fn from(refusal: SpawnRefusal) -> Self {
        match refusal {
            SpawnRefusal::MonthlyQuota {
                plan,
                budget,
                used_hours,
                limit_hours,
                used_tokens,
                limit_tokens,
                resets_at,
            } => {
                let spent = match budget {
                    MonthlyBudget::AgentHours => format!("{limit_hours} agent-hours"),
                    MonthlyBudget::Tokens => format!("{limit_tokens} Mind tokens"),
                };
                AppError::new(
                    Kind::PaymentRequired,
                    "monthly_quota_exceeded",
                    format!(
                        "the {plan} plan's {spent} for this month are used; the budget resets at {}",
                        iso8601(resets_at)
                    ),
                )
                .with_details(MonthlyQuotaDetails {
                    plan: plan.as_str(),
                    budget: budget.as_str(),
                    used_hours,
                    limit_hours,
                    used_tokens,
                    limit_tokens,
                    resets_at: iso8601(resets_at),
                })
            }
            SpawnRefusal::ConcurrentLimit { plan, current, max } => {
                let mut e = AppError::new(
                    Kind::TooManyRequests,
                    "concurrent_limit_reached",
                    format!(
                        "{current} agents are spawning or running, the {plan} plan's maximum; wait until one finishes or stop one"
                    ),
                )
                .with_details(ConcurrentLimitDetails {
                    plan: plan.as_str(),
                    current_concurrent: current.into(),
                    max_concurrent: max.into(),
                });
                e.retry_after = Some(RETRY_BUSY_SECS);
                e
            }
            SpawnRefusal::AtCapacity { cap } => {
                let mut e = AppError::new(
                    Kind::Unavailable,
                    "temporarily_unavailable",
                    format!("this host is running its maximum of {cap} agents; retry with backoff"),
                );
                e.retry_after = Some(RETRY_BUSY_SECS);
                e
            }
            SpawnRefusal::RateLimited {
                plan,
                window,
                retry_after_secs,
                per_minute,
                per_hour,
            } => {
                let limit = match window {
                    Window::Minute => per_minute,
                    Window::Hour => per_hour,
                };
                let mut e = AppError::new(
                    Kind::TooManyRequests,
                    "rate_limited",
                    format!(
                        "this API key spawned its {limit} agents per {}; retry in {retry_after_secs} s",
                        window.as_str()
                    ),
                )
                .with_details(RateLimitDetails {
                    plan: plan.as_str(),
                    window: window.as_str(),
                    limit_per_minute: per_minute,
                    limit_per_hour: per_hour,
                });
                e.retry_after = Some(retry_after_secs);
                e
            }
            SpawnRefusal::Invalid(Invalid { field, message }) => {
                AppError::invalid_field(field, message)
            }
            SpawnRefusal::ComponentNotFound => component_not_found(),
            SpawnRefusal::Storage(e) => AppError::internal(&e),
        }
    }
}

impl AppError {
    /// 429 `stream_limit_reached`: the account has its plan's `event_streams` open (the
    /// console's and MCP's), in the words of `concurrent_limit_reached`.
    pub(super) fn stream_limit(plan: Plan, full: StreamsFull) -> Self {
        let mut e = AppError::new(
            Kind::TooManyRequests,
            "stream_limit_reached",
            format!(
                "{} event streams are open, the {plan} plan's maximum; close one or wait until one ends",
                full.held
            ),
        )
        .with_details(StreamLimitDetails {
            plan: plan.as_str(),
            current_streams: full.held,
            max_streams: full.max,
        });
        e.retry_after = Some(RETRY_BUSY_SECS);
        e
    }

    /// 429 `session_limit_reached`: the account has its plan's `mcp_sessions` open at this
    /// node, in the words of `stream_limit_reached`.
    pub fn session_limit(plan: Plan, open: u32, max: u32) -> Self {
        let mut e = AppError::new(
            Kind::TooManyRequests,
            "session_limit_reached",
            format!(
                "{open} MCP sessions are open, the {plan} plan's maximum; end one (DELETE /mcp \
                 with its session id) or wait until one idles out"
            ),
        )
        .with_details(SessionLimitDetails {
            plan: plan.as_str(),
            current_sessions: open,
            max_sessions: max,
        });
        e.retry_after = Some(RETRY_BUSY_SECS);
        e
    }
}

/// `details` of 429 `stream_limit_reached`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamLimitDetails {
    pub plan: &'static str,
    /// Streams the account has open.
    pub current_streams: u32,
    /// The plan's `event_streams`.
    pub max_streams: u32,
}

/// `details` of 429 `session_limit_reached` (MCP, not in the OpenAPI document).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionLimitDetails {
    plan: &'static str,
    /// Sessions the account has open at this node.
    current_sessions: u32,
    /// The plan's `mcp_sessions`.
    max_sessions: u32,
}

/// A Mind job refused for the month's spent tokens: the spawn's code for the same budget,
/// 402 `monthly_quota_exceeded` with `details.budget` = `tokens`.
impl From<TokensSpent> for AppError {
    fn from(spent: TokensSpent) -> Self {
        AppError::new(
            Kind::PaymentRequired,
            "monthly_quota_exceeded",
            spent.to_string(),
        )
        .with_details(TokenQuotaDetails {
            plan: spent.plan.as_str(),
            budget: MonthlyBudget::Tokens.as_str(),
            used_tokens: spent.used,
            limit_tokens: spent.limit,
            resets_at: iso8601(spent.resets_at),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_monthly_budget_is_402_with_when_it_resets() {
        let e = AppError::from(SpawnRefusal::MonthlyQuota {
            plan: Plan::Free,
            budget: MonthlyBudget::AgentHours,
            used_hours: 10.5,
            limit_hours: 10.0,
            used_tokens: 7,
            limit_tokens: 2_000_000,
            resets_at: 1_798_761_600_000,
        });
        assert_eq!(
            (e.kind, e.code.as_str(), e.retry_after),
            (Kind::PaymentRequired, "monthly_quota_exceeded", None)
        );
        assert_eq!(
            e.message,
            "the free plan's 10 agent-hours for this month are used; the budget resets at 2027-01-01T00:00:00.000Z"
        );
        assert_eq!(
            e.details,
            Some(json!({
                "plan": "free",
                "budget": "agent_hours",
                "usedHours": 10.5,
                "limitHours": 10.0,
                "usedTokens": 7,
                "limitTokens": 2_000_000,
                "resetsAt": "2027-01-01T00:00:00.000Z",
            }))
        );
    }

    #[test]
    fn spent_monthly_tokens_are_the_same_402_naming_the_token_budget() {
        let e = AppError::from(SpawnRefusal::MonthlyQuota {
            plan: Plan::Liftoff,
            budget: MonthlyBudget::Tokens,
            used_hours: 0.25,
            limit_hours: 100.0,
            used_tokens: 50_000_120,
            limit_tokens: 50_000_000,
            resets_at: 1_798_761_600_000,
        });
        assert_eq!(
            (e.kind, e.code.as_str(), e.retry_after),
            (Kind::PaymentRequired, "monthly_quota_exceeded", None)
        );
        assert_eq!(
            e.message,
            "the liftoff plan's 50000000 Mind tokens for this month are used; the budget resets at 2027-01-01T00:00:00.000Z"
        );
        let details = e.details.unwrap();
        assert_eq!(
            (
                &details["budget"],
                &details["usedTokens"],
                &details["limitTokens"]
            ),
            (&json!("tokens"), &json!(50_000_120), &json!(50_000_000))
        );
    }

    #[test]
    fn a_full_host_is_503_and_a_full_account_429_both_retried_after_5_s() {
        let e = AppError::from(SpawnRefusal::AtCapacity { cap: 7 });
        assert_eq!(
            (e.kind, e.code.as_str(), e.retry_after, e.details),
            (Kind::Unavailable, "temporarily_unavailable", Some(5), None)
        );
        assert_eq!(
            e.message,
            "this host is running its maximum of 7 agents; retry with backoff"
        );
        let e = AppError::from(SpawnRefusal::ConcurrentLimit {
            plan: Plan::Liftoff,
            current: 5,
            max: 5,
        });
        assert_eq!(
            (e.kind, e.code.as_str(), e.retry_after),
            (Kind::TooManyRequests, "concurrent_limit_reached", Some(5))
        );
        assert_eq!(
            e.details,
            Some(json!({ "plan": "liftoff", "currentConcurrent": 5, "maxConcurrent": 5 }))
        );
    }

    #[test]
    fn the_rate_names_the_window_that_refused() {
        let e = AppError::from(SpawnRefusal::RateLimited {
            plan: Plan::Lightyear,
            window: Window::Hour,
            retry_after_secs: 42,
            per_minute: 30,
            per_hour: 500,
        });
        assert_eq!(
            (e.kind, e.code.as_str(), e.retry_after),
            (Kind::TooManyRequests, "rate_limited", Some(42))
        );
        assert_eq!(
            e.message,
            "this API key spawned its 500 agents per hour; retry in 42 s"
        );
        assert_eq!(
            e.details,
            Some(
                json!({ "plan": "lightyear", "window": "hour", "limitPerMinute": 30, "limitPerHour": 500 })
            )
        );
    }
}
