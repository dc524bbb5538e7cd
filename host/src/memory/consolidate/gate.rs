//! Keeps consolidation out of a loop: at most one consolidation per namespace of an account
//! at a time, and a cooldown after one that wrote something (each call spends the Mind's
//! tokens). A consolidation of the whole account (no namespace given) covers every
//! namespace: it waits for all of them, and each waits for it. So an account with one
//! namespace per end user consolidates them back to back. Kept in memory: a restart
//! forgets running calls (there are none) and cooldowns.

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use parking_lot::Mutex;

/// Why a consolidation may not start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Another consolidation of the namespace (or of the whole account) is running.
    InProgress,
    /// One of the namespace (or of the whole account) wrote something less than the
    /// cooldown ago; `remaining` is left of it.
    CoolingDown { remaining: Duration },
}

#[derive(Debug, Clone, Copy)]
enum Slot {
    Running,
    CoolingUntil(Instant),
}

/// Where a gate reads the time: the monotonic clock, or a test's hand-moved one (so a test
/// of cooldowns says exactly when, instead of sleeping past them).
type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// What one consolidation covers: an account's namespace, or (`None`) all of them.
type Scope = (String, Option<String>);

/// Consolidation state per account and namespace; cheap to clone.
#[derive(Clone)]
pub struct Gate {
    cooldown: Duration,
    slots: Arc<Mutex<HashMap<Scope, Slot>>>,
    now: Clock,
}

impl Gate {
    /// A gate with `cooldown` after each consolidation that wrote (zero: none).
    pub fn new(cooldown: Duration) -> Self {
        Self::with_clock(cooldown, Arc::new(Instant::now))
    }

    fn with_clock(cooldown: Duration, now: Clock) -> Self {
        Self {
            cooldown,
            slots: Arc::default(),
            now,
        }
    }

    /// The configured cooldown.
    pub fn cooldown(&self) -> Duration {
        self.cooldown
    }

    /// Lets one consolidation of `account`'s `namespace` (or, `None`, of all its
    /// namespaces) start, or says why not. The scope is busy until the permit is dropped —
    /// also when the caller's future is dropped mid-way.
    pub fn enter(&self, account: &str, namespace: Option<&str>) -> Result<Permit, Refusal> {
        let now = (self.now)();
        let mut slots = self.slots.lock();
        slots.retain(|_, slot| !matches!(slot, Slot::CoolingUntil(until) if *until <= now));
        let overlapping = slots.iter().filter(|((a, ns), _)| {
            a == account && (ns.is_none() || namespace.is_none() || ns.as_deref() == namespace)
        });
        let mut longest = None;
        for (_, slot) in overlapping {
            match slot {
                Slot::Running => return Err(Refusal::InProgress),
                Slot::CoolingUntil(until) => longest = longest.max(Some(*until - now)),
            }
        }
        if let Some(remaining) = longest {
            return Err(Refusal::CoolingDown { remaining });
        }
        let scope = (account.to_string(), namespace.map(str::to_string));
        slots.insert(scope.clone(), Slot::Running);
        Ok(Permit {
            gate: self.clone(),
            scope,
            wrote: false,
        })
    }
}

/// One running consolidation.
pub struct Permit {
    gate: Gate,
    scope: Scope,
    wrote: bool,
}

impl Permit {
    /// Marks the consolidation as writing: the cooldown starts when it ends. Called before
    /// the write is submitted, since a submitted write commits even if the caller goes.
    pub fn writing(&mut self) {
        self.wrote = true;
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut slots = self.gate.slots.lock();
        match self.wrote && !self.gate.cooldown.is_zero() {
            true => slots.insert(
                std::mem::take(&mut self.scope),
                Slot::CoolingUntil((self.gate.now)() + self.gate.cooldown),
            ),
            false => slots.remove(&self.scope),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock that moves only when told to.
    #[derive(Clone)]
    struct HandClock(Arc<Mutex<Instant>>);

    impl HandClock {
        fn new() -> Self {
            Self(Arc::new(Mutex::new(Instant::now())))
        }

        fn advance(&self, by: Duration) {
            *self.0.lock() += by;
        }

        fn gate(&self, cooldown: Duration) -> Gate {
            let clock = self.clone();
            Gate::with_clock(cooldown, Arc::new(move || *clock.0.lock()))
        }
    }

    /// One consolidation of `account` that wrote, from start to end.
    fn wrote(gate: &Gate, account: &str) {
        gate.enter(account, None).unwrap().writing();
    }

    fn cooling(remaining: Duration) -> Option<Refusal> {
        Some(Refusal::CoolingDown { remaining })
    }

    #[test]
    fn one_at_a_time_per_account() {
        let gate = Gate::new(Duration::from_secs(60));
        let first = gate.enter("a", None).unwrap();
        assert_eq!(gate.enter("a", None).err(), Some(Refusal::InProgress));
        let other = gate.enter("b", None).unwrap();
        drop(first);
        drop(other);
        // Nothing was written: no cooldown.
        drop(gate.enter("a", None).unwrap());
    }

    #[test]
    fn cooldown_after_a_write() {
        let clock = HandClock::new();
        let gate = clock.gate(Duration::from_secs(60));
        wrote(&gate, "a");
        clock.advance(Duration::from_secs(1));
        match gate.enter("a", None) {
            Err(Refusal::CoolingDown { remaining }) => {
                assert!(
                    remaining <= Duration::from_secs(60) && remaining > Duration::from_secs(58)
                );
                assert_eq!(remaining, Duration::from_secs(59));
            }
            other => panic!("expected a cooldown, got {:?}", other.err()),
        }
        assert!(gate.enter("b", None).is_ok());
    }

    #[test]
    fn zero_cooldown_disables_it() {
        let gate = Gate::new(Duration::ZERO);
        wrote(&gate, "a");
        assert!(gate.enter("a", None).is_ok());
    }

    #[test]
    fn cooldowns_expire() {
        let clock = HandClock::new();
        let gate = clock.gate(Duration::from_millis(20));
        wrote(&gate, "a");
        assert!(gate.enter("a", None).is_err());
        clock.advance(Duration::from_millis(19));
        assert_eq!(
            gate.enter("a", None).err(),
            cooling(Duration::from_millis(1))
        );
        clock.advance(Duration::from_millis(1));
        assert!(gate.enter("a", None).is_ok());
    }

    #[test]
    fn the_cooldown_runs_from_the_end_of_the_write() {
        let clock = HandClock::new();
        let gate = clock.gate(Duration::from_secs(60));
        let mut permit = gate.enter("a", None).unwrap();
        permit.writing();
        clock.advance(Duration::from_secs(30));
        drop(permit);
        clock.advance(Duration::from_secs(59));
        assert_eq!(gate.enter("a", None).err(), cooling(Duration::from_secs(1)));
    }

    #[test]
    fn namespaces_are_gated_apart_and_the_whole_account_covers_them_all() {
        let clock = HandClock::new();
        let gate = clock.gate(Duration::from_secs(60));
        let mut first = gate.enter("a", Some("alice")).unwrap();
        assert_eq!(
            gate.enter("a", Some("alice")).err(),
            Some(Refusal::InProgress)
        );
        assert_eq!(gate.enter("a", None).err(), Some(Refusal::InProgress));
        first.writing();
        drop(first);
        let mut bob = gate
            .enter("a", Some("bob"))
            .expect("another namespace at once");
        bob.writing();
        clock.advance(Duration::from_secs(10));
        drop(bob);
        assert_eq!(
            gate.enter("a", Some("alice")).err(),
            cooling(Duration::from_secs(50))
        );
        // The whole account waits for its longest cooldown.
        assert_eq!(
            gate.enter("a", None).err(),
            cooling(Duration::from_secs(60))
        );
        assert!(gate.enter("b", None).is_ok(), "another account is apart");
        clock.advance(Duration::from_secs(60));
        let mut whole = gate.enter("a", None).unwrap();
        assert_eq!(
            gate.enter("a", Some("carol")).err(),
            Some(Refusal::InProgress)
        );
        whole.writing();
        drop(whole);
        assert_eq!(
            gate.enter("a", Some("carol")).err(),
            cooling(Duration::from_secs(60))
        );
    }
}
