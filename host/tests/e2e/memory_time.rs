//! Memory in time (issue 26): `as_of` on get, list and search reads the versions live at an
//! instant with their values then; `observed_at` is kept per version, filters list and
//! search, and is what search's time decay counts from; bad instants are refused.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{
    agents::{spawn, wait_terminal},
    common::{
        Client, Options,
        fake_mind::{FakeMind, Reply},
        now_ms, put, server_with_keys,
    },
};

const DAY_MS: u64 = 86_400_000;

/// An instant strictly after everything written so far and before anything written next.
fn instant() -> u64 {
    std::thread::sleep(Duration::from_millis(5));
    let at = now_ms();
    std::thread::sleep(Duration::from_millis(5));
    at
}

/// The value of `key` read at `at` (`None` when not found).
fn value_at(c: &Client, key: &str, at: u64) -> Option<String> {
    let got = c.get(&format!("/api/v1/memory?key={key}&as_of={at}"));
    match got.status {
        404 => None,
        200 => Some(got.body["value"].as_str().unwrap().to_string()),
        other => panic!("{other}: {:#}", got.body),
    }
}

/// (key, value) of the list at `at`, newest first.
fn list_at(c: &Client, at: u64) -> Vec<(String, String)> {
    let list = c.get(&format!("/api/v1/memory/list?as_of={at}"));
    assert_eq!(list.status, 200, "{:#}", list.body);
    pairs(&list.body["data"])
}

fn pairs(items: &Value) -> Vec<(String, String)> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = |f: &str| m[f].as_str().unwrap().to_string();
            (text("key"), text("value"))
        })
        .collect()
}

/// (key, value) of a keyword search for `query` with `extra` fields.
fn search(c: &Client, query: &str, extra: &Value) -> Vec<(String, String)> {
    let mut body = json!({ "query": query, "mode": "keyword" });
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let found = c.post("/api/v1/memory/search", &body);
    assert_eq!(found.status, 200, "{:#}", found.body);
    pairs(&found.body["results"])
}

fn pair(key: &str, value: &str) -> (String, String) {
    (key.to_string(), value.to_string())
}

#[test]
fn as_of_reads_the_versions_live_before_and_after_an_update_and_a_delete() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &Options::hash_embedder());
    let c = server.client(&keys[0]);
    let before_all = instant();
    put(&c, &json!({ "key": "pet", "value": "a cat named Miso" }));
    put(&c, &json!({ "key": "city", "value": "lives in Lisbon" }));
    let first = instant();
    put(&c, &json!({ "key": "city", "value": "lives in Porto" }));
    let updated = instant();
    assert_eq!(c.delete("/api/v1/memory?key=city").status, 200);
    let deleted = instant();

    assert_eq!(value_at(&c, "city", before_all), None);
    assert_eq!(
        value_at(&c, "city", first).as_deref(),
        Some("lives in Lisbon")
    );
    assert_eq!(
        value_at(&c, "city", updated).as_deref(),
        Some("lives in Porto")
    );
    assert_eq!(value_at(&c, "city", deleted), None);
    assert_eq!(
        value_at(&c, "pet", deleted).as_deref(),
        Some("a cat named Miso")
    );

    assert_eq!(list_at(&c, before_all), []);
    assert_eq!(
        list_at(&c, first),
        [
            pair("city", "lives in Lisbon"),
            pair("pet", "a cat named Miso")
        ]
    );
    assert_eq!(
        list_at(&c, updated),
        [
            pair("city", "lives in Porto"),
            pair("pet", "a cat named Miso")
        ]
    );
    assert_eq!(list_at(&c, deleted), [pair("pet", "a cat named Miso")]);

    let lisbon = |at| search(&c, "Lisbon Porto", &json!({ "as_of": at }));
    assert_eq!(lisbon(first), [pair("city", "lives in Lisbon")]);
    assert_eq!(lisbon(updated), [pair("city", "lives in Porto")]);
    assert_eq!(lisbon(deleted), []);
    assert_eq!(search(&c, "Lisbon Porto", &json!({})), [], "now: deleted");

    // History shows when each version was written and when its fact was observed.
    let history = c.get("/api/v1/memory/history?key=city").body;
    for version in history["data"].as_array().unwrap() {
        let written = version["updated_at"].as_u64().unwrap();
        assert_eq!(
            version["observed_at"].as_u64(),
            Some(written),
            "{version:#}"
        );
    }
}

#[test]
fn observed_at_is_kept_filters_reads_and_is_what_decay_counts_from() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &Options::hash_embedder());
    let c = server.client(&keys[0]);
    let now = now_ms();
    let long_ago = now - 60 * DAY_MS;
    let imported = c.post(
        "/api/v1/memory/import",
        &json!({ "memories": [{ "key": "old_job", "value": "worked as a baker", "observed_at": long_ago }] }),
    );
    assert_eq!(imported.status, 200, "{:#}", imported.body);
    put(
        &c,
        &json!({ "key": "new_job", "value": "works as a pilot" }),
    );
    let stated = put(
        &c,
        &json!({ "key": "hobby", "value": "a pilot who bakes", "observed_at": now - DAY_MS }),
    );
    assert_eq!(stated["observed_at"], now - DAY_MS);

    let version = &c.get("/api/v1/memory/history?key=old_job").body["data"][0];
    assert_eq!(version["observed_at"], long_ago);
    assert!(
        version["updated_at"].as_u64().unwrap() >= now,
        "{version:#}"
    );

    // Decay counts from the observation: two half-lives (30 days each) ago.
    let found = c.post(
        "/api/v1/memory/search",
        &json!({ "query": "worked as a baker", "mode": "keyword" }),
    );
    let hit = found.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["key"] == "old_job")
        .unwrap_or_else(|| panic!("{:#}", found.body));
    let decay = hit["breakdown"]["timeDecay"].as_f64().unwrap();
    assert!((decay - 0.25).abs() < 0.01, "{hit:#}");

    let keys_of = |found: Vec<(String, String)>| -> Vec<String> {
        found.into_iter().map(|(k, _)| k).collect()
    };
    let listed = c.get(&format!(
        "/api/v1/memory/list?observed_before={}",
        now - 30 * DAY_MS
    ));
    assert_eq!(keys_of(pairs(&listed.body["data"])), ["old_job"]);
    let listed = c.get(&format!(
        "/api/v1/memory/list?observed_after={}&observed_before={}",
        now - 2 * DAY_MS,
        now
    ));
    assert_eq!(keys_of(pairs(&listed.body["data"])), ["hobby"]);
    let recent = search(
        &c,
        "baker pilot",
        &json!({ "observed_after": now - 30 * DAY_MS }),
    );
    let mut recent = keys_of(recent);
    recent.sort();
    assert_eq!(recent, ["hobby", "new_job"]);

    // Bad instants: the field (or query parameter) named, and what to fix.
    let future = now + DAY_MS;
    for (body, code) in [
        (
            json!({ "key": "k", "value": "v", "observed_at": future }),
            "invalid_observed_at",
        ),
        (
            json!({ "key": "k", "value": "v", "observed_at": -5 }),
            "invalid_observed_at",
        ),
        (
            json!({ "key": "k", "value": "v", "observed_at": "yesterday" }),
            "invalid_observed_at",
        ),
    ] {
        let refused = c.post("/api/v1/memory", &body);
        refused.assert_error(400, code);
        assert_eq!(refused.body["error"]["details"]["field"], "observed_at");
    }
    for (body, code) in [
        (json!({ "query": "q", "as_of": future }), "invalid_as_of"),
        (json!({ "query": "q", "as_of": 1.5 }), "invalid_as_of"),
    ] {
        c.post("/api/v1/memory/search", &body)
            .assert_error(400, code);
    }
    for (path, parameter) in [
        ("/api/v1/memory?key=hobby&as_of=soon".to_string(), "as_of"),
        (format!("/api/v1/memory?key=hobby&as_of={future}"), "as_of"),
        (
            "/api/v1/memory/list?observed_after=-1".to_string(),
            "observed_after",
        ),
    ] {
        let refused = c.get(&path);
        refused.assert_error(400, "invalid_query");
        assert_eq!(refused.body["error"]["details"]["parameter"], parameter);
    }
}

/// A window that holds no instant (its start at or after its end) is valid and finds
/// nothing: list and search answer 200 with no results, over the API key and the console.
#[test]
fn an_empty_observation_window_finds_nothing() {
    let (tmp, server, keys) = server_with_keys(&[("acme", "free")], &Options::hash_embedder());
    let (_, token) = crate::console::login(&tmp.path().join("data"), "acme", None);
    let c = server.client(&keys[0]);
    let console = Client::new(&server.base, Some(&token));
    let observed = now_ms() - DAY_MS;
    put(
        &c,
        &json!({ "key": "seen", "value": "a heron by the river", "observed_at": observed }),
    );
    for (prefix, c) in [("/api/v1/memory", &c), ("/api/v1/memory", &console)] {
        let window = |after: u64, before: u64| {
            let list = c.get(&format!(
                "{prefix}/list?observed_after={after}&observed_before={before}"
            ));
            assert_eq!(
                list.status, 200,
                "{prefix} {after}..{before}: {:#}",
                list.body
            );
            let query =
                json!({ "query": "heron", "observed_after": after, "observed_before": before });
            let found = c.post(&format!("{prefix}/search"), &query);
            assert_eq!(
                found.status, 200,
                "{prefix} {after}..{before}: {:#}",
                found.body
            );
            (list.body, found.body["results"].clone())
        };
        let (list, results) = window(observed, observed + 1);
        assert_eq!(
            pairs(&list["data"]).len(),
            1,
            "{prefix}: the window holds it"
        );
        assert_eq!(
            results.as_array().unwrap().len(),
            1,
            "{prefix}: {results:#}"
        );
        for (after, before) in [(observed, observed), (observed + 1, observed), (0, 0)] {
            let (list, results) = window(after, before);
            assert_eq!(list, json!({ "data": [], "next_cursor": null }), "{prefix}");
            assert_eq!(results, json!([]), "{prefix} {after}..{before}");
        }
    }
}

/// An agent's memory tool, told when a fact was stated, records it as a put body's
/// `observed_at` is (the guest's `put-observed` call), and the write names the agent.
#[test]
fn an_agents_memory_tool_keeps_when_the_fact_was_stated() {
    let stated = now_ms() - 3 * DAY_MS;
    let mind = FakeMind::start([
        Reply::tool_call(
            "service_memory_put",
            json!({ "key": "home_city", "value": "The user moved to Porto.", "observed_at": stated }),
        ),
        Reply::text("Noted."),
    ]);
    let options = Options::hash_embedder().openai_mind(&mind.base_url());
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    let id = spawn(&c, "Remember where the user lives now.");
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    let history = c.get("/api/v1/memory/history?key=home_city").body;
    let version = &history["data"][0];
    assert_eq!(version["observed_at"], stated, "{history:#}");
    assert_eq!(
        version["provenance"]["agent_id"],
        id.as_str(),
        "{history:#}"
    );
}
