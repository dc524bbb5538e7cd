//! Auth and the error envelope on every kind of bad request.

use serde_json::json;

use crate::common::{Client, Options, server_with_keys};

#[test]
fn auth_failures_are_401_invalid_api_key() {
    let (tmp, mut server, keys) = server_with_keys(
        &[("acme", "free"), ("revokee", "free")],
        &Options {
            hash_embedder: true,
            ..Default::default()
        },
    );
    let anon = Client::new(&server.base, None);
    anon.get("/api/v1/memory/namespaces")
        .assert_error(401, "invalid_api_key");
    for header in ["Basic abc", "Bearer", "Bearer   ", "wm_nope"] {
        let r = anon.send(
            anon.request(reqwest::Method::GET, "/api/v1/memory/namespaces")
                .header("authorization", header),
        );
        r.assert_error(401, "invalid_api_key");
    }
    server
        .client("wm_0000")
        .get("/api/v1/memory/namespaces")
        .assert_error(401, "invalid_api_key");
    assert_eq!(
        server
            .client(&keys[0])
            .get("/api/v1/memory/namespaces")
            .status,
        200
    );
    // An unauthenticated bad body is still a 401, not a 400.
    anon.post_raw("/api/v1/memory", "{not json")
        .assert_error(401, "invalid_api_key");

    // Revocation (server stopped: the CLI refuses a held data dir).
    server.stop();
    let dir = tmp.path().join("data");
    let (ok, _, _) = crate::common::cli(&[
        "keys",
        "revoke",
        "--data-dir",
        dir.to_str().unwrap(),
        &keys[1],
    ]);
    assert!(ok);
    let server = crate::common::Server::start_with(
        &dir,
        &Options {
            hash_embedder: true,
            ..Default::default()
        },
    );
    server
        .client(&keys[1])
        .get("/api/v1/memory/namespaces")
        .assert_error(401, "invalid_api_key");
    assert_eq!(
        server
            .client(&keys[0])
            .get("/api/v1/memory/namespaces")
            .status,
        200
    );
}

#[test]
fn framework_rejections_are_json_envelopes() {
    let (_tmp, server, keys) = server_with_keys(
        &[("acme", "free")],
        &Options {
            hash_embedder: true,
            ..Default::default()
        },
    );
    let c = server.client(&keys[0]);
    c.get("/api/v1/nope").assert_error(404, "route_not_found");
    c.get("/").assert_error(404, "route_not_found");
    let r = c.send(c.request(reqwest::Method::PUT, "/api/v1/memory/search"));
    r.assert_error(405, "method_not_allowed");
    c.post_raw("/api/v1/memory", "{not json")
        .assert_error(400, "invalid_body");
    c.post_raw("/api/v1/memory", "[1,2]")
        .assert_error(400, "invalid_body");
    c.post_raw("/api/v1/memory/search", "\"text\"")
        .assert_error(400, "invalid_body");
    c.post_raw("/api/v1/memory", "")
        .assert_error(400, "invalid_body");
    c.get("/api/v1/memory/list?limit=abc")
        .assert_error(400, "invalid_query");
    c.get("/api/v1/memory/list?limit=0")
        .assert_error(400, "invalid_query");
    c.get("/api/v1/memory/list?cursor=garbage")
        .assert_error(400, "invalid_query");
    c.get("/api/v1/memory").assert_error(400, "invalid_query");
    c.get("/api/v1/memory?key=Bad-Key")
        .assert_error(400, "invalid_query");
    c.delete("/api/v1/memory?key=k&hard=maybe")
        .assert_error(400, "invalid_query");
    let big = "x".repeat(2 << 20);
    c.post("/api/v1/memory", &json!({ "key": "k", "value": big }))
        .assert_error(413, "payload_too_large");
}

#[test]
fn validation_codes_name_the_field() {
    let (_tmp, server, keys) = server_with_keys(
        &[("acme", "free")],
        &Options {
            hash_embedder: true,
            ..Default::default()
        },
    );
    let c = server.client(&keys[0]);
    let cases = [
        (json!({ "value": "v" }), "invalid_key"),
        (json!({ "key": 5, "value": "v" }), "invalid_key"),
        (json!({ "key": "NotSnake", "value": "v" }), "invalid_key"),
        (json!({ "key": "1abc", "value": "v" }), "invalid_key"),
        (
            json!({ "key": "k".repeat(129), "value": "v" }),
            "invalid_key",
        ),
        (json!({ "key": "k" }), "invalid_value"),
        (json!({ "key": "k", "value": 42 }), "invalid_value"),
        (json!({ "key": "k", "value": { "a": 1 } }), "invalid_value"),
        (
            json!({ "key": "k", "value": "x".repeat(5_001) }),
            "invalid_value",
        ),
        (
            json!({ "key": "k", "value": "v", "tags": (0..21).map(|i| i.to_string()).collect::<Vec<_>>() }),
            "invalid_tags",
        ),
        (
            json!({ "key": "k", "value": "v", "tags": ["t".repeat(51)] }),
            "invalid_tags",
        ),
        (
            json!({ "key": "k", "value": "v", "tags": "a,b" }),
            "invalid_tags",
        ),
        (
            json!({ "key": "k", "value": "v", "importance": 0 }),
            "invalid_importance",
        ),
        (
            json!({ "key": "k", "value": "v", "importance": 11 }),
            "invalid_importance",
        ),
        (
            json!({ "key": "k", "value": "v", "importance": "high" }),
            "invalid_importance",
        ),
        (
            json!({ "key": "k", "value": "v", "namespace": "" }),
            "invalid_namespace",
        ),
        (
            json!({ "key": "k", "value": "v", "expires_in_days": -1 }),
            "invalid_expires_in_days",
        ),
    ];
    for (body, code) in cases {
        let r = c.post("/api/v1/memory", &body);
        r.assert_error(400, code);
        let field = code.trim_start_matches("invalid_");
        assert_eq!(r.body["error"]["details"]["field"], field, "{body}");
        assert!(
            r.body["error"]["message"].as_str().unwrap().contains(field),
            "{:#}",
            r.body
        );
    }
    // Boundaries that are fine.
    let ok = c.post("/api/v1/memory", &json!({ "key": "k".repeat(128), "value": "x".repeat(5_000), "tags": (0..20).map(|i| i.to_string()).collect::<Vec<_>>(), "importance": 10 }));
    assert_eq!(ok.status, 201, "{:#}", ok.body);

    let search = [
        (json!({}), "invalid_query"),
        (json!({ "query": "" }), "invalid_query"),
        (json!({ "query": "q", "mode": "fuzzy" }), "invalid_mode"),
        (
            json!({ "query": "q", "min_score": 1.5 }),
            "invalid_min_score",
        ),
        (
            json!({ "query": "q", "min_score": -0.1 }),
            "invalid_min_score",
        ),
        (json!({ "query": "q", "limit": 0 }), "invalid_limit"),
        (json!({ "query": "q", "tags": [1] }), "invalid_tags"),
    ];
    for (body, code) in search {
        c.post("/api/v1/memory/search", &body)
            .assert_error(400, code);
    }
    c.post("/api/v1/memory/dedupe", &json!({ "threshold": 1.2 }))
        .assert_error(400, "invalid_threshold");
    c.post("/api/v1/memory/dedupe", &json!({ "dry_run": "yes" }))
        .assert_error(400, "invalid_dry_run");
    c.post("/api/v1/memory/import", &json!({ "memories": "no" }))
        .assert_error(400, "invalid_memories");
}

/// What the server itself answers without a key, for every operation its document lists:
/// 401 `invalid_api_key` everywhere but the document, its reference page and the payment
/// provider's webhook (401 `missing_id_token` on the console's routes, which take an ID
/// token), whatever the body or parameters (the document's own `security` is held to the
/// same list by a unit test). The webhook's signature is its authentication: unsigned, it
/// is 400 `invalid_signature`.
#[test]
fn only_the_document_its_reference_page_and_the_webhook_answer_without_a_key() {
    let (_tmp, server, _keys) = server_with_keys(
        &[],
        &Options {
            hash_embedder: true,
            ..Default::default()
        },
    );
    let http = reqwest::blocking::Client::new();
    let document: serde_json::Value = http
        .get(format!("{}/api/v1/openapi.json", server.base))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let mut keyless = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            let Ok(verb) = reqwest::Method::from_bytes(method.to_ascii_uppercase().as_bytes())
            else {
                continue;
            };
            let url = path
                .replace("{id}", "ag_0000000000")
                .replace("{file}", "index.html");
            let r = http
                .request(verb.clone(), format!("{}{url}", server.base))
                .header("content-type", "application/json")
                .body("{}")
                .send()
                .unwrap();
            if r.status().as_u16() == 401 {
                let body: serde_json::Value = r.json().unwrap();
                // The console's routes take an ID token, the rest an API key.
                let code = if path.starts_with("/api/v1/console/") {
                    "missing_id_token"
                } else {
                    "invalid_api_key"
                };
                assert_eq!(body["error"]["code"], code, "{verb} {path}");
            } else {
                if path == "/api/v1/billing/webhook" {
                    assert_eq!(r.status().as_u16(), 400, "an unsigned webhook");
                }
                keyless.push(format!("{verb} {path}"));
            }
        }
    }
    keyless.sort();
    assert_eq!(
        keyless,
        [
            "GET /api/v1/docs",
            "GET /api/v1/docs/",
            "GET /api/v1/docs/{file}",
            "GET /api/v1/openapi.json",
            "POST /api/v1/billing/webhook",
        ]
    );
}
