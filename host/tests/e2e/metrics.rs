//! `GET /metrics` end to end: real traffic (memory writes, searches in each mode, an agent
//! that completes, a refused spawn, an unknown route), then a scrape without a key, read
//! with a Prometheus text-format parser; and the `[metrics]` switches.

use std::time::Duration;

use prom_text_format_parser::{Metric, Scrape, Type, ValueType};
use serde_json::json;

use crate::{
    agents::{spawn, wait_terminal},
    common::{
        Client, Options,
        fake_mind::{FakeMind, INPUT_TOKENS, OUTPUT_TOKENS, Reply},
        poll_until, put, server_with_keys,
    },
};

/// The free plan with one spawn a minute, so a second spawn is refused.
const ONE_SPAWN_A_MINUTE: &str = "[plans.free]\nspawns_per_minute = 1\nspawns_per_hour = 30\n\
     concurrent_agents = 2\nmemories = 1000\nagent_hours_per_month = 10.0\n";

/// Every metric wasmind documents, as an operator's dashboards name them.
const DOCUMENTED: [&str; 15] = [
    "wasmind_http_requests_total",
    "wasmind_http_request_duration_seconds",
    "wasmind_agents_live",
    "wasmind_agents_spawned_total",
    "wasmind_agents_ended_total",
    "wasmind_spawns_refused_total",
    "wasmind_mind_calls_total",
    "wasmind_mind_failures_total",
    "wasmind_mind_retries_total",
    "wasmind_mind_call_duration_seconds",
    "wasmind_mind_tokens_total",
    "wasmind_embed_queue_texts",
    "wasmind_embed_batch_duration_seconds",
    "wasmind_memories_live",
    "wasmind_memory_search_duration_seconds",
];

/// GETs `url` without a key: (status, content type, body).
fn get(url: &str) -> (u16, String, String) {
    let res = reqwest::blocking::get(url).expect("request failed");
    let status = res.status().as_u16();
    let content_type = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (status, content_type, res.text().unwrap())
}

/// One scrape of `/metrics` at `base`, parsed.
struct Metrics(Vec<Metric>);

impl Metrics {
    fn scrape(base: &str) -> Metrics {
        let (status, content_type, text) = get(&format!("{base}/metrics"));
        assert_eq!(status, 200, "{text}");
        assert!(content_type.starts_with("text/plain"), "{content_type}");
        let scrape = Scrape::parse(&text).unwrap_or_else(|e| panic!("{e:?} in\n{text}"));
        Metrics(scrape.metrics)
    }

    fn family(&self, name: &str) -> Option<&Metric> {
        self.0.iter().find(|m| m.name == name)
    }

    /// The value of `name`'s series with exactly `labels`, of the given type (a plain
    /// sample, or a histogram's count); `None` when there is no such series.
    fn find(&self, name: &str, labels: &[(&str, &str)], of: ValueType) -> Option<f64> {
        let family = self.family(name)?;
        let sample = family.samples.iter().find(|s| {
            s.value.value_type == of
                && s.labels.len() == labels.len()
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.iter().any(|l| l.key == *k && l.value == *v))
        })?;
        Some(sample.value.value.as_f64())
    }

    /// Asserts that each of `names` has samples and a `# HELP` line.
    #[track_caller]
    fn assert_documented(&self, names: &[&str]) {
        for name in names {
            let family = self.family(name);
            let help = family.and_then(|m| m.help_desc.as_deref()).unwrap_or("");
            assert!(!help.is_empty(), "{name} has no HELP line");
            assert!(
                family.is_some_and(|m| !m.samples.is_empty()),
                "{name} has no sample"
            );
        }
    }

    /// A counter's or gauge's value; 0 when the series does not exist.
    #[track_caller]
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let kind = self.family(name).map(|m| m.kind);
        assert!(
            matches!(kind, None | Some(Type::Counter | Type::Gauge)),
            "{name} is {kind:?}"
        );
        self.find(name, labels, ValueType::Sample).unwrap_or(0.0)
    }

    /// How many observations a histogram series holds; 0 when it does not exist.
    #[track_caller]
    fn observations(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let kind = self.family(name).map(|m| m.kind);
        assert!(
            matches!(kind, None | Some(Type::Histogram)),
            "{name} is {kind:?}"
        );
        self.find(name, labels, ValueType::Count).unwrap_or(0.0)
    }

    /// Every label value of every series.
    fn label_values(&self, key: &str) -> Vec<&str> {
        let samples = self.0.iter().flat_map(|m| &m.samples);
        let labels = samples.flat_map(|s| s.labels.iter());
        labels
            .filter(|l| l.key == key)
            .map(|l| l.value.as_str())
            .collect()
    }
}

#[test]
fn metrics_count_real_traffic_without_a_key() {
    let options = Options {
        config: Some(ONE_SPAWN_A_MINUTE.into()),
        ..Options::hash_embedder()
    };
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);

    put(
        &c,
        &json!({ "key": "favourite_food", "value": "pizza with mushrooms" }),
    );
    for mode in ["hybrid", "semantic", "keyword", "keyword"] {
        let r = c.post(
            "/api/v1/memory/search",
            &json!({ "query": "what food is liked", "mode": mode }),
        );
        assert_eq!(r.status, 200, "{:#}", r.body);
    }
    let agent = spawn(&c, "Remember that the deploy is on Friday");
    assert_eq!(wait_terminal(&c, &agent)["status"], "completed");
    let refused = c.post("/api/v1/agents", &json!({ "task": "one too many" }));
    refused.assert_error(429, "rate_limited");
    c.get("/api/v1/no/such/route")
        .assert_error(404, "route_not_found");
    let live: f64 = c.get("/api/v1/memory/namespaces").body["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ns| ns["count"].as_f64().unwrap())
        .sum();

    // The agent's end is counted just after its record turns terminal, and its place is
    // given back after that: wait for both.
    let m = poll_until(Duration::from_secs(30), "the agent's end counted", || {
        let m = Metrics::scrape(&server.base);
        let ended = m.value("wasmind_agents_ended_total", &[("status", "completed")]);
        let gone = m.value("wasmind_agents_live", &[]) == 0.0;
        match (ended, gone) {
            (1.0, true) => Ok(m),
            _ => Err(format!("ended {ended}, gone {gone}")),
        }
    });

    // All but the remote Mind's failures and retries (the next test) have happened.
    m.assert_documented(&DOCUMENTED[..7]);
    m.assert_documented(&DOCUMENTED[9..]);
    let requests = |method, route, status| {
        m.value(
            "wasmind_http_requests_total",
            &[("method", method), ("route", route), ("status", status)],
        )
    };
    assert_eq!(requests("POST", "/api/v1/memory", "201"), 1.0);
    assert_eq!(requests("POST", "/api/v1/memory/search", "200"), 4.0);
    assert_eq!(requests("POST", "/api/v1/agents", "201"), 1.0);
    assert_eq!(requests("POST", "/api/v1/agents", "429"), 1.0);
    assert_eq!(requests("GET", "unmatched", "404"), 1.0);
    assert!(requests("GET", "/api/v1/agents/{id}", "200") >= 1.0);
    for route in m.label_values("route") {
        assert!(
            !route.contains(&agent) && !route.contains("no/such") && route != "/metrics",
            "a raw path or the scrape itself became a label: {route}"
        );
    }
    let timed = &[("method", "POST"), ("route", "/api/v1/memory/search")];
    assert_eq!(
        m.observations("wasmind_http_request_duration_seconds", timed),
        4.0
    );

    for (mode, searches) in [("hybrid", 1.0), ("semantic", 1.0), ("keyword", 2.0)] {
        let mode = &[("mode", mode), ("rerank", "false")];
        let seen = m.observations("wasmind_memory_search_duration_seconds", mode);
        assert_eq!(seen, searches, "{mode:?}");
    }

    assert_eq!(m.value("wasmind_agents_spawned_total", &[]), 1.0);
    let refused = &[("reason", "rate_limited")];
    assert_eq!(m.value("wasmind_spawns_refused_total", refused), 1.0);

    for call in ["complete", "title", "extract"] {
        let call = &[("call", call)];
        assert!(m.value("wasmind_mind_calls_total", call) >= 1.0, "{call:?}");
        let timed = m.observations("wasmind_mind_call_duration_seconds", call);
        assert!(timed >= 1.0, "{call:?}");
    }
    assert!(m.value("wasmind_mind_tokens_total", &[("type", "input")]) > 0.0);
    assert!(m.value("wasmind_mind_tokens_total", &[("type", "output")]) > 0.0);

    // The put's text went to the interactive lane, the searches' to the query lane.
    for lane in ["interactive", "query"] {
        let lane = &[("lane", lane)];
        assert_eq!(m.value("wasmind_embed_queue_texts", lane), 0.0);
        let batches = m.observations("wasmind_embed_batch_duration_seconds", lane);
        assert!(batches >= 1.0, "{lane:?}");
    }

    assert!(live >= 1.0);
    assert_eq!(m.value("wasmind_memories_live", &[("plan", "free")]), live);
    for plan in ["liftoff", "lightyear"] {
        let live = m.find(
            "wasmind_memories_live",
            &[("plan", plan)],
            ValueType::Sample,
        );
        assert_eq!(live, Some(0.0), "every plan has its series");
    }

    // Counters only grow: a second scrape after another put sees the write.
    put(
        &c,
        &json!({ "key": "favourite_drink", "value": "green tea" }),
    );
    let again = Metrics::scrape(&server.base);
    let puts = again.value(
        "wasmind_http_requests_total",
        &[
            ("method", "POST"),
            ("route", "/api/v1/memory"),
            ("status", "201"),
        ],
    );
    assert_eq!(puts, 2.0);
    assert_eq!(
        again.value("wasmind_memories_live", &[("plan", "free")]),
        live + 1.0
    );
}

#[test]
fn metrics_can_be_switched_off() {
    let options = Options {
        config: Some("[metrics]\nenabled = false\n".into()),
        ..Options::hash_embedder()
    };
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    c.get("/metrics").assert_error(404, "route_not_found");
}

#[test]
fn metrics_can_have_their_own_listener() {
    let options = Options {
        config: Some("[metrics]\nlisten = \"127.0.0.1:0\"\n".into()),
        ..Options::hash_embedder()
    };
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let log = server.log();
    let url = log
        .lines()
        .find_map(|l| l.split("metrics served on ").nth(1))
        .unwrap_or_else(|| panic!("no metrics address logged:\n{log}"))
        .trim()
        .to_string();
    let c = server.client(&keys[0]);
    c.get("/metrics").assert_error(404, "route_not_found");
    put(&c, &json!({ "key": "favourite_food", "value": "pizza" }));

    let base = url.trim_end_matches("/metrics");
    assert_ne!(base, server.base, "a listener of its own");
    let m = Metrics::scrape(base);
    let puts = &[
        ("method", "POST"),
        ("route", "/api/v1/memory"),
        ("status", "201"),
    ];
    assert_eq!(m.value("wasmind_http_requests_total", puts), 1.0);
    assert_eq!(m.value("wasmind_memories_live", &[("plan", "free")]), 1.0);
}

/// Spawns a named agent that only thinks (no title, no extraction) and waits for its end.
fn run_agent(c: &Client, task: &str) -> String {
    let body = json!({ "task": task, "name": "metered", "memory_mode": "explicit" });
    let r = c.post("/api/v1/agents", &body);
    assert_eq!(r.status, 201, "{:#}", r.body);
    let id = r.body["agent_id"].as_str().unwrap();
    wait_terminal(c, id)["status"].as_str().unwrap().to_string()
}

#[test]
fn a_remote_mind_s_retries_failures_and_tokens_are_counted() {
    let mind = FakeMind::start([
        Reply::status(503),
        Reply::text("Done."),
        Reply::status(400),
        Reply::Hang,
    ]);
    let options = Options::hash_embedder().openai_mind(&mind.base_url());
    let (_tmp, server, keys) = server_with_keys(&[("acme", "lightyear")], &options);
    let c = server.client(&keys[0]);
    assert_eq!(run_agent(&c, "think once, after a retry"), "completed");
    assert_eq!(run_agent(&c, "think with a refused request"), "failed");

    // An ended agent's place is given back after its end is recorded and counted (its
    // terminal log event and usage are written in between), so the live gauge may lag.
    let m = poll_until(Duration::from_secs(30), "both agents' ends counted", || {
        let m = Metrics::scrape(&server.base);
        let ended = |status| m.value("wasmind_agents_ended_total", &[("status", status)]);
        let live = m.value("wasmind_agents_live", &[]);
        match (ended("completed"), ended("failed"), live) {
            (1.0, 1.0, 0.0) => Ok(m),
            got => Err(format!("ended (completed, failed), live: {got:?}")),
        }
    });
    m.assert_documented(&DOCUMENTED[6..11]);
    let complete = &[("call", "complete")];
    assert_eq!(m.value("wasmind_mind_calls_total", complete), 2.0);
    assert_eq!(
        m.observations("wasmind_mind_call_duration_seconds", complete),
        2.0
    );
    assert_eq!(m.value("wasmind_mind_retries_total", &[]), 1.0);
    let refused = &[("call", "complete"), ("error", "invalid_request")];
    assert_eq!(m.value("wasmind_mind_failures_total", refused), 1.0);
    let unavailable = &[("call", "complete"), ("error", "unavailable")];
    assert_eq!(m.value("wasmind_mind_failures_total", unavailable), 0.0);
    let tokens = |kind| m.value("wasmind_mind_tokens_total", &[("type", kind)]);
    assert_eq!(tokens("input"), f64::from(INPUT_TOKENS));
    assert_eq!(tokens("output"), f64::from(OUTPUT_TOKENS));

    // An agent waiting on its Mind is live until it ends.
    let body = json!({ "task": "wait for the Mind", "name": "waiting", "memory_mode": "off" });
    let waiting = c.post("/api/v1/agents", &body);
    assert_eq!(waiting.status, 201, "{:#}", waiting.body);
    let live = || Metrics::scrape(&server.base).value("wasmind_agents_live", &[]);
    poll_until(Duration::from_secs(30), "the agent counted live", || {
        let now = live();
        (now == 1.0).then_some(()).ok_or(format!("live {now}"))
    });
    mind.release();
    let id = waiting.body["agent_id"].as_str().unwrap();
    assert_eq!(wait_terminal(&c, id)["status"], "completed");
    poll_until(
        Duration::from_secs(30),
        "the agent's place given back",
        || {
            let now = live();
            (now == 0.0).then_some(()).ok_or(format!("live {now}"))
        },
    );
}
