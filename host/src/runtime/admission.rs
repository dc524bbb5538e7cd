//! Admission: the agents each account and the host have live, kept so that every figure a
//! spawn checks is O(1) — an account's concurrent agents, the host's total under its cap,
//! and the run time so far of an account's running agents (for the monthly budget).
//!
//! An agent leaves its account's count ([`Admission::release`]) before its record turns
//! terminal — when a stop is answered, or when its run ends — so the record and the count
//! agree: a spawn right after a client reads `stopped` or `completed` is admitted. It keeps
//! its place under the host's cap until its run is over (through a stop's grace), then
//! gives it back before the work that follows ([`Admission::vacate_ended`]).
//!
//! The cap counts agents that hold an instance. A hibernated (parked) agent gives its
//! place back and keeps its account's count, as it still runs for its account; parked
//! agents have a bound of their own, `[runtime] max_parked_agents` (see `park`).

use std::{collections::HashMap, sync::Arc, time::Instant};

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::{lifecycle::Runtime, state::AgentCtx};

/// Why a place was not reserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The host is at its admission cap.
    AtCapacity { cap: u32 },
    /// The account has `max` agents spawning or running.
    ConcurrentLimit { current: u32, max: u32 },
}

/// The live agents, under one lock.
pub(super) struct Admission {
    cap: u32,
    max_parked: u32,
    live: Mutex<Live>,
    /// Woken when a place frees at the cap: a spawn another node offered meanwhile can be
    /// taken here now (see `cluster::offers`).
    freed: Arc<Notify>,
    /// Woken when a place frees while agents are parked: the first of those waiting to
    /// resume looks for it ([`Admission::reoccupy`]).
    unparking: Notify,
}

struct Live {
    agents: HashMap<String, Launched>,
    per_account: HashMap<String, AccountLive>,
    total: u32,
    /// Agents parked: launched, without an instance (not in `total`).
    parked: u32,
    /// Origin of the launch offsets in [`AccountLive`].
    epoch: Instant,
}

/// A launched agent, and whether it still counts among its account's admitted agents (not
/// once it is stopped).
struct Launched {
    ctx: Arc<AgentCtx>,
    counted: bool,
}

/// One account's live agents.
#[derive(Default)]
struct AccountLive {
    /// Admitted agents: reserved or launched.
    admitted: u32,
    /// Launched agents whose run has not ended.
    launched: u64,
    /// Sum of their launch instants, in ms since [`Live::epoch`]: with `launched` it gives
    /// their total run time so far without visiting them.
    launched_sum_ms: u64,
}

impl Live {
    fn offset_ms(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_millis() as u64
    }

    /// Takes one agent out of `account`'s admitted count, forgetting an account left with
    /// none admitted and none running.
    fn uncount(&mut self, account: &str) {
        if let Some(a) = self.per_account.get_mut(account) {
            a.admitted -= 1;
            if a.admitted == 0 && a.launched == 0 {
                self.per_account.remove(account);
            }
        }
    }
}

/// An admitted spawn's place: given back when dropped (before launch, or when the agent's
/// run has ended).
pub(super) struct Slot {
    admission: Arc<Admission>,
    account: String,
    /// Whether the place still counts among the account's agents (not once released).
    counted: bool,
    /// Whether it holds a place under the host's cap (not once its run is over).
    placed: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut live = self.admission.live.lock();
        if self.placed {
            self.admission.give_back(&mut live);
        }
        if self.counted {
            live.uncount(&self.account);
        }
    }
}

/// A parked agent's standing: among the parked until it reoccupies a place under the cap;
/// dropped before that, it leaves them as an ending agent (see [`Admission::vacate`]).
pub(super) struct Parked {
    admission: Arc<Admission>,
    parked: bool,
}

impl Parked {
    /// Waits for a place under the cap to resume in, and takes it (cancel-safe: a wait
    /// given up leaves the agent parked).
    pub(super) async fn reoccupy(&mut self) {
        self.admission.reoccupy().await;
        self.parked = false;
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        if self.parked {
            self.admission.unpark_ending();
        }
    }
}

/// A place under the host's cap for an agent not chosen yet (a claim of an offered spawn,
/// whose account is known once claimed): given back when dropped unless it became a
/// [`Slot`].
pub(super) struct Room {
    admission: Option<Arc<Admission>>,
}

impl Room {
    /// The place, as the slot of an agent of `account`.
    pub(super) fn into_slot(mut self, account: &str) -> Slot {
        let admission = self.admission.take().expect("a room is used once");
        admission
            .live
            .lock()
            .per_account
            .entry(account.to_string())
            .or_default()
            .admitted += 1;
        Slot {
            admission,
            account: account.to_string(),
            counted: true,
            placed: true,
        }
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        if let Some(admission) = &self.admission {
            admission.give_back(&mut admission.live.lock());
        }
    }
}

impl Admission {
    /// No agent live yet; at most `cap` holding an instance at once, and `max_parked`
    /// parked.
    pub(super) fn new(cap: u32, max_parked: u32) -> Arc<Self> {
        Arc::new(Self {
            cap,
            max_parked,
            live: Mutex::new(Live {
                agents: HashMap::new(),
                per_account: HashMap::new(),
                total: 0,
                parked: 0,
                epoch: Instant::now(),
            }),
            freed: Arc::new(Notify::new()),
            unparking: Notify::new(),
        })
    }

    /// Gives a place back, waking [`Admission::freed`]'s waiter if the host was full, and
    /// the first parked agent waiting to resume if any is parked.
    fn give_back(&self, live: &mut Live) {
        if live.total == self.cap {
            self.freed.notify_one();
        }
        if live.parked > 0 {
            self.unparking.notify_one();
        }
        live.total -= 1;
    }

    /// Notified when a place frees while the host is at its cap.
    pub(super) fn freed(&self) -> Arc<Notify> {
        self.freed.clone()
    }

    /// Reserves a place for one more agent of `account`, within the account's `max` and
    /// the host's cap.
    pub(super) fn reserve(self: &Arc<Self>, account: &str, max: u32) -> Result<Slot, Refusal> {
        let mut live = self.live.lock();
        let current = live.per_account.get(account).map_or(0, |a| a.admitted);
        if current >= max {
            return Err(Refusal::ConcurrentLimit { current, max });
        }
        if live.total >= self.cap {
            return Err(Refusal::AtCapacity { cap: self.cap });
        }
        live.total += 1;
        live.per_account
            .entry(account.to_string())
            .or_default()
            .admitted += 1;
        Ok(Slot {
            admission: self.clone(),
            account: account.to_string(),
            counted: true,
            placed: true,
        })
    }

    /// The most live agents this host admits.
    pub(super) fn cap(&self) -> u32 {
        self.cap
    }

    /// A place under the cap, if there is one, for an agent whose account is not known yet.
    pub(super) fn room(self: &Arc<Self>) -> Option<Room> {
        let mut live = self.live.lock();
        if live.total >= self.cap {
            return None;
        }
        live.total += 1;
        Some(Room {
            admission: Some(self.clone()),
        })
    }

    /// Counts a launched agent in: findable by id, its run time metered.
    pub(super) fn launched(&self, ctx: &Arc<AgentCtx>) {
        let mut live = self.live.lock();
        let offset = live.offset_ms(ctx.started);
        let launched = Launched {
            ctx: ctx.clone(),
            counted: true,
        };
        live.agents.insert(ctx.agent_id.clone(), launched);
        let a = live.per_account.entry(ctx.account.clone()).or_default();
        a.launched += 1;
        a.launched_sum_ms += offset;
    }

    /// Counts an agent whose run has ended out, and gives its place back.
    pub(super) fn ended(&self, ctx: &AgentCtx, mut slot: Slot) {
        let mut live = self.live.lock();
        let offset = live.offset_ms(ctx.started);
        if let Some(ended) = live.agents.remove(&ctx.agent_id) {
            slot.counted = ended.counted;
        }
        if let Some(a) = live.per_account.get_mut(&ctx.account) {
            a.launched -= 1;
            a.launched_sum_ms -= offset;
            if a.admitted == 0 && a.launched == 0 {
                live.per_account.remove(&ctx.account);
            }
        }
        drop(live);
        drop(slot);
    }

    /// Takes the ending agent `agent_id` out of its account's count (once), though it
    /// keeps its place under the host's cap: its record says (or is about to say) it ended.
    pub(super) fn release(&self, agent_id: &str) {
        let mut live = self.live.lock();
        let Some(launched) = live.agents.get_mut(agent_id) else {
            return;
        };
        if !std::mem::take(&mut launched.counted) {
            return;
        }
        let account = launched.ctx.account.clone();
        live.uncount(&account);
    }

    /// Takes a place among the parked agents for one about to give back its instance;
    /// false when they are at their bound (the agent then waits in its instance).
    pub(super) fn try_park(&self) -> bool {
        let mut live = self.live.lock();
        let room = live.parked < self.max_parked;
        live.parked += u32::from(room);
        room
    }

    /// Gives back the place under the cap of an agent whose run is over, its instance gone
    /// for good, before the host's work after it (extraction's Mind call, the record's
    /// end). That work needs no instance; holding a place through it would let agents
    /// waiting on a Mind connection fill the cap while the parked agents given those
    /// connections wait for a place to resume in: neither would move.
    pub(super) fn vacate_ended(&self, slot: &mut Slot) {
        if std::mem::take(&mut slot.placed) {
            self.give_back(&mut self.live.lock());
        }
    }

    /// Gives back the place under the cap of an agent that parked (its instance is gone):
    /// it is parked until it [reoccupies](Parked::reoccupy) one. Should it end otherwise —
    /// stopped, out of time, or its task dropped (at shutdown) — dropping what this returns
    /// takes a place again, past the cap for a moment if need be, for its slot to give
    /// back as any ending agent's.
    pub(super) fn vacate(self: &Arc<Self>) -> Parked {
        self.give_back(&mut self.live.lock());
        Parked {
            admission: self.clone(),
            parked: true,
        }
    }

    /// Waits for a place under the cap for a parked agent to resume in, and takes it. The
    /// waiters queue on [`Admission::unparking`], first come first served, each woken by
    /// one freed place: tens of thousands woken at once stay asleep until theirs.
    async fn reoccupy(&self) {
        loop {
            let mut woken = std::pin::pin!(self.unparking.notified());
            // In the queue before looking, so a place freed in between is not missed.
            woken.as_mut().enable();
            {
                let mut live = self.live.lock();
                if live.total < self.cap {
                    live.total += 1;
                    live.parked -= 1;
                    return;
                }
            }
            woken.await;
        }
    }

    /// A parked agent ends without resuming: see [`Admission::vacate`].
    fn unpark_ending(&self) {
        let mut live = self.live.lock();
        live.total += 1;
        live.parked -= 1;
    }

    /// Agents of `account` spawning or running on this host.
    pub(super) fn concurrent(&self, account: &str) -> u32 {
        let live = self.live.lock();
        live.per_account.get(account).map_or(0, |a| a.admitted)
    }

    /// Run time so far of the account's agents running on this host, in ms.
    pub(super) fn running_ms(&self, account: &str) -> u64 {
        let live = self.live.lock();
        let now = live.offset_ms(Instant::now());
        live.per_account
            .get(account)
            .map_or(0, |a| (a.launched * now).saturating_sub(a.launched_sum_ms))
    }

    /// The live agent `agent_id`, if it is.
    pub(super) fn agent(&self, agent_id: &str) -> Option<Arc<AgentCtx>> {
        self.live.lock().agents.get(agent_id).map(|l| l.ctx.clone())
    }

    /// Every live agent (launched, not yet ended).
    pub(super) fn agents(&self) -> Vec<Arc<AgentCtx>> {
        let live = self.live.lock();
        live.agents.values().map(|l| l.ctx.clone()).collect()
    }
}

impl Runtime {
    /// The most live agents this host admits.
    pub fn cap(&self) -> u32 {
        self.inner.admission.cap()
    }

    /// Agents spawning or running on this host in an instance.
    pub fn live(&self) -> u32 {
        self.inner.admission.live.lock().total
    }

    /// Agents running on this host without an instance: hibernated while a call waits.
    pub fn parked(&self) -> u32 {
        self.inner.admission.live.lock().parked
    }

    /// Whether agent `agent_id` has a run on this host that has not ended (a stopped agent
    /// stays live through its grace).
    pub fn is_live(&self, agent_id: &str) -> bool {
        self.inner.admission.agent(agent_id).is_some()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Admission, Refusal};

    #[test]
    fn a_room_holds_a_place_under_the_cap_until_it_becomes_a_slot_or_is_dropped() {
        let admission = Admission::new(2, 10);
        let room = admission.room().expect("room under the cap");
        let held = admission.reserve("acme", 5).unwrap();
        assert!(admission.room().is_none(), "the cap counts the room");
        assert_eq!(
            admission.reserve("acme", 5).err(),
            Some(Refusal::AtCapacity { cap: 2 })
        );
        drop(room);
        let slot = admission.room().unwrap().into_slot("acme");
        assert_eq!(
            admission.concurrent("acme"),
            2,
            "the slot counts as the account's"
        );
        drop((slot, held));
        assert_eq!(admission.concurrent("acme"), 0);
        assert_eq!(admission.live.lock().total, 0);
    }

    /// Awaits a waking agent's task, failing the test with `what` past 10 s.
    async fn ends_within_10_s(task: tokio::task::JoinHandle<()>, what: &str) {
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect(what)
            .unwrap();
    }

    #[tokio::test]
    async fn a_parked_agent_frees_its_place_under_the_cap_and_waits_for_one_to_wake() {
        let admission = Admission::new(1, 1);
        let slot = admission.reserve("acme", 5).unwrap();
        assert!(admission.try_park());
        assert!(
            !admission.try_park(),
            "parked agents have a bound of their own"
        );
        let mut parked = admission.vacate();
        let other = admission.reserve("acme", 5).expect("its place is free");
        assert_eq!(
            admission.concurrent("acme"),
            2,
            "a parked agent still counts for its account"
        );
        let waking = tokio::spawn(async move { parked.reoccupy().await });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waking.is_finished(), "the host is at its cap");
        drop(other);
        ends_within_10_s(waking, "woken once a place frees").await;
        assert_eq!(admission.live.lock().total, 1);
        assert!(admission.try_park(), "the woken agent is no longer parked");
        // Parked again, and stopped there: it takes a place back for its slot to give.
        let parked = admission.vacate();
        drop(parked);
        assert_eq!(admission.live.lock().total, 1);
        drop(slot);
        let live = admission.live.lock();
        assert_eq!((live.total, live.parked), (0, 0));
    }

    /// A parked agent whose task is dropped (at shutdown) leaves the parked and gives its
    /// place back once: nothing left counted, nothing counted twice.
    #[test]
    fn a_parked_agents_dropped_task_leaves_nothing_counted() {
        let admission = Admission::new(2, 2);
        let slot = admission.reserve("acme", 5).unwrap();
        assert!(admission.try_park());
        let parked = admission.vacate();
        drop((parked, slot));
        let live = admission.live.lock();
        assert_eq!((live.total, live.parked), (0, 0));
    }

    #[tokio::test]
    async fn parked_agents_resume_one_per_freed_place_first_come_first_served() {
        let admission = Admission::new(1, 10);
        let park = || {
            let slot = admission.reserve("acme", 5).unwrap();
            assert!(admission.try_park());
            (slot, admission.vacate())
        };
        let ((first, mut first_parked), (second, mut second_parked)) = (park(), park());
        let holder = admission.reserve("acme", 5).unwrap();
        let woken_first = tokio::spawn(async move { first_parked.reoccupy().await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let woken_second = tokio::spawn(async move { second_parked.reoccupy().await });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!woken_first.is_finished() && !woken_second.is_finished());
        drop(holder);
        ends_within_10_s(woken_first, "the first in line takes the freed place").await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!woken_second.is_finished(), "one place, one agent");
        drop(first);
        ends_within_10_s(woken_second, "the next freed place is the second's").await;
        drop(second);
        let live = admission.live.lock();
        assert_eq!((live.total, live.parked), (0, 0));
    }

    #[tokio::test]
    async fn a_place_freed_at_the_cap_wakes_the_freed_waiter_once() {
        let admission = Admission::new(2, 10);
        let freed = admission.freed();
        let first = admission.reserve("acme", 5).unwrap();
        drop(first);
        let woken = tokio::time::timeout(Duration::from_millis(50), freed.notified());
        assert!(woken.await.is_err(), "not full: nothing to tell");

        let (room, slot) = (
            admission.room().unwrap(),
            admission.reserve("acme", 5).unwrap(),
        );
        drop(room);
        freed.notified().await;
        drop(slot);
        let woken = tokio::time::timeout(Duration::from_millis(50), freed.notified());
        assert!(
            woken.await.is_err(),
            "only the place that left the cap wakes"
        );
    }
}
