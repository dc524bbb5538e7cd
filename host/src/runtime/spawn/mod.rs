//! Spawn and stop, the two operations callers ask of the runtime, each one call.
//!
//! A spawn is checked in a fixed order, each check the refusal a client can act on first:
//! its own fields (`checks`: the task, name, region and memory mode), the component it names (the account's own, loaded ready to run), then the account's
//! monthly agent-hour budget (finished runs plus the run time of its running agents) and
//! its monthly Mind-token budget (what finished runs and the host's jobs spent), then
//! a place among the account's concurrent agents and under the host's admission cap, then
//! the key's rolling spawn-rate windows, which count admitted spawns only (`limits`, which
//! stores the admitted spawn as `spawning` in the same step). It is then launched — on
//! the postgres backend at a node at its cap, by the node with room that claims it
//! (`cluster::offers`) — and, when no name was given, named from its task until the Mind
//! titles it.

mod checks;

pub use self::checks::{
    MAX_NAME_CHARS, MAX_TASK_CHARS, MAX_TOOL_NAME_CHARS, MAX_TOOLS, REGION, SpawnFields,
};
use super::{
    engine::LoadError,
    lifecycle::Runtime,
    limits::{Admitted, Asked, Place},
    records::{AgentRecord, Allowance, RecordError, Status, Usage},
};
use crate::{
    accounts::{AccountError, Plan, PlanLimits, Window},
    clock::now_ms,
    id::new_id,
    invalid::Invalid,
    metrics::names,
    mind::jobs::MAX_TITLE_CHARS,
    storage::StoreError,
    text::shorten,
};

/// What a caller asks to spawn, on behalf of whom.
#[derive(Debug, Clone)]
pub struct SpawnRequest {
    pub account: String,
    /// The API key spawning: rate windows are per key.
    pub key_id: String,
    pub plan: Plan,
    /// The plan's limits.
    pub limits: PlanLimits,
    /// The task, name, region and memory mode as given: a name of `None` names the agent
    /// from its task's first words and has the Mind title it in the background.
    pub fields: SpawnFields,
    /// The account's uploaded component to run: its id, its name (the newest version) or
    /// `name@version`; `None` runs the default agent.
    pub agent: Option<String>,
}

/// Which of the plan's monthly budgets is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MonthlyBudget {
    /// `agent_hours_per_month`.
    AgentHours,
    /// `tokens_per_month`.
    Tokens,
}

impl MonthlyBudget {
    /// As `details.budget` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            MonthlyBudget::AgentHours => "agent_hours",
            MonthlyBudget::Tokens => "tokens",
        }
    }
}

/// Why a spawn was not admitted, with what the caller needs to say so.
#[derive(Debug)]
pub enum SpawnRefusal {
    /// A field of the spawn is not valid.
    Invalid(Invalid),
    /// The account's agent hours or Mind tokens of this month are used up (`budget` says
    /// which); both figures are given either way.
    MonthlyQuota {
        plan: Plan,
        budget: MonthlyBudget,
        used_hours: f64,
        limit_hours: f64,
        used_tokens: u64,
        limit_tokens: u64,
        /// When the budget resets (ms since the epoch): the next month's start, UTC.
        resets_at: u64,
    },
    /// The account has its plan's maximum of agents spawning or running.
    ConcurrentLimit { plan: Plan, current: u32, max: u32 },
    /// The host runs its maximum of agents.
    AtCapacity { cap: u32 },
    /// The key spawned its plan's maximum in one rolling window.
    RateLimited {
        plan: Plan,
        window: Window,
        retry_after_secs: u64,
        per_minute: u32,
        per_hour: u32,
    },
    /// The account has no component `agent` names.
    ComponentNotFound,
    /// Reading usage or the component, or storing the record, failed: the host's fault.
    Storage(SpawnStorageError),
}

/// What failed when a spawn's admission read or wrote its state: each domain's own typed
/// error, kept whole so the log says which store failed and why.
#[derive(Debug, thiserror::Error)]
pub enum SpawnStorageError {
    /// A store (PostgreSQL's admission transaction, the component store) failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The agent records' store failed.
    #[error(transparent)]
    Records(#[from] RecordError),
    /// Reading the account's month of usage failed.
    #[error(transparent)]
    Usage(#[from] AccountError),
    /// The component's compiled artifact could not be read or written on this node.
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// Each storage failure of an admission as the spawn's refusal, written once per kind.
macro_rules! refused_by_storage {
    ($($t:ty),*) => {$(
        impl From<$t> for SpawnRefusal {
            fn from(e: $t) -> Self {
                SpawnRefusal::Storage(e.into())
            }
        }
    )*};
}
refused_by_storage!(
    StoreError,
    RecordError,
    AccountError,
    LoadError,
    sqlx::Error
);

impl From<sqlx::Error> for SpawnStorageError {
    fn from(e: sqlx::Error) -> Self {
        SpawnStorageError::Store(e.into())
    }
}

/// Why an agent could not be read or stopped.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The account has no agent with that id.
    #[error("no agent with that id")]
    NotFound,
    /// Reading or updating the record failed.
    #[error(transparent)]
    Storage(#[from] RecordError),
}

/// The name an unnamed agent has until the Mind titles it: its task's first words, within
/// the title's bound.
fn provisional_name(task: &str) -> String {
    shorten(task, MAX_TITLE_CHARS)
}

impl SpawnRefusal {
    /// The refusal's kind, as `/metrics` labels it; `None` for a storage failure, which is
    /// an error rather than a refusal, and for a bad field or an unknown component, the
    /// request's errors.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            SpawnRefusal::MonthlyQuota { .. } => Some("monthly_quota"),
            SpawnRefusal::ConcurrentLimit { .. } => Some("concurrent_limit"),
            SpawnRefusal::AtCapacity { .. } => Some("host_capacity"),
            SpawnRefusal::RateLimited { .. } => Some("rate_limited"),
            SpawnRefusal::Invalid(_)
            | SpawnRefusal::ComponentNotFound
            | SpawnRefusal::Storage(_) => None,
        }
    }
}

/// Counts a spawn admitted, or refused by its reason.
fn count(outcome: &Result<AgentRecord, SpawnRefusal>) {
    match outcome {
        Ok(_) => metrics::counter!(names::AGENTS_SPAWNED).increment(1),
        Err(refusal) => {
            if let Some(reason) = refusal.reason() {
                metrics::counter!(names::SPAWNS_REFUSED, "reason" => reason).increment(1);
            }
        }
    }
}

impl Runtime {
    /// The account's agent run time in the month of `now`, in ms: its finished runs plus
    /// its running agents so far — what the monthly agent-hour budget is checked against.
    pub async fn month_run_ms(&self, account: &str, now: u64) -> Result<u64, SpawnStorageError> {
        self.inner.limits.month_run_ms(account, now).await
    }

    /// Agents of `account` spawning or running (on every node).
    pub async fn concurrent(&self, account: &str) -> Result<u32, SpawnStorageError> {
        self.inner.limits.concurrent(account).await
    }

    /// Spawns the account's key `key_id` made in its rolling minute and hour.
    pub async fn spawns_in_windows(
        &self,
        account: &str,
        key_id: &str,
    ) -> Result<(u32, u32), SpawnStorageError> {
        self.inner.limits.spawns_in_windows(account, key_id).await
    }

    /// Admits, stores and launches one agent, or says why not (see the module's order).
    pub async fn spawn(&self, req: SpawnRequest) -> Result<AgentRecord, SpawnRefusal> {
        let outcome = self.admit(req).await;
        count(&outcome);
        outcome
    }

    async fn admit(&self, req: SpawnRequest) -> Result<AgentRecord, SpawnRefusal> {
        let SpawnRequest {
            account,
            key_id,
            plan,
            limits,
            fields,
            agent,
        } = req;
        let checks::Checked {
            task,
            name,
            memory_mode,
            tools,
        } = checks::check(fields).map_err(SpawnRefusal::Invalid)?;
        let services = &self.inner.services;
        let (agent, pre) = self.inner.agent_for(&account, agent).await?;
        let now = now_ms();
        let untitled = name.is_none();
        let record = AgentRecord {
            agent_id: new_id("ag_"),
            account,
            key_id,
            name: name.unwrap_or_else(|| provisional_name(&task)),
            status: Status::Spawning,
            task,
            created_at: now,
            updated_at: now,
            final_result: None,
            progress: Vec::new(),
            error: None,
            model: services.mind.model().to_string(),
            started_at: None,
            ended_at: None,
            usage: Usage::default(),
            memory_mode,
            agent,
            seq: 0,
            steps: 0,
            tools,
        };
        let asked = Asked {
            plan,
            limits: &limits,
            now,
        };
        let Admitted { record, place } = self.inner.limits.admit(record, asked).await?;
        if let Place::Here { slot, fence } = place {
            let allowance = Allowance::of(&limits);
            self.inner
                .launch(slot, &record, fence, allowance, pre, None);
        }
        if untitled {
            self.retitle(&record, plan);
        }
        Ok(record)
    }

    /// The account's agent `agent_id`: another account's agent is not found.
    pub async fn agent(&self, account: &str, agent_id: &str) -> Result<AgentRecord, AgentError> {
        let records = &self.inner.services.records;
        (records.get(account, agent_id).await?).ok_or(AgentError::NotFound)
    }

    /// Stops the account's agent `agent_id`: its record turns `stopped` at once and the
    /// agent is signalled (on whichever node runs it), then dropped after its grace.
    /// Idempotent: a terminal agent is left as it is. Returns the agent's status afterwards.
    pub async fn stop(&self, account: &str, agent_id: &str) -> Result<Status, AgentError> {
        let record = self.agent(account, agent_id).await?;
        let records = &self.inner.services.records;
        if record.status.is_terminal() {
            return Ok(record.status);
        }
        let updated = records
            .update(account, agent_id, None, |r| {
                let alive = !r.status.is_terminal();
                if alive {
                    r.status = Status::Stopped;
                    r.ended_at = Some(now_ms());
                }
                alive
            })
            .await?
            .ok_or(AgentError::NotFound)?;
        self.signal_stop(&updated.agent_id);
        if let Some(cluster) = &self.inner.cluster
            && let Err(e) = cluster.announce_stop(agent_id).await
        {
            // Recorded all the same: the owner's heartbeat delivers it.
            tracing::warn!(agent = %agent_id, error = %e, "announcing a stop failed");
        }
        Ok(updated.status)
    }

    /// Has the Mind title the agent of `record` in the background (its provisional name
    /// stands until then, and if the Mind fails); the tokens count as the agent's, and as
    /// the month's of its account on `plan`. Once the month's tokens are spent the agent
    /// keeps its provisional name: the Mind is not asked.
    pub(super) fn retitle(&self, record: &AgentRecord, plan: Plan) {
        let services = self.inner.services.clone();
        let (id, account, task) = (
            record.agent_id.clone(),
            record.account.clone(),
            record.task.clone(),
        );
        tokio::spawn(async move {
            let tokens = services.budgets.of(&account, plan);
            if let Err(e) = tokens.check().await {
                tracing::info!(agent = %id, reason = %e, "not titling the agent");
                return;
            }
            let title = match services.mind.title(&task).await {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!(agent = %id, error = %e, "titling the agent failed");
                    return;
                }
            };
            let spent = Usage::from(title.usage);
            tokens.charge(spent.input_tokens, spent.output_tokens).await;
            let titled = services
                .records
                .update(&account, &id, None, move |r| {
                    r.name = title.text;
                    r.usage += spent;
                    true
                })
                .await;
            if let Err(e) = titled {
                tracing::error!(agent = %id, error = %e, "recording the agent's title failed");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::{MonthlyBudget, SpawnRefusal, count, provisional_name};
    use crate::{
        accounts::{Plan, Window},
        invalid::Invalid,
        metrics::{names, testing::capture},
        mind::jobs::MAX_TITLE_CHARS,
        storage::StoreError,
    };

    #[test]
    fn refusals_are_counted_by_reason_and_storage_failures_bad_fields_and_unknown_components_not() {
        let refusals = [
            SpawnRefusal::MonthlyQuota {
                plan: Plan::Free,
                budget: MonthlyBudget::Tokens,
                used_hours: 1.0,
                limit_hours: 10.0,
                used_tokens: 10,
                limit_tokens: 10,
                resets_at: 0,
            },
            SpawnRefusal::ConcurrentLimit {
                plan: Plan::Free,
                current: 2,
                max: 2,
            },
            SpawnRefusal::AtCapacity { cap: 1 },
            SpawnRefusal::ComponentNotFound,
            SpawnRefusal::Invalid(Invalid {
                field: "task",
                message: "task must not be empty".into(),
            }),
            SpawnRefusal::RateLimited {
                plan: Plan::Free,
                window: Window::Minute,
                retry_after_secs: 1,
                per_minute: 5,
                per_hour: 30,
            },
            SpawnRefusal::RateLimited {
                plan: Plan::Free,
                window: Window::Hour,
                retry_after_secs: 1,
                per_minute: 5,
                per_hour: 30,
            },
            SpawnRefusal::Storage(StoreError::Corrupt("disk full".into()).into()),
        ];
        let ((), got) = capture(|| {
            for refusal in refusals {
                count(&Err(refusal));
            }
        });
        let got = got.snapshot();
        let refused = |reason| got.counter(names::SPAWNS_REFUSED, &[("reason", reason)]);
        assert_eq!(refused("monthly_quota"), Some(1));
        assert_eq!(refused("concurrent_limit"), Some(1));
        assert_eq!(refused("host_capacity"), Some(1));
        assert_eq!(refused("rate_limited"), Some(2));
        assert_eq!(got.series(names::SPAWNS_REFUSED), 4);
        assert_eq!(got.series(names::AGENTS_SPAWNED), 0);
    }

    #[test]
    fn provisional_names_are_the_task_s_first_words() {
        assert_eq!(
            provisional_name("Summarize the quarterly report"),
            "Summarize the quarterly report"
        );
        let long = "word ".repeat(40);
        assert!(provisional_name(&long).chars().count() <= MAX_TITLE_CHARS);
    }
}
