//! Operational metrics, exposed in the Prometheus text format at `GET /metrics`.
//!
//! The code that does the work emits through the `metrics` facade (`counter!`,
//! `histogram!`, `gauge!`) under the names of [`names`]; that is a facade, not HTTP, so the
//! domain stays free of the server. Until a recorder is installed every emission is a
//! no-op: tests and benchmarks record nothing unless they set a local recorder. `serve`
//! installs the Prometheus recorder once ([`Exporter::install`]) when the `[metrics]`
//! section ([`MetricsConfig`]) enables it; the API renders it. Figures that are cheaper to
//! read than to track (live agents, memories per plan) are set at scrape time
//! ([`scrape`]).

mod config;
mod exporter;
pub mod names;
pub mod scrape;
#[cfg(test)]
pub(crate) mod testing;

pub use config::MetricsConfig;
pub use exporter::Exporter;
