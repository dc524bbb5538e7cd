//! The plan's memory quota: 402 on put and on import.

use serde_json::json;

use crate::common::{Options, put, server_with_keys};

const TINY_FREE_PLAN: &str = "[plans.free]\nspawns_per_minute = 5\nspawns_per_hour = 30\n\
    concurrent_agents = 2\nmemories = 3\nagent_hours_per_month = 1.0\n";

#[test]
fn put_and_import_stop_at_the_quota() {
    let options = Options {
        config: Some(TINY_FREE_PLAN.into()),
        hash_embedder: true,
        ..Default::default()
    };
    let (_tmp, server, keys) = server_with_keys(&[("small", "free"), ("big", "liftoff")], &options);
    let c = server.client(&keys[0]);
    put(&c, &json!({ "key": "a", "value": "1" }));
    put(
        &c,
        &json!({ "key": "b", "value": "2", "namespace": "other" }),
    );
    put(&c, &json!({ "key": "c", "value": "3" }));
    let r = c.post("/api/v1/memory", &json!({ "key": "d", "value": "4" }));
    r.assert_error(402, "memory_quota_exceeded");
    assert_eq!(r.body["error"]["details"], json!({ "limit": 3, "used": 3 }));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("dedupe")
    );
    // Updating a live memory needs no room; identical puts neither.
    assert_eq!(
        c.post(
            "/api/v1/memory",
            &json!({ "key": "a", "value": "1 updated" })
        )
        .status,
        201
    );
    assert_eq!(
        c.post("/api/v1/memory", &json!({ "key": "c", "value": "3" }))
            .status,
        200
    );
    // Room again after a delete.
    assert_eq!(c.delete("/api/v1/memory?key=c").status, 200);
    // Import: items in order, halting at the quota; earlier items stay.
    let r = c.post(
        "/api/v1/memory/import",
        &json!({ "memories": [
            { "key": "bad key", "value": "x" },
            { "key": "e", "value": "5" },
            { "key": "f", "value": "6" },
            { "key": "g", "value": "7" },
        ]}),
    );
    r.assert_error(402, "memory_quota_exceeded");
    let d = &r.body["error"]["details"];
    assert_eq!(
        (
            d["imported"].clone(),
            d["failed"].clone(),
            d["limit"].clone(),
            d["used"].clone()
        ),
        (json!(1), json!(1), json!(3), json!(3))
    );
    assert_eq!(d["errors"][0]["index"], 0);
    assert_eq!(d["errors"][0]["code"], "invalid_key");
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("importing 1")
    );
    assert_eq!(c.get("/api/v1/memory?key=e").status, 200);
    c.get("/api/v1/memory?key=f").assert_error(404, "not_found");

    // Another account's plan has its own pool.
    let big = server.client(&keys[1]);
    for i in 0..5 {
        put(&big, &json!({ "key": format!("k{i}"), "value": "v" }));
    }
}
