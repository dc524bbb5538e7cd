//! Per-key spawn rate limits on two rolling windows (§8): 60 s and 3,600 s. Each key has
//! its own buckets; only admitted spawns are counted. Kept in memory: a restart forgets
//! the windows (documented).

use std::{
    collections::{HashMap, VecDeque},
    time::{Duration, Instant},
};

use parking_lot::Mutex;

/// Which rolling window refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Minute,
    Hour,
}

impl Window {
    /// The spelling of `details.window`.
    pub fn as_str(self) -> &'static str {
        match self {
            Window::Minute => "minute",
            Window::Hour => "hour",
        }
    }
}

/// A refused spawn: which window, and the whole seconds until it admits one again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateRefusal {
    pub window: Window,
    pub retry_after_secs: u64,
}

const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3_600);

/// Spawn times of every key within the last hour.
#[derive(Default)]
pub struct RateLimiter {
    keys: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl RateLimiter {
    /// Spawns counted for `key` in the 60 s and the 3,600 s before `now` (for the usage
    /// the console shows; nothing is counted).
    pub fn used(&self, key: &str, now: Instant) -> (u32, u32) {
        let keys = self.keys.lock();
        let Some(times) = keys.get(key) else {
            return (0, 0);
        };
        let within = |span: Duration| {
            times
                .iter()
                .filter(|t| now.duration_since(**t) < span)
                .count() as u32
        };
        (within(MINUTE), within(HOUR))
    }

    /// Admits and counts one spawn for `key` at `now`, or says which window is full.
    pub fn try_acquire(
        &self,
        key: &str,
        per_minute: u32,
        per_hour: u32,
        now: Instant,
    ) -> Result<(), RateRefusal> {
        let mut keys = self.keys.lock();
        let times = keys.entry(key.to_string()).or_default();
        while times
            .front()
            .is_some_and(|t| now.duration_since(*t) >= HOUR)
        {
            times.pop_front();
        }
        let in_minute = times
            .iter()
            .rev()
            .take_while(|t| now.duration_since(**t) < MINUTE)
            .count();
        let refuse = |window: Window, oldest: Instant, span: Duration| RateRefusal {
            window,
            retry_after_secs: (span.saturating_sub(now.duration_since(oldest)))
                .as_secs_f64()
                .ceil()
                .max(1.0) as u64,
        };
        if in_minute >= per_minute as usize {
            let oldest = times[times.len() - in_minute];
            return Err(refuse(Window::Minute, oldest, MINUTE));
        }
        if times.len() >= per_hour as usize {
            return Err(refuse(Window::Hour, times[0], HOUR));
        }
        times.push_back(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minute_then_hour_windows_roll() {
        let r = RateLimiter::default();
        let t0 = Instant::now();
        for i in 0..5 {
            r.try_acquire("k", 5, 7, t0 + Duration::from_secs(i))
                .unwrap();
        }
        let refused = r
            .try_acquire("k", 5, 7, t0 + Duration::from_secs(10))
            .unwrap_err();
        assert_eq!(
            refused,
            RateRefusal {
                window: Window::Minute,
                retry_after_secs: 50
            }
        );
        // Other keys have their own buckets.
        r.try_acquire("other", 5, 7, t0 + Duration::from_secs(10))
            .unwrap();
        // The minute rolls over; the hour fills.
        r.try_acquire("k", 5, 7, t0 + Duration::from_secs(61))
            .unwrap();
        r.try_acquire("k", 5, 7, t0 + Duration::from_secs(62))
            .unwrap();
        let refused = r
            .try_acquire("k", 5, 7, t0 + Duration::from_secs(130))
            .unwrap_err();
        assert_eq!(
            refused,
            RateRefusal {
                window: Window::Hour,
                retry_after_secs: 3_470
            }
        );
        r.try_acquire("k", 5, 7, t0 + Duration::from_secs(3_601))
            .unwrap();
    }

    #[test]
    fn used_counts_each_window_without_counting() {
        let r = RateLimiter::default();
        let t0 = Instant::now();
        assert_eq!(r.used("k", t0), (0, 0));
        for i in [0, 30, 100] {
            r.try_acquire("k", 5, 7, t0 + Duration::from_secs(i))
                .unwrap();
        }
        assert_eq!(r.used("k", t0 + Duration::from_secs(120)), (1, 3));
        assert_eq!(r.used("k", t0 + Duration::from_secs(120)), (1, 3));
        assert_eq!(r.used("k", t0 + Duration::from_secs(3_650)), (0, 1));
        assert_eq!(r.used("other", t0), (0, 0));
    }
}
