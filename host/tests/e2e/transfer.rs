//! Export of one account imported by another.

use serde_json::json;

use crate::common::{Options, put, server_with_keys};

#[test]
fn export_of_a_imports_into_b() {
    let options = Options {
        hash_embedder: true,
        ..Default::default()
    };
    let (_tmp, server, keys) = server_with_keys(&[("alice", "free"), ("bob", "free")], &options);
    let (a, b) = (server.client(&keys[0]), server.client(&keys[1]));
    put(
        &a,
        &json!({ "key": "first", "value": "one", "tags": ["x"], "importance": 9 }),
    );
    put(
        &a,
        &json!({ "key": "second", "value": "two", "namespace": "notes" }),
    );
    put(
        &a,
        &json!({ "key": "second", "value": "two, revised", "namespace": "notes" }),
    );
    put(&a, &json!({ "key": "gone", "value": "deleted" }));
    a.delete("/api/v1/memory?key=gone");

    let export = a.get("/api/v1/memory/export");
    assert_eq!(export.status, 200);
    assert_eq!(
        export.body["count"], 2,
        "live memories only: {:#}",
        export.body
    );
    let memories = export.body["memories"].as_array().unwrap();
    assert_eq!(memories[0]["key"], "first", "oldest first");
    assert_eq!(memories[1]["value"], "two, revised");

    let imported = b.post("/api/v1/memory/import", &export.body);
    assert_eq!(imported.status, 200, "{:#}", imported.body);
    assert_eq!(
        imported.body,
        json!({ "imported": 2, "failed": 0, "errors": [] })
    );
    let got = b.get("/api/v1/memory?key=first").body;
    assert_eq!(
        (
            got["value"].clone(),
            got["tags"].clone(),
            got["importance"].clone()
        ),
        (json!("one"), json!(["x"]), json!(9))
    );
    assert_eq!(got["source"], "manual");
    assert_eq!(
        b.get("/api/v1/memory?key=second&namespace=notes").body["value"],
        "two, revised"
    );
    let found = b.post("/api/v1/memory/search", &json!({ "query": "revised" }));
    assert_eq!(found.body["results"][0]["key"], "second");

    // Importing the same document again changes nothing (identical puts).
    let again = b.post("/api/v1/memory/import", &export.body);
    assert_eq!(again.body["imported"], 2);
    assert_eq!(
        b.get("/api/v1/memory/history?key=first").body["data"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}
