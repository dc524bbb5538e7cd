//! Every metric's name, in one place: the code that emits one and the exporter that
//! describes it both name it through these constants, never a copied string. Names follow
//! Prometheus' conventions: a `wasmind_` prefix, the unit in the name (`_seconds`, base
//! units), `_total` on counters. [`ALL`] gives each its kind, unit, help text and, for
//! histograms, buckets.

use metrics::Unit;

/// HTTP requests answered, by `method`, `route` (the matched route template, `unmatched`
/// for none) and `status`.
pub const HTTP_REQUESTS: &str = "wasmind_http_requests_total";
/// Time to answer an HTTP request, by `method` and `route`.
pub const HTTP_REQUEST_DURATION: &str = "wasmind_http_request_duration_seconds";
/// Agents spawning or running now in an instance (set at scrape time from the runtime's
/// admission).
pub const AGENTS_LIVE: &str = "wasmind_agents_live";
/// Agents running now without an instance: hibernated while a call waits (set at scrape
/// time).
pub const AGENTS_PARKED: &str = "wasmind_agents_parked";
/// Spawns admitted.
pub const AGENTS_SPAWNED: &str = "wasmind_agents_spawned_total";
/// Agents that reached a terminal `status` (`completed`, `stopped`, `failed`).
pub const AGENTS_ENDED: &str = "wasmind_agents_ended_total";
/// Spawns refused, by `reason`.
pub const SPAWNS_REFUSED: &str = "wasmind_spawns_refused_total";
/// Spawns of uploaded components, by `from`: `cache` (linked and ready) or `artifact`
/// (loaded from the precompiled artifact on disk and linked).
pub const COMPONENT_LOADS: &str = "wasmind_component_loads_total";
/// Mind calls made, by `call` (`complete`, `extract`, `summarize`, `title`).
pub const MIND_CALLS: &str = "wasmind_mind_calls_total";
/// Mind calls that failed after their retries, by `call` and `error`.
pub const MIND_FAILURES: &str = "wasmind_mind_failures_total";
/// Attempts at a remote provider that failed transiently and were retried.
pub const MIND_RETRIES: &str = "wasmind_mind_retries_total";
/// Time a Mind call took, retries included, by `call`.
pub const MIND_CALL_DURATION: &str = "wasmind_mind_call_duration_seconds";
/// Tokens the Mind reported, by `type` (`input`, `output`).
pub const MIND_TOKENS: &str = "wasmind_mind_tokens_total";
/// Agents' outgoing HTTP requests made live, by `outcome`: `answered`, `failed`, or the
/// rule that refused it (`allowlist`, `address`, `budget`, `journal`).
pub const AGENT_HTTP_REQUESTS: &str = "wasmind_agent_http_requests_total";
/// Bytes of agents' outgoing HTTP (request and response bodies), made live.
pub const AGENT_HTTP_BYTES: &str = "wasmind_agent_http_bytes_total";
/// Texts waiting for an embedding thread, by `lane` (`bulk`, `query`).
pub const EMBED_QUEUE: &str = "wasmind_embed_queue_texts";
/// Time one embedding batch took, by `lane`.
pub const EMBED_BATCH_DURATION: &str = "wasmind_embed_batch_duration_seconds";
/// Accounts on each `plan`, by their `subscription`'s status at the payment provider
/// (`none` without one; set at scrape time).
pub const ACCOUNTS: &str = "wasmind_accounts";
/// Live memories of the accounts on each `plan` (set at scrape time).
pub const MEMORIES_LIVE: &str = "wasmind_memories_live";
/// Time a memory search took (query embedding included), by `mode` and `rerank`.
pub const SEARCH_DURATION: &str = "wasmind_memory_search_duration_seconds";

/// Stored versions of a re-embedding asked for at this start, by `part`: `done` (with a
/// vector of the target embedder) and `all` (set at scrape time).
pub const REEMBED_VECTORS: &str = "wasmind_memory_reembed_vectors";
/// 1 for the re-embedding's `state` (`pending`, `running`, `done`, `failed`), 0 for the
/// others (set at scrape time).
pub const REEMBED_STATE: &str = "wasmind_memory_reembed_state";

/// Upper bounds (seconds) for latencies of a fraction of a millisecond to seconds: HTTP
/// requests, searches, embedding batches.
const FAST: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Upper bounds (seconds) for a Mind call: the offline Mind answers in microseconds, a
/// remote one in seconds, up to its 120 s timeout plus about 7 s of retry waits.
const MIND: &[f64] = &[
    0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 130.0,
];

/// What kind of series a metric is; histograms carry their buckets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram(&'static [f64]),
}

/// One metric as the exporter describes it (its `# HELP` and `# TYPE` lines).
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    pub name: &'static str,
    pub kind: Kind,
    pub unit: Unit,
    pub help: &'static str,
}

const fn metric(name: &'static str, kind: Kind, unit: Unit, help: &'static str) -> Metric {
    Metric {
        name,
        kind,
        unit,
        help,
    }
}

/// Every metric wasmind emits.
pub const ALL: &[Metric] = &[
    metric(
        ACCOUNTS,
        Kind::Gauge,
        Unit::Count,
        "Accounts on each plan, by their subscription's status at the payment provider (none without one).",
    ),
    metric(
        COMPONENT_LOADS,
        Kind::Counter,
        Unit::Count,
        "Spawns of uploaded components, by where the linked component came from (cache, artifact).",
    ),
    metric(
        HTTP_REQUESTS,
        Kind::Counter,
        Unit::Count,
        "HTTP requests answered, by method, route template and status.",
    ),
    metric(
        HTTP_REQUEST_DURATION,
        Kind::Histogram(FAST),
        Unit::Seconds,
        "Time to answer an HTTP request, by method and route template.",
    ),
    metric(
        AGENTS_LIVE,
        Kind::Gauge,
        Unit::Count,
        "Agents spawning or running on this host in an instance.",
    ),
    metric(
        AGENTS_PARKED,
        Kind::Gauge,
        Unit::Count,
        "Agents running on this host without an instance: hibernated while a call waits.",
    ),
    metric(
        AGENTS_SPAWNED,
        Kind::Counter,
        Unit::Count,
        "Agent spawns admitted.",
    ),
    metric(
        AGENTS_ENDED,
        Kind::Counter,
        Unit::Count,
        "Agents that ended, by terminal status (completed, stopped, failed).",
    ),
    metric(
        SPAWNS_REFUSED,
        Kind::Counter,
        Unit::Count,
        "Agent spawns refused, by reason (monthly_quota, concurrent_limit, host_capacity, rate_limited).",
    ),
    metric(
        AGENT_HTTP_REQUESTS,
        Kind::Counter,
        Unit::Count,
        "Agents' outgoing HTTP requests made live, by outcome (answered, failed, allowlist, address, budget, journal).",
    ),
    metric(
        AGENT_HTTP_BYTES,
        Kind::Counter,
        Unit::Bytes,
        "Bytes of agents' outgoing HTTP (request and response bodies) made live.",
    ),
    metric(
        MIND_CALLS,
        Kind::Counter,
        Unit::Count,
        "Mind calls, by call (complete, extract, summarize, title).",
    ),
    metric(
        MIND_FAILURES,
        Kind::Counter,
        Unit::Count,
        "Mind calls that failed after their retries, by call and error (unavailable, invalid_request).",
    ),
    metric(
        MIND_RETRIES,
        Kind::Counter,
        Unit::Count,
        "Remote Mind attempts that failed transiently and were retried.",
    ),
    metric(
        MIND_CALL_DURATION,
        Kind::Histogram(MIND),
        Unit::Seconds,
        "Time a Mind call took, retries included, by call.",
    ),
    metric(
        MIND_TOKENS,
        Kind::Counter,
        Unit::Count,
        "Tokens the Mind reported, by type (input, output).",
    ),
    metric(
        EMBED_QUEUE,
        Kind::Gauge,
        Unit::Count,
        "Texts waiting for an embedding thread, by lane (bulk, query).",
    ),
    metric(
        EMBED_BATCH_DURATION,
        Kind::Histogram(FAST),
        Unit::Seconds,
        "Time one embedding batch took, by lane (bulk, query).",
    ),
    metric(
        MEMORIES_LIVE,
        Kind::Gauge,
        Unit::Count,
        "Live memories of the accounts on each plan.",
    ),
    metric(
        SEARCH_DURATION,
        Kind::Histogram(FAST),
        Unit::Seconds,
        "Time a memory search took, query embedding included, by mode (hybrid, semantic, keyword) and whether it was reranked (true, false).",
    ),
    metric(
        REEMBED_VECTORS,
        Kind::Gauge,
        Unit::Count,
        "Stored memory versions of the re-embedding asked for at this start, by part: done (with the target embedder's vector) and all.",
    ),
    metric(
        REEMBED_STATE,
        Kind::Gauge,
        Unit::Count,
        "1 for the state the memories' re-embedding is in (pending, running, done, failed), 0 for the others.",
    ),
];

/// Describes every metric to the current recorder, so each has its `# HELP` line.
pub fn describe() {
    for m in ALL {
        match m.kind {
            Kind::Counter => metrics::describe_counter!(m.name, m.unit, m.help),
            Kind::Gauge => metrics::describe_gauge!(m.name, m.unit, m.help),
            Kind::Histogram(_) => metrics::describe_histogram!(m.name, m.unit, m.help),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn names_follow_prometheus_conventions_and_are_distinct() {
        let mut seen = HashSet::new();
        for m in ALL {
            assert!(seen.insert(m.name), "{} twice", m.name);
            assert!(m.name.starts_with("wasmind_"), "{}", m.name);
            let valid = m
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            assert!(valid, "{}", m.name);
            match m.kind {
                Kind::Counter => assert!(m.name.ends_with("_total"), "{}", m.name),
                Kind::Histogram(buckets) => {
                    assert!(m.name.ends_with("_seconds"), "{}", m.name);
                    assert!(buckets.is_sorted() && !buckets.is_empty(), "{}", m.name);
                }
                Kind::Gauge => assert!(!m.name.ends_with("_total"), "{}", m.name),
            }
            assert!(!m.help.is_empty());
        }
    }
}
