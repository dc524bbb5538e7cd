//! Fair CPU between accounts, and each run's CPU time against its budget.
//!
//! Guests run on their own threads (`guests`), as many as the gate has slots. A guest's
//! task holds a slot only while it is polled: the wasm between two epoch yields (a 10 ms
//! slice), or a host call's synchronous part. When it yields, waits on I/O or a timer, or
//! is refused a slot, it holds none. A freed slot goes to the waiting account whose runs
//! have had the least CPU time (virtual time, as the kernel's fair scheduler keeps per
//! task, kept here per account), and first come, first served among one account's
//! agents; an agent back from I/O whose account is more than a slice behind a running
//! one's, or holds two slots fewer, preempts the running slices (the engine's epoch is advanced). So when guests
//! compete for the cores, each account with runnable agents gets an equal share, however
//! many agents it runs; when they don't, nobody waits.
//!
//! CPU time is metered as the polling thread's own CPU clock (`CLOCK_THREAD_CPUTIME_ID`)
//! read around each poll: it counts what the guest really used — its wasm and the host
//! calls' synchronous work, not the time it waited for a slot, the Mind or the disk — for
//! two clock reads per slice (fuel would meter instructions, not time, and slow every
//! guest down by its instrumentation). Blocking work a host call hands to the blocking
//! pool (a memory write's embedding) is not the guest's CPU and is not counted.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    future::Future,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    task::{Context, Poll, Waker},
    time::Duration,
};

use parking_lot::Mutex;

/// The slots guests may run in at once, shared between accounts.
pub(super) struct CpuGate {
    state: Mutex<GateState>,
    /// Ends every running guest's slice now (the engine's epoch advanced).
    preempt: Box<dyn Fn() + Send + Sync>,
}

/// One slice, the unit of the virtual-time bounds below.
const SLICE_NS: u64 = 10_000_000;

#[derive(Default)]
struct GateState {
    /// Slots nobody holds or has been granted. Nonzero only when nobody waits.
    free: usize,
    /// Every account with a run under way.
    accounts: HashMap<Arc<str>, Share>,
    /// Slots each account holds (granted ones included); no entry for none. Apart from
    /// `accounts` so the checks made on every turn visit at most one entry per slot, not
    /// every account with an agent parked in a Mind call.
    holders: HashMap<Arc<str>, usize>,
    /// Each waiting account's tickets, oldest first; no entry for none.
    queues: HashMap<Arc<str>, VecDeque<u64>>,
    /// The waker of each waiting ticket.
    wakers: HashMap<u64, Waker>,
    /// Tickets given a slot whose task has not taken it yet.
    granted: HashSet<u64>,
    next_ticket: u64,
}

/// One account's share.
#[derive(Default)]
struct Share {
    /// CPU time its runs used while it had one under way, in ns: the account with the
    /// least is served first.
    vtime: u64,
    /// Its runs under way.
    runs: usize,
}

impl CpuGate {
    /// A gate of `slots` slots; `preempt` ends the running guests' slices at once.
    pub(super) fn new(slots: usize, preempt: impl Fn() + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(GateState {
                free: slots.max(1),
                ..GateState::default()
            }),
            preempt: Box::new(preempt),
        })
    }

    /// A run of `account` begins. An account new to the gate starts level with the
    /// least-served one under way, so it neither waits for the others' past nor owes
    /// them its own.
    fn begin(&self, account: &Arc<str>) {
        let mut s = self.state.lock();
        let level = s.accounts.values().map(|a| a.vtime).min().unwrap_or(0);
        s.accounts
            .entry(account.clone())
            .or_insert_with(|| Share {
                vtime: level,
                ..Share::default()
            })
            .runs += 1;
    }

    /// A run of `account` is over (it holds no slot and waits for none).
    fn end(&self, account: &Arc<str>) {
        let mut s = self.state.lock();
        if let Some(share) = s.accounts.get_mut(account) {
            share.runs -= 1;
            if share.runs == 0 {
                s.accounts.remove(account);
            }
        }
    }

    /// Takes a slot for `account` if one is free (then nobody waits), or the one granted
    /// to `ticket`; otherwise queues (or keeps queued) `ticket`, to be woken through
    /// `waker` when granted.
    fn enter(&self, account: &Arc<str>, ticket: &mut Option<u64>, waker: &Waker) -> bool {
        let mut s = self.state.lock();
        if let Some(id) = *ticket {
            if s.granted.remove(&id) {
                *ticket = None;
                return true;
            }
            if let Some(w) = s.wakers.get_mut(&id) {
                w.clone_from(waker);
            }
            return false;
        }
        if s.free > 0 {
            s.free -= 1;
            *s.holders.entry(account.clone()).or_default() += 1;
            return true;
        }
        *ticket = Some(s.queue(account, waker));
        // An agent back from I/O need not wait out the slices of an account that has had
        // more than a slice more CPU than its own, or holds two slots more: it would lose
        // its share whenever it waits on the disk or the Mind (its slot went to another
        // while it waited). The running guests yield now and the slots are handed out
        // again.
        let own_vtime = s.vtime(account);
        let own_held = s.holders.get(account).copied().unwrap_or(0);
        let unfair = s
            .holders
            .iter()
            .any(|(a, &held)| held > own_held + 1 || s.vtime(a) > own_vtime + SLICE_NS);
        drop(s);
        if unfair {
            (self.preempt)();
        }
        false
    }

    /// `account`'s slot, after `used_ns` of CPU, goes on (see [`GateState::pass_on`]).
    /// With `again` (a guest at the end of its slice), its `ticket` is first queued for
    /// another, woken through the waker: it waits its turn like every agent already
    /// waiting (the scheduler's own run queue would let it cut in before they were even
    /// polled).
    fn leave(&self, account: &Arc<str>, used_ns: u64, again: Option<(&mut Option<u64>, &Waker)>) {
        let next = {
            let mut s = self.state.lock();
            s.release(account, used_ns);
            if let Some((ticket, waker)) = again {
                *ticket = Some(s.queue(account, waker));
            }
            s.pass_on()
        };
        if let Some(waker) = next {
            waker.wake();
        }
    }

    /// Withdraws `ticket` of `account` (its task is gone): out of the queue if it still
    /// waits, and its slot passed on if one was granted to it.
    fn withdraw(&self, account: &Arc<str>, ticket: u64) {
        let next = {
            let mut s = self.state.lock();
            s.unqueue(account, ticket);
            match s.granted.remove(&ticket) {
                true => {
                    s.release(account, 0);
                    s.pass_on()
                }
                false => None,
            }
        };
        if let Some(waker) = next {
            waker.wake();
        }
    }
}

impl GateState {
    fn share(&mut self, account: &Arc<str>) -> &mut Share {
        self.accounts.entry(account.clone()).or_default()
    }

    /// `account`'s CPU time so far (none for an account the gate does not know).
    fn vtime(&self, account: &Arc<str>) -> u64 {
        self.accounts.get(account).map_or(0, |s| s.vtime)
    }

    /// Queues a new ticket of `account`, woken through `waker` when granted. An account
    /// that starts waiting after a long wait on I/O is credited at most two slices
    /// behind the least-served account that is waiting or running, so a long idle spell
    /// buys no long monopoly.
    fn queue(&mut self, account: &Arc<str>, waker: &Waker) -> u64 {
        self.next_ticket += 1;
        let id = self.next_ticket;
        self.wakers.insert(id, waker.clone());
        if !self.queues.contains_key(account) {
            let floor = self
                .holders
                .keys()
                .chain(self.queues.keys())
                .filter(|a| *a != account)
                .map(|a| self.vtime(a))
                .min();
            if let Some(floor) = floor {
                let share = self.share(account);
                share.vtime = share.vtime.max(floor.saturating_sub(2 * SLICE_NS));
            }
        }
        self.queues
            .entry(account.clone())
            .or_default()
            .push_back(id);
        id
    }

    /// Takes `ticket` of `account` out of the queue, if it waits there.
    fn unqueue(&mut self, account: &Arc<str>, ticket: u64) {
        self.wakers.remove(&ticket);
        if let Some(queue) = self.queues.get_mut(account) {
            queue.retain(|&id| id != ticket);
            if queue.is_empty() {
                self.queues.remove(account);
            }
        }
    }

    /// `account` no longer holds one of its slots, having used `used_ns` of CPU in it.
    fn release(&mut self, account: &Arc<str>, used_ns: u64) {
        if let Some(held) = self.holders.get_mut(account) {
            *held -= 1;
            if *held == 0 {
                self.holders.remove(account);
            }
        }
        self.share(account).vtime += used_ns;
    }

    /// Grants a freed slot to the oldest ticket of the waiting account that has had the
    /// least CPU (the longest waiting among equals), and returns its waker, to be woken outside the lock; frees the slot
    /// when nobody waits. So every account with runnable agents gets an equal share of
    /// the slots over time, one agent of a quiet account as much as a crowd of a busy
    /// one's, and agents of one account take turns.
    fn pass_on(&mut self) -> Option<Waker> {
        // Among equals, the one whose oldest ticket (the lowest number) waited longest.
        let Some(account) = self
            .queues
            .iter()
            .min_by_key(|(a, queue)| (self.vtime(a), queue[0]))
            .map(|(a, _)| a.clone())
        else {
            self.free += 1;
            return None;
        };
        let ticket = self.queues[&account][0];
        let waker = self.wakers.get(&ticket).cloned();
        self.unqueue(&account, ticket);
        self.granted.insert(ticket);
        *self.holders.entry(account.clone()).or_default() += 1;
        waker
    }
}

/// One run's CPU time, and its budget.
pub(super) struct CpuMeter {
    used_ns: AtomicU64,
    budget_ns: u64,
    /// Set by the guest at the end of its slice, so its task queues for the next.
    yielding: AtomicBool,
}

impl CpuMeter {
    pub(super) fn new(budget: Duration) -> Self {
        Self {
            used_ns: AtomicU64::new(0),
            budget_ns: u64::try_from(budget.as_nanos()).unwrap_or(u64::MAX),
            yielding: AtomicBool::new(false),
        }
    }

    /// Ends the guest's slice: awaited where it yields (the epoch callback), it is
    /// pending once, and its task queues behind the agents waiting for a slot; the gate
    /// wakes it when its turn comes (at once when nobody waits).
    pub(super) fn end_slice(self: Arc<Self>) -> impl Future<Output = ()> {
        let mut ended = false;
        std::future::poll_fn(move |_| {
            if std::mem::replace(&mut ended, true) {
                return Poll::Ready(());
            }
            self.yielding.store(true, Ordering::Relaxed);
            Poll::Pending
        })
    }

    /// The CPU time used so far.
    pub(super) fn used(&self) -> Duration {
        Duration::from_nanos(self.used_ns.load(Ordering::Relaxed))
    }

    /// The budget.
    pub(super) fn budget(&self) -> Duration {
        Duration::from_nanos(self.budget_ns)
    }

    /// Adds `ns`; whether the run is now over its budget.
    fn add(&self, ns: u64) -> bool {
        self.used_ns.fetch_add(ns, Ordering::Relaxed) + ns > self.budget_ns
    }
}

/// The run used more CPU time than its budget.
#[derive(Debug)]
pub(super) struct OverBudget;

/// `run` polled only in a slot of `gate` for `account`, its CPU time added to `meter`;
/// it ends with [`OverBudget`] (the run dropped) at the first slice past the budget.
pub(super) fn metered<F: Future>(
    gate: Arc<CpuGate>,
    account: &str,
    meter: Arc<CpuMeter>,
    run: F,
) -> impl Future<Output = Result<F::Output, OverBudget>> {
    let account: Arc<str> = account.into();
    gate.begin(&account);
    Metered {
        gate,
        account,
        meter,
        ticket: None,
        run: Box::pin(run),
    }
}

struct Metered<F> {
    gate: Arc<CpuGate>,
    account: Arc<str>,
    meter: Arc<CpuMeter>,
    /// The ticket this task waits with for a slot.
    ticket: Option<u64>,
    run: Pin<Box<F>>,
}

impl<F: Future> Future for Metered<F> {
    type Output = Result<F::Output, OverBudget>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if !this.gate.enter(&this.account, &mut this.ticket, cx.waker()) {
            return Poll::Pending;
        }
        let start = thread_cpu_ns();
        let polled = this.run.as_mut().poll(cx);
        let used = thread_cpu_ns().saturating_sub(start);
        let over = this.meter.add(used);
        let again = this.meter.yielding.swap(false, Ordering::Relaxed) && polled.is_pending();
        let ticket = again.then_some((&mut this.ticket, cx.waker()));
        this.gate.leave(&this.account, used, ticket);
        match polled {
            Poll::Ready(output) => Poll::Ready(Ok(output)),
            Poll::Pending if over => Poll::Ready(Err(OverBudget)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<F> Drop for Metered<F> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.gate.withdraw(&self.account, ticket);
        }
        self.gate.end(&self.account);
    }
}

/// The CPU time the calling thread has used, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    (t.tv_sec as u64) * 1_000_000_000 + t.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use std::{sync::atomic::AtomicUsize, task::Wake};

    use super::*;

    /// Counts its wakes.
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (count.clone(), Waker::from(count))
    }

    /// One agent of `account` asking the gate for a slot.
    struct Asker {
        account: Arc<str>,
        ticket: Option<u64>,
        woken: Arc<Count>,
        waker: Waker,
    }

    fn asker(account: &str) -> Asker {
        let (woken, waker) = counting();
        Asker {
            account: account.into(),
            ticket: None,
            woken,
            waker,
        }
    }

    impl Asker {
        fn enter(&mut self, gate: &CpuGate) -> bool {
            gate.enter(&self.account, &mut self.ticket, &self.waker)
        }

        fn woken(&self) -> usize {
            self.woken.0.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn freed_slots_go_to_accounts_in_turn_then_first_come_within_one() {
        let gate = CpuGate::new(1, || {});
        let mut holder = asker("z");
        assert!(holder.enter(&gate), "a free slot is taken at once");
        let mut a: Vec<Asker> = (0..3).map(|_| asker("a")).collect();
        let mut b = asker("b");
        for x in &mut a {
            assert!(!x.enter(&gate));
        }
        assert!(!b.enter(&gate));
        // Served in turn: a's first, b, a's second, a's third.
        let order = [(0, "a"), (0, "b"), (1, "a"), (2, "a")];
        gate.leave(&holder.account, SLICE_NS, None);
        for (i, account) in order {
            let x = if account == "b" { &mut b } else { &mut a[i] };
            assert_eq!(x.woken(), 1, "{account}{i} woken");
            assert!(x.enter(&gate), "{account}{i} takes its granted slot");
            gate.leave(&x.account, SLICE_NS, None);
        }
        assert!(holder.enter(&gate), "the slot is free again");
    }

    #[test]
    fn a_quiet_account_gets_half_the_slices_against_a_busy_one() {
        let gate = CpuGate::new(2, || {});
        let mut agents: Vec<Asker> = ["busy", "busy", "busy", "busy", "quiet"]
            .into_iter()
            .map(asker)
            .collect();
        let mut holders: Vec<usize> = (0..agents.len())
            .filter(|&i| agents[i].enter(&gate))
            .collect();
        assert_eq!(holders.len(), 2);
        let mut slices = HashMap::<&str, u32>::new();
        for _ in 0..100 {
            // The slot held longest ends its slice; the agent it goes to runs next.
            let i = holders.remove(0);
            let x = &mut agents[i];
            gate.leave(&x.account, SLICE_NS, Some((&mut x.ticket, &x.waker)));
            let next = (0..agents.len())
                .find(|j| !holders.contains(j) && agents[*j].enter(&gate))
                .expect("the slot was granted");
            *slices
                .entry(if next == 4 { "quiet" } else { "busy" })
                .or_default() += 1;
            holders.push(next);
        }
        assert!((45..=55).contains(&slices["quiet"]), "{slices:?}");
    }

    #[test]
    fn a_withdrawn_ticket_passes_its_granted_slot_on() {
        let gate = CpuGate::new(1, || {});
        let mut holder = asker("z");
        assert!(holder.enter(&gate));
        let (mut a, mut b) = (asker("a"), asker("b"));
        assert!(!a.enter(&gate));
        assert!(!b.enter(&gate));
        gate.leave(&holder.account, SLICE_NS, None);
        assert_eq!(a.woken(), 1);
        gate.withdraw(&a.account, a.ticket.take().unwrap());
        assert_eq!(b.woken(), 1, "a's slot went to b");
        assert!(b.enter(&gate));
        let mut c = asker("c");
        assert!(!c.enter(&gate));
        gate.withdraw(&c.account, c.ticket.take().unwrap());
        gate.leave(&b.account, SLICE_NS, None);
        assert!(c.enter(&gate), "a slot nobody waits for is free");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn metering_counts_cpu_and_ends_a_run_past_its_budget() {
        let gate = CpuGate::new(1, || {});
        let meter = Arc::new(CpuMeter::new(Duration::from_millis(30)));
        let spin = async {
            loop {
                let start = std::time::Instant::now();
                while start.elapsed() < Duration::from_millis(5) {
                    std::hint::black_box(());
                }
                tokio::task::yield_now().await;
            }
        };
        let ended = metered(gate.clone(), "a", meter.clone(), spin).await;
        assert!(ended.is_err(), "the spinner ran past its budget");
        let used = meter.used();
        assert!(used >= Duration::from_millis(30), "{used:?}");
        let idle = Arc::new(CpuMeter::new(Duration::from_secs(1)));
        let sleep = tokio::time::sleep(Duration::from_millis(50));
        metered(gate, "a", idle.clone(), sleep).await.unwrap();
        assert!(
            idle.used() < Duration::from_millis(10),
            "waiting is not CPU"
        );
    }
}
