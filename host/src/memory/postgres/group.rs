//! Group commit of one account's concurrent puts at this node. An account's writes are
//! serial anyway (each holds the account's counter row locked to its commit), so while one
//! transaction of the account runs, the puts arriving for it queue here, and the next
//! transaction takes them all: one lock, one reap and one commit — one WAL flush — for
//! the lot. Each put runs inside its own savepoint, so a put that is refused or fails
//! leaves nothing of its own and takes nothing from the others. A put is answered only
//! once the transaction holding it has committed; when that fails, every put in it gets
//! the error (none was written).

use std::{
    collections::{HashMap, hash_map::Entry},
    sync::Arc,
};

use parking_lot::Mutex;
use sqlx::PgPool;
use tokio::sync::oneshot;

use super::write::Txn;
use crate::{
    clock::now_ms,
    memory::{
        MemoryError, Quota, Result,
        backend::{PutOutcome, RunFence},
        input::PutInput,
    },
};

/// Most puts in one transaction: each savepoint that wrote is a subtransaction, and past
/// 64 of them in one transaction PostgreSQL's snapshots of every session slow down.
const MOST: usize = 32;

/// The puts waiting, per account, for the transaction after the running one.
pub(super) struct Groups {
    pool: PgPool,
    waiting: Mutex<HashMap<String, Vec<Pending>>>,
}

/// A put waiting for its group.
pub(super) struct Pending {
    input: PutInput,
    embedding: Vec<f32>,
    quota: Quota,
    /// The agent's claim the put is made under, checked in its own savepoint.
    fence: Option<RunFence>,
    reply: oneshot::Sender<Result<PutOutcome>>,
}

impl Pending {
    /// A put and where its outcome goes.
    pub(super) fn new(
        input: PutInput,
        embedding: Vec<f32>,
        quota: Quota,
        fence: Option<RunFence>,
    ) -> (Self, oneshot::Receiver<Result<PutOutcome>>) {
        let (reply, outcome) = oneshot::channel();
        let pending = Pending {
            input,
            embedding,
            quota,
            fence,
            reply,
        };
        (pending, outcome)
    }
}

impl Groups {
    pub(super) fn new(pool: PgPool) -> Arc<Self> {
        Arc::new(Self {
            pool,
            waiting: Mutex::new(HashMap::new()),
        })
    }

    /// Puts `input` (under `fence`, when given) in the account's next transaction; its
    /// outcome once that committed.
    pub(super) async fn put(
        self: &Arc<Self>,
        input: PutInput,
        embedding: Vec<f32>,
        quota: Quota,
        fence: Option<RunFence>,
    ) -> Result<PutOutcome> {
        let account = input.account.clone();
        let (pending, outcome) = Pending::new(input, embedding, quota, fence);
        let lead = match self.waiting.lock().entry(account.clone()) {
            Entry::Occupied(mut queue) => {
                queue.get_mut().push(pending);
                false
            }
            Entry::Vacant(slot) => {
                slot.insert(vec![pending]);
                true
            }
        };
        if lead {
            // Its own task: a caller that goes away must not strand the puts queued behind.
            tokio::spawn(self.clone().drain(account));
        }
        outcome
            .await
            .unwrap_or_else(|_| Err(MemoryError::WriteFailed("write aborted".into())))
    }

    /// Commits the account's waiting puts, a group at a time, until none is left.
    async fn drain(self: Arc<Self>, account: String) {
        let _unwedged = Unwedge {
            groups: &self,
            account: &account,
        };
        loop {
            let group = {
                let mut waiting = self.waiting.lock();
                let Some(queue) = waiting.get_mut(&account) else {
                    return;
                };
                if queue.is_empty() {
                    waiting.remove(&account);
                    return;
                }
                let n = queue.len().min(MOST);
                queue.drain(..n).collect::<Vec<_>>()
            };
            commit(&self.pool, &account, group).await;
        }
    }
}

/// Should a drain panic, its account's queue goes with it (each waiting put answered
/// `WriteFailed`), so the account's next put leads a new drain instead of queueing behind
/// one that will never come.
struct Unwedge<'a> {
    groups: &'a Groups,
    account: &'a str,
}

impl Drop for Unwedge<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.groups.waiting.lock().remove(self.account);
        }
    }
}

/// Runs `group` (puts of `account`) in one transaction and answers each put.
pub(super) async fn commit(pool: &PgPool, account: &str, group: Vec<Pending>) {
    match run(pool, account, &group).await {
        Ok(outcomes) => {
            for (put, outcome) in group.into_iter().zip(outcomes) {
                let _ = put.reply.send(outcome);
            }
        }
        Err(e) => {
            let why = format!("{e}");
            for put in group {
                let _ = put.reply.send(Err(MemoryError::WriteFailed(why.clone())));
            }
        }
    }
}

/// Each put's outcome, the transaction committed; an error when it could not be.
async fn run(pool: &PgPool, account: &str, group: &[Pending]) -> Result<Vec<Result<PutOutcome>>> {
    let mut txn = Txn::begin(pool, account, now_ms()).await?;
    let mut outcomes = Vec::with_capacity(group.len());
    if let [alone] = group {
        // Alone in its transaction: when it fails, dropping the transaction rolls it back.
        let fence = alone.fence.as_ref();
        let outcome = (txn.put_fenced(&alone.input, &alone.embedding, alone.quota, fence)).await;
        if outcome.is_err() {
            return Ok(vec![outcome]);
        }
        outcomes.push(outcome);
    } else {
        for put in group {
            let fence = put.fence.as_ref();
            outcomes.push(
                txn.put_apart(&put.input, &put.embedding, put.quota, fence)
                    .await?,
            );
        }
    }
    txn.commit().await?;
    Ok(outcomes)
}
