//! Timing samples for the agent benchmarks: when each agent was instantiated, marked
//! running, asked to stop and dropped, and what its journal cost each host call. Kept only
//! with the `bench` feature; otherwise the [`Recorder`] and [`Stopwatch`] are empty and
//! their calls compile to nothing, so serving pays neither a lock nor a clock read.

#[cfg(feature = "bench")]
pub use on::{Recorder, Stopwatch, Timings};

#[cfg(not(feature = "bench"))]
pub use off::{Recorder, Stopwatch};

#[cfg(feature = "bench")]
mod on {
    use std::{
        collections::VecDeque,
        time::{Duration, Instant},
    };

    use parking_lot::Mutex;

    /// Samples of each kind kept (the newest).
    const KEPT: usize = 16_384;

    /// Statistics of recent agents, newest last, at most 16,384 of each kind. Instants are
    /// `std::time::Instant`s of this process, comparable with a caller's own.
    #[derive(Debug, Default)]
    pub struct Timings {
        /// How long `InstancePre` instantiation took, per agent.
        pub instantiate: VecDeque<(String, Duration)>,
        /// When each agent's record was committed as `running`.
        pub running: VecDeque<(String, Instant)>,
        /// When a stop was first requested of each live agent (its grace starts here).
        pub stop_requested: VecDeque<(String, Instant)>,
        /// When each agent's `Store` was dropped (its run over, whatever the outcome).
        pub dropped: VecDeque<(String, Instant)>,
        /// Each journaled host call's function and the time its journal took: the replay
        /// check, then for a live call keeping and storing its entry (the call itself not
        /// counted).
        pub journaled: VecDeque<(String, (&'static str, Duration))>,
    }

    fn note<T>(samples: &mut VecDeque<(String, T)>, id: &str, value: T) {
        if samples.len() == KEPT {
            samples.pop_front();
        }
        samples.push_back((id.to_string(), value));
    }

    /// Where the supervisor notes its samples.
    #[derive(Default)]
    pub struct Recorder(Mutex<Timings>);

    /// Times a span for a sample.
    pub struct Stopwatch(Instant);

    impl Stopwatch {
        pub fn start() -> Self {
            Self(Instant::now())
        }

        pub fn elapsed(&self) -> Duration {
            self.0.elapsed()
        }
    }

    impl Recorder {
        pub fn new() -> Self {
            Self::default()
        }

        pub fn instantiated(&self, id: &str, took: Duration) {
            note(&mut self.0.lock().instantiate, id, took);
        }

        pub fn running(&self, id: &str) {
            note(&mut self.0.lock().running, id, Instant::now());
        }

        pub fn stop_requested(&self, id: &str) {
            note(&mut self.0.lock().stop_requested, id, Instant::now());
        }

        pub fn dropped(&self, id: &str) {
            note(&mut self.0.lock().dropped, id, Instant::now());
        }

        pub fn journaled(&self, id: &str, func: &'static str, took: Duration) {
            note(&mut self.0.lock().journaled, id, (func, took));
        }

        /// The samples since the last call, leaving none behind.
        pub fn take(&self) -> Timings {
            std::mem::take(&mut *self.0.lock())
        }
    }
}

#[cfg(not(feature = "bench"))]
mod off {
    use std::time::Duration;

    /// Records nothing: benchmarks build with the `bench` feature.
    #[derive(Default)]
    pub struct Recorder;

    /// Reads no clock: every span it times is zero.
    pub struct Stopwatch;

    impl Stopwatch {
        pub fn start() -> Self {
            Self
        }

        pub fn elapsed(&self) -> Duration {
            Duration::ZERO
        }
    }

    impl Recorder {
        pub fn new() -> Self {
            Self
        }

        pub fn instantiated(&self, _id: &str, _took: Duration) {}

        pub fn running(&self, _id: &str) {}

        pub fn stop_requested(&self, _id: &str) {}

        pub fn dropped(&self, _id: &str) {}

        pub fn journaled(&self, _id: &str, _func: &'static str, _took: Duration) {}
    }
}
