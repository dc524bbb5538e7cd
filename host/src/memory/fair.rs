//! Fair queues between accounts, for the memory work every account shares at this node:
//! the embedder's lanes and the embedded backend's writer.
//!
//! First come, first served lets one account's bulk work (an import's thousands of texts)
//! hold up every other account's single put for seconds. Here each account has its own
//! queue in each of two classes: interactive work (a put, a search's query, an agent's
//! memory tool) is always served before bulk work (an import, a consolidation), and within
//! a class the accounts with work waiting take turns, round-robin, one job each — so an
//! account's job waits behind at most one job of each other account waiting in its class,
//! however much they have queued. A job's `cost` (texts to embed, rows to write) is what the
//! bounds count: an account may have at most `per_account` of it queued (a job is admitted
//! whatever its cost when the account has nothing queued, so any request the plan allows
//! is served in time), and the node at most `total` (unless nothing is queued); past that
//! the work is refused at once ([`Full`]), never left to wait without end.
//!
//! The CPU gate (`runtime::cpu`) shares the slots by measured CPU time, with preemption;
//! here the jobs are units that run to their end, so turns are counted in jobs.

use std::{
    collections::{HashMap, VecDeque},
    sync::Arc,
};

use parking_lot::{Condvar, Mutex};

/// Which turn a job waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A request's own work: served first.
    Interactive = 0,
    /// Large work done for one request (import, consolidation): served when no
    /// interactive work waits, in chunks where it can be split.
    Bulk = 1,
}

/// How much work may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Cost one account may have queued.
    pub per_account: usize,
    /// Cost all accounts may have queued together.
    pub total: usize,
}

/// The queue is full for this account (or for the node): retry later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

/// One account's jobs in one class, oldest first, each with its cost.
type Jobs<T> = VecDeque<(usize, T)>;

/// Per-account queues in two classes, served in turns (see the module doc).
pub struct FairQueue<T> {
    bounds: Bounds,
    /// Per class: the accounts with work waiting, in the order of their next turn.
    turns: [VecDeque<Arc<str>>; 2],
    /// Per class: each waiting account's jobs, oldest first; no entry for none.
    queues: [HashMap<Arc<str>, Jobs<T>>; 2],
    /// Cost queued per account (both classes); no entry for none.
    queued: HashMap<Arc<str>, usize>,
    total: usize,
}

impl<T> FairQueue<T> {
    pub fn new(bounds: Bounds) -> Self {
        Self {
            bounds,
            turns: Default::default(),
            queues: Default::default(),
            queued: HashMap::new(),
            total: 0,
        }
    }

    /// Queues the jobs of one request, all or none: refused when they would take the
    /// account past its bound (unless it has nothing queued) or the node past its total.
    pub fn admit(
        &mut self,
        account: &str,
        class: Class,
        jobs: Vec<(usize, T)>,
    ) -> Result<(), Full> {
        let cost: usize = jobs.iter().map(|(c, _)| c).sum();
        let mine = self.queued.get(account).copied().unwrap_or(0);
        if (mine > 0 && mine + cost > self.bounds.per_account)
            || (self.total > 0 && self.total + cost > self.bounds.total)
        {
            return Err(Full);
        }
        let account: Arc<str> = account.into();
        for (cost, job) in jobs {
            self.push(&account, class, cost, job);
        }
        Ok(())
    }

    /// Queues a job with no bound: for work each in-flight request holds at most one of,
    /// which the requests' own limits bound.
    pub fn push(&mut self, account: &Arc<str>, class: Class, cost: usize, job: T) {
        let c = class as usize;
        let queue = self.queues[c].entry(account.clone()).or_insert_with(|| {
            self.turns[c].push_back(account.clone());
            VecDeque::new()
        });
        queue.push_back((cost, job));
        *self.queued.entry(account.clone()).or_default() += cost;
        self.total += cost;
    }

    /// The next job and its cost, if its cost is at most `room[its class]`: the oldest job
    /// of the account whose turn it is, interactive before bulk. The account's turn passes
    /// (it goes behind the others) only when a job is taken.
    pub fn pop_within(&mut self, room: [usize; 2]) -> Option<(usize, T)> {
        let c = (0..2).find(|&c| !self.turns[c].is_empty())?;
        let account = self.turns[c][0].clone();
        let queue = self.queues[c].get_mut(&account)?;
        if queue.front()?.0 > room[c] {
            return None;
        }
        let (cost, job) = queue.pop_front()?;
        let more = !queue.is_empty();
        if let Some(mine) = self.queued.get_mut(&account) {
            *mine -= cost;
            if *mine == 0 {
                self.queued.remove(&account);
            }
        }
        self.total -= cost;
        self.turns[c].pop_front();
        match more {
            true => self.turns[c].push_back(account),
            false => {
                self.queues[c].remove(&account);
            }
        }
        Some((cost, job))
    }

    /// The next job and its cost, whatever the cost.
    pub fn pop(&mut self) -> Option<(usize, T)> {
        self.pop_within([usize::MAX; 2])
    }
}

/// Why [`Sender::admit`] queued nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// See [`Full`].
    Full,
    /// Every worker is gone (the service is stopping).
    Gone,
}

/// A [`FairQueue`] shared by threads: senders queue, worker threads take groups of jobs.
/// Once every [`Sender`] is dropped, the workers drain what is queued and stop; once
/// every [`Receiver`] is dropped (the workers ended, or panicked), what is queued is
/// dropped — its callers see their replies' channels close — and nothing more is queued.
pub struct Receiver<T> {
    alive: Arc<Alive<T>>,
}

/// The queueing end; cheap to clone.
pub struct Sender<T> {
    open: Arc<Open<T>>,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

struct State<T> {
    queue: FairQueue<T>,
    /// Every sender is gone.
    closed: bool,
    /// Every receiver is gone.
    gone: bool,
}

/// Closes the queue when the last sender goes.
struct Open<T>(Arc<Shared<T>>);

impl<T> Drop for Open<T> {
    fn drop(&mut self) {
        self.0.state.lock().closed = true;
        self.0.ready.notify_all();
    }
}

/// Empties the queue for good when the last receiver goes.
struct Alive<T>(Arc<Shared<T>>);

impl<T> Drop for Alive<T> {
    fn drop(&mut self) {
        let mut state = self.0.state.lock();
        state.gone = true;
        let bounds = state.queue.bounds;
        let queued = std::mem::replace(&mut state.queue, FairQueue::new(bounds));
        drop(state);
        drop(queued);
    }
}

/// A fair queue between threads, bounded by `bounds`.
pub fn channel<T>(bounds: Bounds) -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            queue: FairQueue::new(bounds),
            closed: false,
            gone: false,
        }),
        ready: Condvar::new(),
    });
    let sender = Sender {
        open: Arc::new(Open(shared.clone())),
    };
    let receiver = Receiver {
        alive: Arc::new(Alive(shared)),
    };
    (sender, receiver)
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Self {
            open: self.open.clone(),
        }
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        Self {
            alive: self.alive.clone(),
        }
    }
}

impl<T> Sender<T> {
    /// [`FairQueue::admit`], waking a worker.
    pub fn admit(&self, account: &str, class: Class, jobs: Vec<(usize, T)>) -> Result<(), Refused> {
        let shared = &self.open.0;
        let mut state = shared.state.lock();
        if state.gone {
            return Err(Refused::Gone);
        }
        state
            .queue
            .admit(account, class, jobs)
            .map_err(|Full| Refused::Full)?;
        drop(state);
        shared.ready.notify_one();
        Ok(())
    }

    /// [`FairQueue::push`], waking a worker; [`Refused::Gone`] when no worker is left.
    pub fn push(&self, account: &str, class: Class, cost: usize, job: T) -> Result<(), Refused> {
        let shared = &self.open.0;
        let mut state = shared.state.lock();
        if state.gone {
            return Err(Refused::Gone);
        }
        state.queue.push(&account.into(), class, cost, job);
        drop(state);
        shared.ready.notify_one();
        Ok(())
    }
}

impl<T> Receiver<T> {
    /// Blocks for the next group: the next job whatever its cost, then the following ones
    /// in turn while the group's cost stays within `most[their class]` (so a group may
    /// hold less bulk work than interactive work). `None` once the queue is closed and
    /// empty.
    pub fn group(&self, most: [usize; 2]) -> Option<Vec<(usize, T)>> {
        let shared = &self.alive.0;
        let mut state = shared.state.lock();
        loop {
            if let Some(first) = state.queue.pop() {
                let mut used = first.0;
                let mut group = vec![first];
                let room = |used: usize| most.map(|m| m.saturating_sub(used));
                while let Some(next) = state.queue.pop_within(room(used)) {
                    used += next.0;
                    group.push(next);
                }
                // What is left is another worker's (a sender wakes only one).
                if state.queue.total > 0 {
                    shared.ready.notify_one();
                }
                return Some(group);
            }
            if state.closed {
                return None;
            }
            shared.ready.wait(&mut state);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(per_account: usize, total: usize) -> FairQueue<&'static str> {
        FairQueue::new(Bounds { per_account, total })
    }

    fn drain(q: &mut FairQueue<&'static str>) -> Vec<&'static str> {
        std::iter::from_fn(|| q.pop().map(|(_, job)| job)).collect()
    }

    #[test]
    fn accounts_take_turns_one_job_each_then_first_come_within_one() {
        let mut q = queue(100, 1000);
        q.admit("a", Class::Bulk, vec![(1, "a1"), (1, "a2"), (1, "a3")])
            .unwrap();
        q.admit("b", Class::Bulk, vec![(1, "b1")]).unwrap();
        q.admit("a", Class::Bulk, vec![(1, "a4")]).unwrap();
        q.admit("c", Class::Bulk, vec![(1, "c1"), (1, "c2")])
            .unwrap();
        assert_eq!(drain(&mut q), ["a1", "b1", "c1", "a2", "c2", "a3", "a4"]);
    }

    #[test]
    fn interactive_work_goes_before_bulk_work_queued_earlier() {
        let mut q = queue(100, 1000);
        q.admit("a", Class::Bulk, vec![(32, "a-chunk1"), (32, "a-chunk2")])
            .unwrap();
        q.admit("b", Class::Interactive, vec![(1, "b-put")])
            .unwrap();
        assert_eq!(q.pop(), Some((1, "b-put")));
        q.admit("a", Class::Interactive, vec![(1, "a-put")])
            .unwrap();
        assert_eq!(drain(&mut q), ["a-put", "a-chunk1", "a-chunk2"]);
    }

    #[test]
    fn a_job_too_big_for_the_room_waits_its_turn_and_keeps_it() {
        let mut q = queue(100, 1000);
        q.admit("a", Class::Bulk, vec![(20, "a20")]).unwrap();
        q.admit("b", Class::Bulk, vec![(1, "b1")]).unwrap();
        assert_eq!(
            q.pop_within([100, 10]),
            None,
            "a's job does not fit, b does not cut in"
        );
        assert_eq!(q.pop_within([0, 20]), Some((20, "a20")));
        assert_eq!(q.pop_within([0, 1]), Some((1, "b1")));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn a_full_account_is_refused_all_or_nothing_and_others_are_not() {
        let mut q = queue(10, 25);
        assert_eq!(q.admit("a", Class::Bulk, vec![(8, "a1")]), Ok(()));
        assert_eq!(
            q.admit("a", Class::Bulk, vec![(2, "a2"), (1, "a3")]),
            Err(Full)
        );
        assert_eq!(
            q.admit("a", Class::Bulk, vec![(2, "a2")]),
            Ok(()),
            "up to the bound"
        );
        assert_eq!(q.admit("b", Class::Bulk, vec![(10, "b1")]), Ok(()));
        assert_eq!(
            q.admit("c", Class::Interactive, vec![(6, "c1")]),
            Err(Full),
            "the node's total is reached"
        );
        assert_eq!(
            drain(&mut q),
            ["a1", "b1", "a2"],
            "the refused jobs are not queued"
        );
        assert_eq!(
            q.admit("a", Class::Bulk, vec![(40, "big")]),
            Ok(()),
            "an account with nothing queued is admitted whatever the cost"
        );
        q.push(&"a".into(), Class::Interactive, 1, "unbounded");
        assert_eq!(drain(&mut q), ["unbounded", "big"]);
    }

    #[test]
    fn workers_take_groups_within_their_size_and_stop_when_closed() {
        let (tx, rx) = channel(Bounds {
            per_account: 100,
            total: 1000,
        });
        tx.admit("a", Class::Bulk, vec![(3, "a1"), (3, "a2")])
            .unwrap();
        tx.push("b", Class::Interactive, 1, "b1").unwrap();
        tx.push("c", Class::Interactive, 1, "c1").unwrap();
        let jobs = |group: Vec<(usize, &'static str)>| -> Vec<&'static str> {
            group.into_iter().map(|(_, job)| job).collect()
        };
        tx.push("d", Class::Interactive, 1, "d1").unwrap();
        let most = [8, 4];
        assert_eq!(
            jobs(rx.group(most).unwrap()),
            ["b1", "c1", "d1"],
            "a1 would take the group past 4, the most of bulk work"
        );
        assert_eq!(
            jobs(rx.group([1, 1]).unwrap()),
            ["a1"],
            "the first job whatever its cost"
        );
        drop(tx);
        assert_eq!(
            jobs(rx.group(most).unwrap()),
            ["a2"],
            "drained after closing"
        );
        assert!(rx.group(most).is_none());
    }

    #[test]
    fn nothing_is_queued_once_the_workers_are_gone_and_queued_jobs_are_dropped() {
        let (tx, rx) = channel(Bounds {
            per_account: 100,
            total: 1000,
        });
        let job = Arc::new(());
        tx.push("a", Class::Interactive, 1, job.clone()).unwrap();
        drop(rx);
        assert_eq!(Arc::strong_count(&job), 1, "the queued job was dropped");
        assert_eq!(
            tx.push("a", Class::Interactive, 1, job.clone()),
            Err(Refused::Gone)
        );
        assert_eq!(
            tx.admit("a", Class::Bulk, vec![(1, job)]),
            Err(Refused::Gone)
        );
    }
}
