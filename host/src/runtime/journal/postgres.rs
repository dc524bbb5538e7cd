//! Journals in PostgreSQL (`agent_runs`, `agent_journal`: migration 0010), shared by every
//! node, so the node that takes over a lost node's agent resumes it from what the lost
//! node recorded. Every write is fenced: it is made only while the agent's row holds the
//! writer's epoch, read under a share lock, so a node that lost its claim (its lease ran
//! out and another node claimed the agent, under the next epoch) has its late writes
//! refused, and a claim waits for an append in progress — the successor loads every entry
//! its predecessor stored. Writes that need no sync commit with `synchronous_commit = off`.

use async_trait::async_trait;
use sqlx::{PgPool, Postgres, Transaction};

use super::{Entry, JournalError, JournalStore, Recorded, Run, contiguous};
use crate::{
    runtime::records::Allowance,
    storage::{bigint, unsigned},
};

/// Journals over a PostgreSQL pool whose migrations have run.
#[derive(Clone)]
pub struct PgJournal {
    pool: PgPool,
}

/// `$sql` after the CTE `claim`: the share lock on the agent's row, held while its run's
/// epoch is `$3` (any, when null) — what every write below selects from, so it writes
/// nothing for a stale claim.
macro_rules! claimed {
    ($sql:literal) => {
        concat!(
            "WITH claim AS (
                SELECT 1 FROM agents
                WHERE account_id = $1 AND agent_id = $2 AND ($3::bigint IS NULL OR epoch = $3)
                FOR SHARE) ",
            $sql
        )
    };
}

/// A transaction; without a sync at commit unless `durable`.
async fn begin(pool: &PgPool, durable: bool) -> Result<Transaction<'_, Postgres>, JournalError> {
    let mut tx = pool.begin().await?;
    if !durable {
        sqlx::query("SET LOCAL synchronous_commit = off")
            .execute(&mut *tx)
            .await?;
    }
    Ok(tx)
}

/// A stale claim's write, which wrote nothing.
fn refused(run: &Run, rows: u64) -> Result<(), JournalError> {
    match rows {
        0 => Err(JournalError::Stale(run.agent_id.clone())),
        _ => Ok(()),
    }
}

impl PgJournal {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// Deletes the journals of agents that ended while no node ran them (stopped while
    /// their node was down): the node that ends a run deletes its journal itself.
    pub async fn sweep(pool: &PgPool) -> Result<u64, JournalError> {
        let deleted = sqlx::query(
            "DELETE FROM agent_runs r USING agents a
             WHERE a.account_id = r.account_id AND a.agent_id = r.agent_id
               AND a.status NOT IN ('spawning', 'running')",
        )
        .execute(pool)
        .await?;
        Ok(deleted.rows_affected())
    }
}

#[async_trait]
impl JournalStore for PgJournal {
    async fn begin(&self, run: &Run, allowance: Allowance) -> Result<(), JournalError> {
        let mut tx = begin(&self.pool, false).await?;
        let quota = allowance.memory_quota;
        let rows = sqlx::query(claimed!(
            "INSERT INTO agent_runs (account_id, agent_id, memory_quota, versions_per_key,
                                     cpu_budget_ms, token_budget)
             SELECT $1, $2, $4, $5, $6, $7 FROM claim"
        ))
        .bind(&run.account)
        .bind(&run.agent_id)
        .bind(run.fence.map(bigint))
        .bind(bigint(quota.memories))
        .bind(bigint(quota.versions_per_key))
        .bind(bigint(allowance.cpu_budget_ms()))
        .bind(bigint(allowance.token_budget))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        refused(run, rows)
    }

    async fn load(&self, account: &str, agent_id: &str) -> Result<Option<Recorded>, JournalError> {
        let mut tx = self.pool.begin().await?;
        // One snapshot for both reads.
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .execute(&mut *tx)
            .await?;
        let run: Option<(i64, i64, i64, i64)> = sqlx::query_as(
            "SELECT memory_quota, versions_per_key, cpu_budget_ms, token_budget
             FROM agent_runs WHERE account_id = $1 AND agent_id = $2",
        )
        .bind(account)
        .bind(agent_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((memories, versions_per_key, cpu_budget_ms, token_budget)) = run else {
            return Ok(None);
        };
        let rows: Vec<(i64, String, i64, i64, String)> = sqlx::query_as(
            "SELECT step, func, args, ts, result FROM agent_journal
             WHERE account_id = $1 AND agent_id = $2 ORDER BY step",
        )
        .bind(account)
        .bind(agent_id)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        let entries = rows
            .into_iter()
            .map(|(step, func, args, ts, result)| {
                Ok(Entry {
                    step: unsigned(step),
                    func,
                    // The hash's bits, stored as a signed bigint.
                    args: args as u64,
                    ts: unsigned(ts),
                    result: serde_json::from_str(&result)?,
                })
            })
            .collect::<Result<Vec<_>, JournalError>>()?;
        contiguous(agent_id, &entries)?;
        let allowance = Allowance::from_row(
            unsigned(memories),
            Some(u32::try_from(versions_per_key).unwrap_or(u32::MAX)),
            unsigned(cpu_budget_ms),
            Some(unsigned(token_budget)),
        );
        Ok(Some(Recorded { allowance, entries }))
    }

    async fn append(
        &self,
        run: &Run,
        entries: Vec<Entry>,
        durable: bool,
    ) -> Result<(), JournalError> {
        let (mut steps, mut funcs, mut args, mut ts, mut results) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for e in entries {
            steps.push(bigint(e.step));
            funcs.push(e.func);
            args.push(e.args as i64);
            ts.push(bigint(e.ts));
            results.push(serde_json::to_string(&e.result)?);
        }
        let mut tx = begin(&self.pool, durable).await?;
        let rows = sqlx::query(claimed!(
            "INSERT INTO agent_journal (account_id, agent_id, step, func, args, ts, result)
             SELECT $1, $2, e.step, e.func, e.args, e.ts, e.result
             FROM claim,
                  unnest($4::bigint[], $5::text[], $6::bigint[], $7::bigint[], $8::text[])
                  AS e(step, func, args, ts, result)"
        ))
        .bind(&run.account)
        .bind(&run.agent_id)
        .bind(run.fence.map(bigint))
        .bind(&steps)
        .bind(&funcs)
        .bind(&args)
        .bind(&ts)
        .bind(&results)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        refused(run, rows)
    }

    async fn holds(&self, run: &Run) -> Result<(), JournalError> {
        let held: Option<i32> = sqlx::query_scalar(
            "SELECT 1 FROM agents
             WHERE account_id = $1 AND agent_id = $2 AND ($3::bigint IS NULL OR epoch = $3)",
        )
        .bind(&run.account)
        .bind(&run.agent_id)
        .bind(run.fence.map(bigint))
        .fetch_optional(&self.pool)
        .await?;
        refused(run, u64::from(held.is_some()))
    }

    /// A committed transaction outlives the client, synced or not.
    fn unsynced_outlives_the_process(&self) -> bool {
        true
    }

    async fn end(&self, run: &Run) -> Result<(), JournalError> {
        // The run is recorded as ended already: a lost delete is swept later.
        let mut tx = begin(&self.pool, false).await?;
        sqlx::query(claimed!(
            "DELETE FROM agent_runs r USING claim
             WHERE r.account_id = $1 AND r.agent_id = $2"
        ))
        .bind(&run.account)
        .bind(&run.agent_id)
        .bind(run.fence.map(bigint))
        .execute(&mut *tx)
        .await?;
        // No row deleted: the journal was gone already, or the claim is stale.
        tx.commit().await?;
        Ok(())
    }
}
