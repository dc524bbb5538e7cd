//! The server's log: tracing to stderr, filtered by `WASMIND_LOG` (default `info`), as text
//! for people or one JSON object per line for log collectors. Each HTTP request's line
//! carries its `x-request-id` through the request's span (see `api::front`).

use std::io::IsTerminal;

use clap::ValueEnum;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, the current span's fields (the request id) included.
    Json,
}

/// Installs the global subscriber; a second call (tests, benches) changes nothing.
pub fn init(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("WASMIND_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never into files or collectors.
        .with_ansi(std::io::stderr().is_terminal());
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
