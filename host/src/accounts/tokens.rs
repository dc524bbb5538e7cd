//! The month's Mind tokens as the host's own Mind jobs for an account spend them:
//! consolidation's summaries, the titles of unnamed agents, extraction after a run. Each
//! job checks the plan's `tokens_per_month` against the usage ledger before it calls the
//! Mind, and is refused once they are spent — as a spawn is, so that an account whose
//! spawns are refused cannot go on spending through the host's jobs.
//!
//! Checked before each call, not reserved: jobs running at once may each make one call
//! past the budget (each bounded by its request), as running agents may (each run bounded
//! by `tokens_per_run`); the next call is refused.

use std::sync::Arc;

use super::{AccountError, Accounts, Ledger, MonthUsage, Plan, PlanLimits, Plans};
use crate::{
    clock::{iso8601, next_month_start, now_ms},
    storage::StoreError,
};

/// The month's Mind tokens of the plan are spent: what refuses a Mind job.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the {plan} plan's {limit} Mind tokens for this month are used ({used} spent); the budget \
     resets at {}",
    iso8601(*.resets_at)
)]
pub struct TokensSpent {
    pub plan: Plan,
    /// Tokens the month's usage counts.
    pub used: u64,
    /// The plan's `tokens_per_month`.
    pub limit: u64,
    /// When the budget resets (ms since the epoch): the next month's start, UTC.
    pub resets_at: u64,
}

/// Why a Mind job may not call the Mind.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error(transparent)]
    Spent(#[from] TokensSpent),
    /// The usage ledger could not be read.
    #[error(transparent)]
    Storage(#[from] StoreError),
}

/// The plans' monthly Mind-token budgets over the usage ledger; cheap to clone.
#[derive(Clone)]
pub struct TokenBudgets {
    usage: Ledger,
    accounts: Accounts,
    plans: Arc<Plans>,
}

impl TokenBudgets {
    pub fn new(usage: Ledger, accounts: Accounts, plans: Plans) -> Self {
        Self {
            usage,
            accounts,
            plans: Arc::new(plans),
        }
    }

    /// The month's tokens of `account` on `plan` (a door that authenticated it knows it).
    pub fn of(&self, account: &str, plan: Plan) -> MonthTokens {
        MonthTokens {
            usage: self.usage.clone(),
            account: account.to_owned(),
            plan,
            limits: self.plans.limits(plan).clone(),
        }
    }

    /// The month's tokens of `account` on the plan it has now (a job running after the
    /// request that started it: an account moved to a larger plan meanwhile has its
    /// budget). An account nobody made has the default plan.
    pub async fn current(&self, account: &str) -> Result<MonthTokens, AccountError> {
        let plan = self.accounts.plan(account).await?;
        Ok(self.of(account, plan.unwrap_or_default()))
    }
}

/// One account's Mind tokens this month, for the host's jobs on its behalf.
#[derive(Clone)]
pub struct MonthTokens {
    usage: Ledger,
    account: String,
    plan: Plan,
    limits: PlanLimits,
}

impl MonthTokens {
    /// Admits one Mind call of a job: refused once the month's tokens, as the ledger
    /// counts them, reach the plan's `tokens_per_month`.
    pub async fn check(&self) -> Result<(), TokenError> {
        let now = now_ms();
        let used = self.usage.month(&self.account, now).await?.tokens();
        let limit = self.limits.tokens_per_month;
        if used < limit {
            return Ok(());
        }
        Err(TokenError::Spent(TokensSpent {
            plan: self.plan,
            used,
            limit,
            resets_at: next_month_start(now),
        }))
    }

    /// Adds what one call spent to the month. A failure is logged, not returned: the call
    /// was made, and the job's result stands.
    pub async fn charge(&self, input_tokens: u64, output_tokens: u64) {
        let delta = MonthUsage {
            input_tokens,
            output_tokens,
            ..MonthUsage::default()
        };
        if delta == MonthUsage::default() {
            return;
        }
        if let Err(e) = self.usage.add(&self.account, now_ms(), delta).await {
            tracing::error!(account = %self.account, error = %e, "recording a Mind job's tokens failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::{KeyStore, UsageStore};

    #[tokio::test]
    async fn jobs_are_refused_once_the_months_tokens_are_spent() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
        let keys = KeyStore::new(db.clone()).unwrap();
        let mut plans = Plans::default();
        plans.free.tokens_per_month = 100;
        plans.liftoff.tokens_per_month = 1_000;
        keys.create("acme", None, &plans).unwrap();
        let budgets = TokenBudgets::new(
            Arc::new(UsageStore::new(db).unwrap()),
            Arc::new(keys.clone()),
            plans,
        );
        let tokens = budgets.current("acme").await.unwrap();
        tokens.check().await.unwrap();
        tokens.charge(60, 39).await;
        tokens.check().await.unwrap();
        tokens.charge(0, 1).await;
        let spent = match tokens.check().await {
            Err(TokenError::Spent(spent)) => spent,
            other => panic!("not refused: {other:?}"),
        };
        assert_eq!(
            (spent.plan, spent.used, spent.limit),
            (Plan::Free, 100, 100)
        );
        assert_eq!(spent.resets_at, next_month_start(now_ms()));
        assert!(spent.to_string().contains("100 Mind tokens"), "{spent}");

        // Another account's month is its own; a larger plan is read at the next job.
        budgets.of("zeta", Plan::Free).check().await.unwrap();
        keys.set_plan("acme", Plan::Liftoff, crate::accounts::PlanSource::Operator)
            .unwrap();
        budgets
            .current("acme")
            .await
            .unwrap()
            .check()
            .await
            .unwrap();
    }
}
