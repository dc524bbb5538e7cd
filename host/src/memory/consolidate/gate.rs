//! Keeps consolidation out of a loop: at most one consolidation per account at a time, and
//! a cooldown after one that wrote something (each call spends the Mind's tokens). Kept in
//! memory: a restart forgets running calls (there are none) and cooldowns.

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use parking_lot::Mutex;

/// Why a consolidation may not start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Another consolidation of the account is running.
    InProgress,
    /// One wrote something less than the cooldown ago; `remaining` is left of it.
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

/// Per-account consolidation state; cheap to clone.
#[derive(Clone)]
pub struct Gate {
    cooldown: Duration,
    slots: Arc<Mutex<HashMap<String, Slot>>>,
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

    /// Lets one consolidation of `account` start, or says why not. The account is busy
    /// until the permit is dropped — also when the caller's future is dropped mid-way.
    pub fn enter(&self, account: &str) -> Result<Permit, Refusal> {
        let now = (self.now)();
        let mut slots = self.slots.lock();
        slots.retain(|_, slot| !matches!(slot, Slot::CoolingUntil(until) if *until <= now));
        match slots.get(account) {
            Some(Slot::Running) => return Err(Refusal::InProgress),
            Some(Slot::CoolingUntil(until)) => {
                return Err(Refusal::CoolingDown {
                    remaining: *until - now,
                });
            }
            None => {}
        }
        slots.insert(account.to_string(), Slot::Running);
        Ok(Permit {
            gate: self.clone(),
            account: account.to_string(),
            wrote: false,
        })
    }
}

/// One running consolidation.
pub struct Permit {
    gate: Gate,
    account: String,
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
                std::mem::take(&mut self.account),
                Slot::CoolingUntil((self.gate.now)() + self.gate.cooldown),
            ),
            false => slots.remove(&self.account),
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
        gate.enter(account).unwrap().writing();
    }

    fn cooling(remaining: Duration) -> Option<Refusal> {
        Some(Refusal::CoolingDown { remaining })
    }

    #[test]
    fn one_at_a_time_per_account() {
        let gate = Gate::new(Duration::from_secs(60));
        let first = gate.enter("a").unwrap();
        assert_eq!(gate.enter("a").err(), Some(Refusal::InProgress));
        let other = gate.enter("b").unwrap();
        drop(first);
        drop(other);
        // Nothing was written: no cooldown.
        drop(gate.enter("a").unwrap());
    }

    #[test]
    fn cooldown_after_a_write() {
        let clock = HandClock::new();
        let gate = clock.gate(Duration::from_secs(60));
        wrote(&gate, "a");
        clock.advance(Duration::from_secs(1));
        match gate.enter("a") {
            Err(Refusal::CoolingDown { remaining }) => {
                assert!(
                    remaining <= Duration::from_secs(60) && remaining > Duration::from_secs(58)
                );
                assert_eq!(remaining, Duration::from_secs(59));
            }
            other => panic!("expected a cooldown, got {:?}", other.err()),
        }
        assert!(gate.enter("b").is_ok());
    }

    #[test]
    fn zero_cooldown_disables_it() {
        let gate = Gate::new(Duration::ZERO);
        wrote(&gate, "a");
        assert!(gate.enter("a").is_ok());
    }

    #[test]
    fn cooldowns_expire() {
        let clock = HandClock::new();
        let gate = clock.gate(Duration::from_millis(20));
        wrote(&gate, "a");
        assert!(gate.enter("a").is_err());
        clock.advance(Duration::from_millis(19));
        assert_eq!(gate.enter("a").err(), cooling(Duration::from_millis(1)));
        clock.advance(Duration::from_millis(1));
        assert!(gate.enter("a").is_ok());
    }

    #[test]
    fn the_cooldown_runs_from_the_end_of_the_write() {
        let clock = HandClock::new();
        let gate = clock.gate(Duration::from_secs(60));
        let mut permit = gate.enter("a").unwrap();
        permit.writing();
        clock.advance(Duration::from_secs(30));
        drop(permit);
        clock.advance(Duration::from_secs(59));
        assert_eq!(gate.enter("a").err(), cooling(Duration::from_secs(1)));
    }
}
