//! Put, get, versions, delete, list, namespaces, expiry, dedupe.

use std::time::Duration;

use serde_json::json;

use crate::common::{Options, now_ms, poll_until, put, server_with_keys};

fn hash() -> Options {
    Options {
        hash_embedder: true,
        ..Default::default()
    }
}

#[test]
fn put_get_versioning_and_access_counts() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &hash());
    let c = server.client(&keys[0]);
    let r = c.post(
        "/api/v1/memory",
        &json!({ "key": "favourite_colour", "value": "blue", "tags": ["prefs"], "importance": 7 }),
    );
    assert_eq!(r.status, 201);
    let first = r.body;
    assert!(first["memory_id"].as_str().unwrap().starts_with("mem_"));
    assert_eq!(first["namespace"], "default");
    assert_eq!(first["importance"], 7);
    assert_eq!(first["source"], "manual");
    assert_eq!(first["isLatestVersion"], true);
    assert_eq!(first["deletedAt"], json!(null));
    assert!(first["created_at"].as_u64().unwrap() > 1_600_000_000_000);

    // Identical put: same memory, nothing new.
    let again = c.post(
        "/api/v1/memory",
        &json!({ "key": "favourite_colour", "value": "blue" }),
    );
    assert_eq!(again.status, 200);
    assert_eq!(again.body["memory_id"], first["memory_id"]);

    // New value: a new latest version; the old one is kept as history.
    let second = c.post(
        "/api/v1/memory",
        &json!({ "key": "favourite_colour", "value": "green" }),
    );
    assert_eq!(second.status, 201);
    assert_ne!(second.body["memory_id"], first["memory_id"]);
    assert_eq!(second.body["version"], 2);
    assert_eq!(second.body["created_at"], first["created_at"]);

    let got = c.get("/api/v1/memory?key=favourite_colour");
    assert_eq!(got.status, 200);
    assert_eq!(got.body["value"], "green");
    assert_eq!(
        (
            got.body["access_count"].as_u64(),
            got.body["accessCount"].as_u64()
        ),
        (Some(1), Some(1))
    );
    let got = c.get("/api/v1/memory?key=favourite_colour&namespace=default");
    assert_eq!(got.body["accessCount"], 2);

    let history = c.get("/api/v1/memory/history?key=favourite_colour");
    let versions = history.body["data"].as_array().unwrap();
    assert_eq!(versions.len(), 2);
    assert_eq!(versions[0]["isLatestVersion"], true);
    assert_eq!(versions[1]["isLatestVersion"], false);
    assert_eq!(versions[1]["value"], "blue");
    assert_eq!(versions[1]["deletedAt"], json!(null));

    c.get("/api/v1/memory?key=never_written")
        .assert_error(404, "not_found");
    c.get("/api/v1/memory?key=favourite_colour&namespace=other")
        .assert_error(404, "not_found");
}

#[test]
fn soft_and_hard_delete() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &hash());
    let c = server.client(&keys[0]);
    put(&c, &json!({ "key": "temp", "value": "one" }));
    put(&c, &json!({ "key": "temp", "value": "two" }));
    let soft = c.delete("/api/v1/memory?key=temp");
    assert_eq!(soft.status, 200, "{:#}", soft.body);
    assert_eq!(
        (soft.body["deleted"].clone(), soft.body["hard"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(soft.body["memory"]["isLatestVersion"], false);
    assert!(soft.body["memory"]["deletedAt"].as_u64().is_some());
    c.get("/api/v1/memory?key=temp")
        .assert_error(404, "not_found");
    c.delete("/api/v1/memory?key=temp")
        .assert_error(404, "not_found");
    let listed = c.get("/api/v1/memory/list");
    assert!(listed.body["data"].as_array().unwrap().is_empty());
    let found = c.post("/api/v1/memory/search", &json!({ "query": "two" }));
    assert!(found.body["results"].as_array().unwrap().is_empty());
    // History keeps the soft-deleted version, stamped.
    let history = c.get("/api/v1/memory/history?key=temp").body;
    let versions = history["data"].as_array().unwrap();
    assert_eq!(versions.len(), 2);
    assert!(versions.iter().all(|v| v["isLatestVersion"] == false));
    assert!(versions[0]["deletedAt"].as_u64().is_some());

    // Hard delete removes every version for good.
    put(&c, &json!({ "key": "temp", "value": "three" }));
    let hard = c.delete("/api/v1/memory?key=temp&hard=true");
    assert_eq!(hard.status, 200);
    assert_eq!(hard.body["versions_removed"], 3);
    c.get("/api/v1/memory/history?key=temp")
        .assert_error(404, "not_found");
    c.delete("/api/v1/memory?key=temp&hard=true")
        .assert_error(404, "not_found");
}

#[test]
fn expiry_excludes_from_search_and_views() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &hash());
    let c = server.client(&keys[0]);
    // 1.5 seconds, expressed in days.
    put(
        &c,
        &json!({ "key": "flash", "value": "ephemeral sparkle", "expires_in_days": 1.5 / 86_400.0 }),
    );
    put(&c, &json!({ "key": "stays", "value": "durable sparkle" }));
    let before = c.post("/api/v1/memory/search", &json!({ "query": "sparkle" }));
    assert_eq!(before.body["results"].as_array().unwrap().len(), 2);
    let flash = c.get("/api/v1/memory?key=flash").body;
    let expires_at = flash["expires_at"]
        .as_u64()
        .unwrap_or_else(|| panic!("no expires_at: {flash:#}"));
    // Waits for the clock, not a fixed time: from expires_at on, it is no longer live.
    poll_until(Duration::from_secs(10), "expires_at never came", || {
        let now = now_ms();
        if now > expires_at {
            Ok(())
        } else {
            Err(format!("{} ms to go", expires_at - now))
        }
    });
    let after = c.post("/api/v1/memory/search", &json!({ "query": "sparkle" }));
    let results = after.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["key"], "stays");
    c.get("/api/v1/memory?key=flash")
        .assert_error(404, "not_found");
    assert_eq!(
        c.get("/api/v1/memory/list").body["data"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        c.get("/api/v1/memory/namespaces").body["namespaces"],
        json!([{ "namespace": "default", "count": 1 }])
    );
    assert_eq!(c.get("/api/v1/memory/export").body["count"], 1);
}

#[test]
fn list_pages_and_filters_and_namespaces() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &hash());
    let c = server.client(&keys[0]);
    for i in 0..7 {
        let ns = if i % 2 == 0 { "work" } else { "home" };
        let tags = if i % 3 == 0 {
            json!(["a", "b"])
        } else {
            json!(["a"])
        };
        put(
            &c,
            &json!({ "key": format!("item_{i}"), "value": format!("value {i}"), "namespace": ns, "tags": tags }),
        );
    }
    let mut keys_seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/memory/list?limit=3&cursor={c}"),
            None => "/api/v1/memory/list?limit=3".to_string(),
        };
        let page = c.get(&path).body;
        assert!(page["data"].as_array().unwrap().len() <= 3);
        keys_seen.extend(
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["key"].as_str().unwrap().to_string()),
        );
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    let expected: Vec<String> = (0..7).rev().map(|i| format!("item_{i}")).collect();
    assert_eq!(keys_seen, expected, "newest first, every live memory once");

    let work = c.get("/api/v1/memory/list?namespace=work").body;
    assert_eq!(work["data"].as_array().unwrap().len(), 4);
    assert_eq!(work["next_cursor"], json!(null));
    let tagged = c.get("/api/v1/memory/list?tags=a,b").body;
    let tagged_keys: Vec<&str> = tagged["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["key"].as_str().unwrap())
        .collect();
    assert_eq!(tagged_keys, ["item_6", "item_3", "item_0"]);
    // The maximum page is 200: a larger limit is capped, not refused.
    assert_eq!(c.get("/api/v1/memory/list?limit=500").status, 200);

    let ns = c.get("/api/v1/memory/namespaces").body;
    assert_eq!(
        ns["namespaces"],
        json!([{ "namespace": "home", "count": 3 }, { "namespace": "work", "count": 4 }])
    );
}

#[test]
fn dedupe_removes_the_less_useful_copy() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &hash());
    let c = server.client(&keys[0]);
    let keep = put(
        &c,
        &json!({ "key": "coffee_a", "value": "The user drinks black coffee every morning", "importance": 8 }),
    );
    let drop = put(
        &c,
        &json!({ "key": "coffee_b", "value": "The user drinks black coffee every morning!", "importance": 3 }),
    );
    put(
        &c,
        &json!({ "key": "other", "value": "Quarterly revenue grew by eight percent" }),
    );
    put(
        &c,
        &json!({ "key": "coffee_c", "value": "The user drinks black coffee every morning", "namespace": "elsewhere" }),
    );

    let dry = c.post("/api/v1/memory/dedupe", &json!({ "dry_run": true }));
    assert_eq!(dry.status, 200, "{:#}", dry.body);
    assert_eq!(dry.body["removed"], 1);
    assert_eq!(dry.body["pairs"][0]["kept"], keep["memory_id"]);
    assert_eq!(dry.body["pairs"][0]["removed"], drop["memory_id"]);
    assert!(dry.body["pairs"][0]["similarity"].as_f64().unwrap() >= 0.92);
    assert_eq!(
        c.get("/api/v1/memory/list").body["data"]
            .as_array()
            .unwrap()
            .len(),
        4,
        "dry run changes nothing"
    );

    let real = c.post("/api/v1/memory/dedupe", &json!({ "namespace": "default" }));
    assert_eq!(
        (real.body["removed"].clone(), real.body["kept"].clone()),
        (json!(1), json!(2))
    );
    c.get("/api/v1/memory?key=coffee_b")
        .assert_error(404, "not_found");
    assert_eq!(c.get("/api/v1/memory?key=coffee_a").status, 200);
    let history = c.get("/api/v1/memory/history?key=coffee_b").body;
    assert!(
        history["data"][0]["deletedAt"].as_u64().is_some(),
        "dedupe soft-deletes"
    );
    let again = c.post("/api/v1/memory/dedupe", &json!({}));
    assert_eq!(again.body["removed"], 0);
}
