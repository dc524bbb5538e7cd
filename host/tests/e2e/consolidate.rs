//! `POST /api/v1/memory/consolidate`: clusters folded into Mind-written summaries, all or
//! nothing, at most one at a time per namespace (a call without one covers them all) and
//! not again within the cooldown.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{
    Client, Options, Server,
    fake_mind::{FakeMind, INPUT_TOKENS, OUTPUT_TOKENS, Reply},
    put, server_with_keys,
};

const CONSOLIDATE: &str = "/api/v1/memory/consolidate";

fn config(cooldown_secs: u64) -> Option<String> {
    Some(format!(
        "[memory]\nconsolidate_cooldown_secs = {cooldown_secs}\n"
    ))
}

/// A server (hash embedder, 30 s cooldown) whose Mind is `mind`, and a key on it.
fn server_with_mind(mind: &FakeMind) -> (tempfile::TempDir, Server, String) {
    let options = Options {
        config: config(30),
        ..Options::hash_embedder()
    }
    .openai_mind(&mind.base_url());
    let (tmp, server, mut keys) = server_with_keys(&[("acme", "free")], &options);
    (tmp, server, keys.remove(0))
}

/// memory_ids of every live memory, newest first.
fn live_ids(c: &Client) -> Vec<Value> {
    let list = c.get("/api/v1/memory/list?limit=200");
    assert_eq!(list.status, 200, "{:#}", list.body);
    list.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["memory_id"].clone())
        .collect()
}

/// Three copies of one fact, close under any embedder.
fn put_cluster(c: &Client) -> Vec<Value> {
    put_cluster_in(c, "default")
}

/// [`put_cluster`] in `namespace`.
fn put_cluster_in(c: &Client, namespace: &str) -> Vec<Value> {
    ["", "!", "."]
        .iter()
        .enumerate()
        .map(|(i, end)| {
            put(
                c,
                &json!({ "namespace": namespace, "key": format!("colour_{i}"), "value": format!("The user's favourite colour is blue{end}") }),
            )["memory_id"]
                .clone()
        })
        .collect()
}

#[test]
fn paraphrases_become_one_summary_and_a_second_call_does_nothing() {
    let options = Options {
        config: config(0),
        ..Default::default()
    };
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    let colour = [
        (
            "favourite_colour",
            "The user's favourite colour is blue.",
            8,
            json!(["prefs"]),
        ),
        (
            "colour_preference",
            "Blue is the user's favourite colour.",
            4,
            json!(["colour"]),
        ),
        (
            "likes_blue",
            "The user's favorite color is blue.",
            5,
            json!(["prefs", "ui"]),
        ),
    ];
    let originals: Vec<Value> = colour
        .iter()
        .map(|(key, value, importance, tags)| {
            put(
                &c,
                &json!({ "key": key, "value": value, "importance": importance, "tags": tags }),
            )
        })
        .collect();
    put(
        &c,
        &json!({ "key": "dog_name", "value": "The user's dog is called Rex." }),
    );
    put(
        &c,
        &json!({ "key": "pet_dog", "value": "The user's dog's name is Rex." }),
    );
    put(
        &c,
        &json!({ "key": "quarterly", "value": "Quarterly revenue grew by eight percent." }),
    );
    let before = live_ids(&c);

    // A dry run reports and changes nothing; the pair of dog facts is too small a cluster.
    let dry = c.post(CONSOLIDATE, &json!({ "dry_run": true }));
    assert_eq!(dry.status, 200, "{:#}", dry.body);
    assert_eq!(
        (dry.body["clusters"].clone(), dry.body["skipped"].clone()),
        (json!(1), json!(1)),
        "{:#}",
        dry.body
    );
    let planned = &dry.body["consolidated"][0];
    assert_eq!(
        (planned["memory_id"].clone(), planned["key"].clone()),
        (Value::Null, Value::Null)
    );
    assert_eq!(
        planned["replaced"][0], originals[0]["memory_id"],
        "the most important is the centre"
    );
    assert_eq!(planned["replaced"].as_array().unwrap().len(), 3);
    assert_eq!(
        dry.body["usage"],
        json!({ "input_tokens": 0, "output_tokens": 0 })
    );
    assert_eq!(live_ids(&c), before);
    let pairs = c.post(
        CONSOLIDATE,
        &json!({ "dry_run": true, "min_cluster_size": 2 }),
    );
    assert_eq!(pairs.body["clusters"], 2, "{:#}", pairs.body);

    let done = c.post(CONSOLIDATE, &json!({}));
    assert_eq!(done.status, 200, "{:#}", done.body);
    assert_eq!(
        (
            done.body["dry_run"].clone(),
            done.body["clusters"].clone(),
            done.body["skipped"].clone()
        ),
        (json!(false), json!(1), json!(1))
    );
    assert!(done.body["usage"]["input_tokens"].as_u64().unwrap() > 0);
    let merged = &done.body["consolidated"][0];
    assert_eq!(merged["replaced"], planned["replaced"]);
    assert_eq!(merged["namespace"], "default");
    let key = merged["key"].as_str().unwrap();
    let summary = c.get(&format!("/api/v1/memory?key={key}"));
    assert_eq!(summary.status, 200, "{:#}", summary.body);
    assert_eq!(summary.body["memory_id"], merged["memory_id"]);
    assert_eq!(summary.body["source"], "consolidated");
    assert_eq!(summary.body["importance"], 8);
    let mut tags: Vec<&str> = summary.body["tags"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    tags.sort_unstable();
    assert_eq!(
        tags,
        ["colour", "prefs", "ui"],
        "the union of the originals' tags"
    );
    assert!(summary.body["value"].as_str().unwrap().contains("blue"));

    for original in &originals {
        let key = original["key"].as_str().unwrap();
        c.get(&format!("/api/v1/memory?key={key}"))
            .assert_error(404, "not_found");
        let history = c.get(&format!("/api/v1/memory/history?key={key}")).body;
        let version = &history["data"][0];
        assert_eq!(version["isLatestVersion"], false);
        assert!(version["deletedAt"].as_u64().is_some());
        assert_eq!(version["consolidated_into"], merged["memory_id"]);
        assert_eq!(version["consolidatedInto"], merged["memory_id"]);
    }
    let found = c.post(
        "/api/v1/memory/search",
        &json!({ "query": "What colour does the user like?" }),
    );
    assert_eq!(
        found.body["results"][0]["memory_id"], merged["memory_id"],
        "{:#}",
        found.body
    );
    assert_eq!(found.body["results"][0]["source"], "consolidated");
    for key in ["dog_name", "pet_dog", "quarterly"] {
        assert_eq!(c.get(&format!("/api/v1/memory?key={key}")).status, 200);
    }

    // The originals are no longer live: nothing to do, nothing written (cooldown 0).
    let after = live_ids(&c);
    assert_eq!(after.len(), before.len() - 2);
    let again = c.post(CONSOLIDATE, &json!({}));
    assert_eq!(again.status, 200, "{:#}", again.body);
    assert_eq!(
        (
            again.body["clusters"].clone(),
            again.body["consolidated"].clone()
        ),
        (json!(0), json!([]))
    );
    assert_eq!(
        again.body["usage"],
        json!({ "input_tokens": 0, "output_tokens": 0 })
    );
    assert_eq!(live_ids(&c), after);
}

#[test]
fn one_at_a_time_then_a_cooldown() {
    let summary =
        json!({ "key": "colour_summary", "value": "The user's favourite colour is blue." });
    // The summary is held back until the test has seen the second call refused, however
    // slowly that goes.
    let mind = FakeMind::start([Reply::tool_call("write_summary", summary).until_released()]);
    let (_tmp, server, key) = server_with_mind(&mind);
    let c = server.client(&key);
    let replaced = put_cluster(&c);

    let first = {
        let c = server.client(&key);
        std::thread::spawn(move || c.post(CONSOLIDATE, &json!({})))
    };
    assert!(mind.wait_for_requests(1, Duration::from_secs(20)));
    let busy = c.post(CONSOLIDATE, &json!({}));
    busy.assert_error(429, "rate_limited");
    assert_eq!(busy.retry_after.as_deref(), Some("5"));
    assert_eq!(
        busy.body["error"]["details"],
        json!({ "reason": "in_progress", "cooldownSecs": 30 })
    );
    // A dry run writes nothing and asks no Mind: it is not held back.
    let dry = c.post(CONSOLIDATE, &json!({ "dry_run": true }));
    assert_eq!((dry.status, dry.body["clusters"].clone()), (200, json!(1)));
    assert!(!first.is_finished(), "the first call waits for its summary");

    mind.release();
    let done = first.join().unwrap();
    assert_eq!(done.status, 200, "{:#}", done.body);
    assert_eq!(done.body["consolidated"][0]["key"], "colour_summary");
    assert_eq!(
        done.body["consolidated"][0]["replaced"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    for id in &replaced {
        assert!(
            done.body["consolidated"][0]["replaced"]
                .as_array()
                .unwrap()
                .contains(id)
        );
    }
    assert_eq!(
        done.body["usage"],
        json!({ "input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS })
    );
    assert_eq!(mind.request_count(), 1, "one cluster, one summary");

    let cooling = c.post(CONSOLIDATE, &json!({}));
    cooling.assert_error(429, "rate_limited");
    let retry: u64 = cooling.retry_after.as_deref().unwrap().parse().unwrap();
    assert!((1..=30).contains(&retry), "Retry-After {retry}");
    assert_eq!(
        cooling.body["error"]["details"],
        json!({ "reason": "cooldown", "cooldownSecs": 30 })
    );
    assert_eq!(mind.request_count(), 1);
}

/// The Mind's summary of the cluster in namespace `ns` (`put_cluster_in`), keyed after it.
fn summary_of(ns: &str) -> Reply {
    let summary =
        json!({ "key": format!("summary_{ns}"), "value": "The user's favourite colour is blue." });
    Reply::tool_call("write_summary", summary)
}

/// The cooldown is per namespace: an account with one namespace per end user consolidates
/// them back to back; the one just consolidated, and the whole account, wait.
#[test]
fn two_namespaces_consolidated_back_to_back() {
    let mind = FakeMind::start(["alice", "bob"].map(summary_of));
    let (_tmp, server, key) = server_with_mind(&mind);
    let c = server.client(&key);
    for ns in ["alice", "bob"] {
        put_cluster_in(&c, ns);
    }
    for ns in ["alice", "bob"] {
        let done = c.post(CONSOLIDATE, &json!({ "namespace": ns }));
        assert_eq!(done.status, 200, "{ns}: {:#}", done.body);
        assert_eq!(done.body["consolidated"][0]["key"], format!("summary_{ns}"));
        assert_eq!(done.body["consolidated"][0]["namespace"], ns);
    }
    for body in [json!({ "namespace": "alice" }), json!({})] {
        let cooling = c.post(CONSOLIDATE, &body);
        cooling.assert_error(429, "rate_limited");
        assert_eq!(cooling.body["error"]["details"]["reason"], "cooldown");
    }
    assert_eq!(mind.request_count(), 2);
}

#[test]
fn a_mind_failure_changes_nothing() {
    // 400 is a refusal: not retried, so the test needs no backoff.
    let no_value = json!({ "key": "colour_summary" });
    let mind = FakeMind::start([
        Reply::status(400),
        Reply::tool_call("write_summary", no_value),
    ]);
    let (_tmp, server, key) = server_with_mind(&mind);
    let c = server.client(&key);
    put_cluster(&c);
    let before = live_ids(&c);

    let failed = c.post(CONSOLIDATE, &json!({}));
    failed.assert_error(503, "mind_unavailable");
    assert!(failed.retry_after.is_some(), "503 without Retry-After");
    assert_eq!(live_ids(&c), before);
    for i in 0..3 {
        let got = c.get(&format!("/api/v1/memory?key=colour_{i}"));
        assert_eq!(got.status, 200);
        assert_eq!(got.body["consolidated_into"], Value::Null);
    }

    // A failure starts no cooldown: the next call reaches the Mind again, whose reply
    // (a summary without a value) is unusable — still nothing changes.
    let unusable = c.post(CONSOLIDATE, &json!({}));
    unusable.assert_error(503, "mind_unavailable");
    assert_eq!(mind.request_count(), 2);
    assert_eq!(live_ids(&c), before);
}

/// Many OpenAI-compatible servers ignore the forced tool and answer in prose: the prose is
/// the summary, under the key of the cluster's centre.
#[test]
fn a_summary_in_plain_text_is_kept_under_the_centre_s_key() {
    let prose = "The user's favourite colour is blue, in any wording.";
    let mind = FakeMind::start([Reply::text(prose)]);
    let (_tmp, server, key) = server_with_mind(&mind);
    let c = server.client(&key);
    let ids = put_cluster(&c);
    let dry = c.post(CONSOLIDATE, &json!({ "dry_run": true }));
    let centre = &dry.body["consolidated"][0]["replaced"][0];
    let i = ids.iter().position(|id| id == centre).unwrap();

    let done = c.post(CONSOLIDATE, &json!({}));
    assert_eq!(done.status, 200, "{:#}", done.body);
    let merged = &done.body["consolidated"][0];
    let summary_key = format!("colour_{i}_summary");
    assert_eq!(merged["key"], summary_key.as_str());
    assert_eq!(merged["replaced"].as_array().unwrap().len(), 3);
    let summary = c.get(&format!("/api/v1/memory?key={summary_key}"));
    assert_eq!(summary.status, 200, "{:#}", summary.body);
    assert_eq!(summary.body["memory_id"], merged["memory_id"]);
    assert_eq!(summary.body["value"], prose);
    assert_eq!(summary.body["source"], "consolidated");
    assert_eq!(live_ids(&c), [merged["memory_id"].clone()]);
    let asked = mind.requests();
    assert_eq!(asked.len(), 1, "one cluster, one request, no retry");
    assert_eq!(asked[0]["tools"][0]["function"]["name"], "write_summary");
}

/// Consolidation is a Mind job for the account, held to the plan's `tokens_per_month` as a
/// spawn is: a free plan of 15 tokens a month, what the fake Mind reports for one summary.
#[test]
fn consolidation_is_refused_once_the_months_tokens_are_spent() {
    let mind = FakeMind::start(["alice", "bob"].map(summary_of));
    let plan = "[plans.free]\nspawns_per_minute = 5\nspawns_per_hour = 30\n\
                concurrent_agents = 2\nmemories = 100\nagent_hours_per_month = 10.0\n\
                tokens_per_month = 15\n";
    let options = Options {
        config: Some(format!("{}{plan}", config(0).unwrap())),
        ..Options::hash_embedder()
    }
    .openai_mind(&mind.base_url());
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    for ns in ["alice", "bob"] {
        put_cluster_in(&c, ns);
    }
    let before = live_ids(&c);

    // Two clusters: the first summary spends the month's 15 tokens, so the second is not
    // asked for, and nothing is written; the first summary's tokens are the month's.
    let refused = c.post(CONSOLIDATE, &json!({}));
    refused.assert_error(402, "monthly_quota_exceeded");
    let details = &refused.body["error"]["details"];
    assert_eq!(
        (
            &details["plan"],
            &details["budget"],
            &details["usedTokens"],
            &details["limitTokens"]
        ),
        (&json!("free"), &json!("tokens"), &json!(15), &json!(15)),
        "{details:#}"
    );
    assert!(
        details["resetsAt"].as_str().unwrap().ends_with('Z'),
        "{details:#}"
    );
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("15 Mind tokens for this month are used"),
        "{message}"
    );
    assert_eq!(mind.request_count(), 1);
    assert_eq!(live_ids(&c), before, "nothing written");

    // Spent: no consolidation asks the Mind, however small; a dry run still answers, and a
    // spawn is refused for the same budget.
    let one = c.post(CONSOLIDATE, &json!({ "namespace": "bob" }));
    one.assert_error(402, "monthly_quota_exceeded");
    let dry = c.post(CONSOLIDATE, &json!({ "dry_run": true }));
    assert_eq!(
        (dry.status, &dry.body["clusters"]),
        (200, &json!(2)),
        "{:#}",
        dry.body
    );
    assert_eq!(mind.request_count(), 1);
    let spawn = c.post("/api/v1/agents", &json!({ "task": "Summarize the notes" }));
    spawn.assert_error(402, "monthly_quota_exceeded");
    assert_eq!(spawn.body["error"]["details"]["budget"], "tokens");
    assert_eq!(spawn.body["error"]["details"]["usedTokens"], 15);
    assert_eq!(live_ids(&c), before);
}
