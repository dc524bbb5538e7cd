//! A tenant never sees another's data, on any memory route.

use serde_json::json;

use crate::common::{Options, put, server_with_keys};

#[test]
fn account_b_reaches_nothing_of_a() {
    let options = Options {
        hash_embedder: true,
        ..Default::default()
    };
    let (_tmp, server, keys) =
        server_with_keys(&[("alice", "free"), ("mallory", "free")], &options);
    let (a, b) = (server.client(&keys[0]), server.client(&keys[1]));
    put(
        &a,
        &json!({ "key": "secret", "value": "alice's launch code 4242", "namespace": "vault", "tags": ["t"] }),
    );
    put(&a, &json!({ "key": "dup", "value": "same words here" }));
    put(&b, &json!({ "key": "dup", "value": "same words here" }));

    b.get("/api/v1/memory?key=secret&namespace=vault")
        .assert_error(404, "not_found");
    b.get("/api/v1/memory/history?key=secret&namespace=vault")
        .assert_error(404, "not_found");
    b.delete("/api/v1/memory?key=secret&namespace=vault")
        .assert_error(404, "not_found");
    b.delete("/api/v1/memory?key=secret&namespace=vault&hard=true")
        .assert_error(404, "not_found");
    for mode in ["hybrid", "semantic", "keyword"] {
        let r = b.post(
            "/api/v1/memory/search",
            &json!({ "query": "alice launch code 4242", "mode": mode }),
        );
        let hits = r.body["results"].as_array().unwrap();
        assert!(
            hits.iter().all(|h| h["key"] == "dup"),
            "{mode}: {:#}",
            r.body
        );
    }
    let r = b.post(
        "/api/v1/memory/search",
        &json!({ "query": "launch code", "namespace": "vault" }),
    );
    assert!(r.body["results"].as_array().unwrap().is_empty());
    let list = b.get("/api/v1/memory/list").body;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    assert_eq!(
        b.get("/api/v1/memory/list?namespace=vault").body["data"],
        json!([])
    );
    assert_eq!(
        b.get("/api/v1/memory/namespaces").body["namespaces"],
        json!([{ "namespace": "default", "count": 1 }])
    );
    let export = b.get("/api/v1/memory/export").body;
    assert_eq!(export["count"], 1);
    assert!(!export.to_string().contains("4242"));
    // Dedupe never pairs across accounts: identical texts in two accounts stay.
    assert_eq!(
        b.post("/api/v1/memory/dedupe", &json!({})).body["removed"],
        0
    );
    // Same key in both accounts is two separate memories.
    b.delete("/api/v1/memory?key=dup&hard=true");
    assert_eq!(a.get("/api/v1/memory?key=dup").status, 200);
    assert_eq!(
        a.get("/api/v1/memory?key=secret&namespace=vault").body["value"],
        "alice's launch code 4242"
    );
}
