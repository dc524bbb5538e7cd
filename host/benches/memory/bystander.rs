//! Tenant B, the bystander of the connection phases (`strangers`, `slow-readers`): it reads
//! one note of its own at a steady pace — a read on its kept-alive connection, one on a new
//! connection, a pause — idle, then for as long as a load runs, and the two are compared.
//! Idle and meanwhile, B reads at the same pace, so the two differ only by the load
//! (back-to-back reads find the cores awake and the caches warm, and would flatter the
//! idle figure).

use std::net::IpAddr;
use std::time::{Duration, Instant};

use serde_json::json;

use super::harness::Client;
use super::report::{Table, percentile_ms};

/// B's reads of each kind, idle.
const IDLE: usize = 300;
/// B's pause after each pair of reads.
const PAUSE: Duration = Duration::from_millis(20);
/// What B reads.
const NOTE: &str = "/api/v1/memory?key=note";

/// B's two clients.
pub struct Bystander {
    kept: Client,
    /// Its every request connects anew, and is timed with its connection.
    fresh: Client,
}

/// B's read times, by kind, and when each turn began.
#[derive(Default)]
pub struct Samples {
    kept: Vec<Duration>,
    fresh: Vec<Duration>,
    began: Vec<Instant>,
}

impl Samples {
    /// The kept-alive connection's reads (`kept`), or the new connections'.
    fn of(&self, kept: bool) -> &[Duration] {
        if kept { &self.kept } else { &self.fresh }
    }

    /// The turns that began at `from` or later.
    pub fn from(&self, from: Instant) -> Samples {
        let first = self.began.partition_point(|&t| t < from);
        Samples {
            kept: self.kept[first..].to_vec(),
            fresh: self.fresh[first..].to_vec(),
            began: self.began[first..].to_vec(),
        }
    }
}

impl Bystander {
    /// B at `base` with `key`, its connections from `source` (the default address when
    /// `None`); its note is put first.
    pub fn new(base: &str, key: &str, source: Option<IpAddr>) -> Self {
        let b = Self {
            kept: Client::from(base, key, source, true),
            fresh: Client::from(base, key, source, false),
        };
        b.kept.timed_post(
            "/api/v1/memory",
            &json!({ "key": "note", "value": "B's one note" }),
            &[201],
        );
        b
    }

    fn turn(&self, samples: &mut Samples) {
        samples.began.push(Instant::now());
        let timed = |client: &Client| {
            let started = Instant::now();
            assert_eq!(client.get(NOTE), 200);
            started.elapsed()
        };
        samples.kept.push(timed(&self.kept));
        samples.fresh.push(timed(&self.fresh));
        std::thread::sleep(PAUSE);
    }

    /// B's reads with nothing else going on.
    pub fn idle(&self) -> Samples {
        let mut samples = Samples::default();
        for _ in 0..IDLE {
            self.turn(&mut samples);
        }
        samples
    }

    /// B's reads for as long as `load` runs (on a thread of its own), and what it made.
    pub fn meanwhile<T: Send + 'static>(
        &self,
        load: impl FnOnce() -> T + Send + 'static,
    ) -> (Samples, T) {
        let load = std::thread::spawn(load);
        let mut samples = Samples::default();
        while !load.is_finished() {
            self.turn(&mut samples);
        }
        (samples, load.join().expect("the load's thread"))
    }
}

/// B's rows: each kind idle, then each of `busy` (named: "meanwhile", …) against the
/// target p99 ≤ 2 × its idle p99 + `slack_ms`.
pub fn report(
    table: &mut Table,
    section: &str,
    idle: &Samples,
    busy: &[(&str, &Samples)],
    slack_ms: f64,
) {
    let tenth = |ms: f64| (ms * 10.0).round() / 10.0;
    for (kind, kept) in [
        ("kept-alive connection", true),
        ("new connection each", false),
    ] {
        table.latency(
            section,
            &format!("B GET, {kind}, idle"),
            idle.of(kept),
            None,
        );
        let target = tenth(2.0 * percentile_ms(idle.of(kept), 0.99) + slack_ms);
        for (when, samples) in busy {
            let samples = samples.of(kept);
            table.latency(
                section,
                &format!("B GET, {kind}, {when} ({} samples)", samples.len()),
                samples,
                Some(target),
            );
        }
    }
}
