//! The Prometheus recorder: built once with every histogram's buckets, installed as the
//! process's global recorder by `serve`, and rendered in the text exposition format.

use std::time::Duration;

use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};

use super::names::{self, Kind};

/// How often histogram samples are folded into their buckets between scrapes, so memory
/// stays bounded when nobody scrapes.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The installed recorder's handle; cheap to clone.
#[derive(Clone, Debug)]
pub struct Exporter {
    handle: PrometheusHandle,
}

impl Exporter {
    /// Installs the Prometheus recorder as the global one and describes every metric.
    /// Call once per process, before the services that emit are built; a second call fails.
    pub fn install() -> anyhow::Result<Self> {
        let recorder = recorder();
        let handle = recorder.handle();
        metrics::set_global_recorder(recorder)
            .map_err(|e| anyhow::anyhow!("installing the metrics recorder: {e}"))?;
        names::describe();
        Ok(Self { handle })
    }

    /// Folds histogram samples into buckets every few seconds, for as long as the tokio
    /// runtime it is called on runs.
    pub fn spawn_upkeep(&self) {
        let handle = self.handle.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(UPKEEP_EVERY);
            loop {
                every.tick().await;
                handle.run_upkeep();
            }
        });
    }

    /// Everything recorded so far, in the Prometheus text format.
    pub fn render(&self) -> String {
        self.handle.render()
    }
}

/// A recorder with every histogram's buckets from [`names::ALL`] (rendered as Prometheus
/// histograms, not summaries).
fn recorder() -> PrometheusRecorder {
    let mut builder = PrometheusBuilder::new();
    for m in names::ALL {
        if let Kind::Histogram(buckets) = m.kind {
            builder = builder
                .set_buckets_for_metric(Matcher::Full(m.name.into()), buckets)
                .expect("every histogram has buckets");
        }
    }
    builder.build_recorder()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_have_buckets_and_every_series_its_help() {
        let recorder = recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            names::describe();
            metrics::histogram!(names::SEARCH_DURATION, "mode" => "keyword").record(0.003);
            metrics::counter!(names::AGENTS_SPAWNED).increment(2);
        });
        let text = handle.render();
        assert!(
            text.contains("# TYPE wasmind_memory_search_duration_seconds histogram"),
            "{text}"
        );
        assert!(
            text.contains(
                "wasmind_memory_search_duration_seconds_bucket{mode=\"keyword\",le=\"0.0025\"} 0"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "wasmind_memory_search_duration_seconds_bucket{mode=\"keyword\",le=\"0.005\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains("# HELP wasmind_agents_spawned_total Agent spawns admitted."),
            "{text}"
        );
        assert!(text.contains("wasmind_agents_spawned_total 2"), "{text}");
    }
}
