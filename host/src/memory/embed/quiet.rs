//! Requests being served, which the bulk lane's spare workers stand aside for.
//!
//! The bulk lane's threads run at background priority, yet here a request's thread that
//! wakes while they hold both cores often waits for one of them for up to a scheduler tick
//! (4 ms at 250 Hz), at nice +10 and at `SCHED_IDLE` alike (seen with `perf sched`). With
//! every core running an import's inference, each step of a put or a search — its HTTP
//! read, its query's inference, its database statements — can wait a tick, and a search's
//! dozen steps add up (postgres, B's search p99 during A's import: 21.6–24.4 ms with both
//! bulk workers running, 15.8–17.5 ms with the spares standing aside; BENCHMARKS.md). So
//! the first bulk worker always runs, and the others take work only once no put or search
//! has been served for [`QUIET`]: while requests come, a core is left for them; when they
//! stop, an import has every core.

use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// How long after the last request the spare bulk workers wait before taking work: longer
/// than the gap between one client's requests, so a busy client keeps its core.
pub const QUIET: Duration = Duration::from_millis(10);

/// Requests in flight, and when the last one ended.
pub struct Serving {
    state: Mutex<State>,
    changed: Condvar,
    quiet: Duration,
}

#[derive(Default)]
struct State {
    in_flight: usize,
    /// When the count last fell to zero; `None` before any request.
    last_end: Option<Instant>,
}

/// A request being served, counted until dropped.
pub struct Request<'a>(&'a Serving);

impl Serving {
    pub fn new(quiet: Duration) -> Self {
        Self {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            quiet,
        }
    }

    /// Counts a request (a put, a search) until the guard is dropped.
    pub fn request(&self) -> Request<'_> {
        self.state.lock().in_flight += 1;
        Request(self)
    }

    /// Blocks the calling thread until no request is in flight and none has ended for the
    /// quiet period.
    pub fn wait_quiet(&self) {
        let mut state = self.state.lock();
        loop {
            if state.in_flight > 0 {
                self.changed.wait(&mut state);
                continue;
            }
            let since = state.last_end.map_or(self.quiet, |end| end.elapsed());
            if since >= self.quiet {
                return;
            }
            self.changed.wait_for(&mut state, self.quiet - since);
        }
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state.lock();
        state.in_flight -= 1;
        if state.in_flight == 0 {
            state.last_end = Some(Instant::now());
            self.0.changed.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{
        sync::{Arc, mpsc},
        time::{Duration, Instant},
    };

    use super::Serving;

    #[test]
    fn with_no_request_ever_the_spares_go_at_once() {
        let serving = Serving::new(Duration::from_secs(60));
        serving.wait_quiet();
    }

    #[test]
    fn the_spares_wait_for_the_last_request_and_then_the_quiet_period() {
        let quiet = Duration::from_millis(50);
        let serving = Arc::new(Serving::new(quiet));
        let (first, second) = (serving.request(), serving.request());
        let (done, waited) = mpsc::channel();
        let spare = {
            let serving = Arc::clone(&serving);
            std::thread::spawn(move || {
                serving.wait_quiet();
                done.send(Instant::now()).unwrap();
            })
        };
        drop(first);
        assert!(
            waited.recv_timeout(Duration::from_millis(200)).is_err(),
            "went while a request was in flight"
        );
        let ended = Instant::now();
        drop(second);
        let went = waited.recv_timeout(Duration::from_secs(10)).expect("went");
        assert!(
            went.duration_since(ended) >= quiet,
            "went before the quiet period"
        );
        spare.join().unwrap();
    }
}
