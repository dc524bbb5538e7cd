//! For unit tests: what instrumented code emitted, captured by a local debugging recorder
//! (never the global one, which `serve` owns).

use std::future::Future;

use metrics_util::{
    CompositeKey,
    debugging::{DebugValue, DebuggingRecorder},
};

/// Every series a closure emitted, with its last value.
pub struct Captured(Vec<(CompositeKey, DebugValue)>);

impl Captured {
    fn find(&self, name: &str, labels: &[(&str, &str)]) -> Option<&DebugValue> {
        self.0.iter().find_map(|(key, value)| {
            let key = key.key();
            let mut got: Vec<(&str, &str)> = key.labels().map(|l| (l.key(), l.value())).collect();
            let mut want = labels.to_vec();
            got.sort_unstable();
            want.sort_unstable();
            (key.name() == name && got == want).then_some(value)
        })
    }

    /// The counter `name` with exactly `labels`, if emitted.
    pub fn counter(&self, name: &str, labels: &[(&str, &str)]) -> Option<u64> {
        match self.find(name, labels)? {
            DebugValue::Counter(n) => Some(*n),
            other => panic!("{name} is not a counter: {other:?}"),
        }
    }

    /// The gauge `name` with exactly `labels`, if emitted.
    pub fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        match self.find(name, labels)? {
            DebugValue::Gauge(v) => Some(v.into_inner()),
            other => panic!("{name} is not a gauge: {other:?}"),
        }
    }

    /// The samples of histogram `name` with exactly `labels`, if emitted.
    pub fn histogram(&self, name: &str, labels: &[(&str, &str)]) -> Option<Vec<f64>> {
        match self.find(name, labels)? {
            DebugValue::Histogram(v) => Some(v.iter().map(|x| x.into_inner()).collect()),
            other => panic!("{name} is not a histogram: {other:?}"),
        }
    }

    /// How many series were emitted under `name`.
    pub fn series(&self, name: &str) -> usize {
        self.0
            .iter()
            .filter(|(k, _)| k.key().name() == name)
            .count()
    }
}

/// Runs `f` with a fresh debugging recorder as this thread's recorder; handles `f` made
/// keep recording into it afterwards (as the embedding threads do) until `snapshot`.
pub fn capture<T>(f: impl FnOnce() -> T) -> (T, Snapshotter) {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let out = metrics::with_local_recorder(&recorder, f);
    (out, Snapshotter(snapshotter))
}

/// Runs `fut` to completion on a current-thread runtime under a fresh debugging recorder
/// (every task of that runtime runs on this thread, so every emission is seen); returns
/// its output and what was emitted.
pub fn capture_async<T>(fut: impl Future<Output = T>) -> (T, Captured) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    let (out, snapshotter) = capture(|| runtime.block_on(fut));
    (out, snapshotter.snapshot())
}

/// Reads a capture's recorder, now or later.
pub struct Snapshotter(metrics_util::debugging::Snapshotter);

impl Snapshotter {
    /// Every series emitted since the previous snapshot: a snapshot consumes what it
    /// reports (counters and gauges start again from 0, histograms empty).
    pub fn snapshot(&self) -> Captured {
        Captured(
            self.0
                .snapshot()
                .into_vec()
                .into_iter()
                .map(|(key, _, _, value)| (key, value))
                .collect(),
        )
    }
}
