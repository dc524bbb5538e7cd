//! Search with the real embedders (all-MiniLM-L6-v2, and e5-small-v2 with its query and
//! passage prefixes and its own hybrid weights): meaning, keywords, filters, scores.

use serde_json::{Value, json};

use crate::common::{Client, Options, Server, put, server_with_keys};

fn seed(c: &Client) {
    let memories = [
        (
            "pet",
            "The feline rested on the rug all afternoon",
            "home",
            json!(["animals"]),
            5,
        ),
        (
            "finance",
            "Quarterly revenue grew by eight percent",
            "work",
            json!(["numbers"]),
            5,
        ),
        (
            "lunch",
            "Pizza with mushrooms is the favourite meal",
            "home",
            json!(["food"]),
            5,
        ),
        (
            "serial",
            "Router serial number is XJ9-4471-QZ",
            "work",
            json!(["devices", "numbers"]),
            2,
        ),
        (
            "trip",
            "Flight to Lisbon departs on the third of May",
            "home",
            json!(["travel"]),
            5,
        ),
    ];
    for (key, value, ns, tags, importance) in memories {
        put(
            c,
            &json!({ "key": key, "value": value, "namespace": ns, "tags": tags, "importance": importance }),
        );
    }
}

fn keys_of(r: &Value) -> Vec<String> {
    r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["key"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn meaning_keywords_filters_and_scores() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &Options::default());
    assert!(server.log().contains("all-MiniLM-L6-v2-onnx-int8"));
    meaning_keywords_filters_and_scores_with(&server.client(&keys[0]));
}

/// The same searches find the same with e5-small-v2; its data dir (or database) then
/// refuses to start with MiniLM, naming both models.
#[test]
fn meaning_keywords_filters_and_scores_with_e5() {
    let e5 = Options {
        env: vec![("WASMIND_EMBEDDER_MODEL".into(), "e5-small-v2".into())],
        ..Options::default()
    };
    let (tmp, mut server, keys) = server_with_keys(&[("acme", "free")], &e5);
    assert!(server.log().contains("e5-small-v2-onnx-int8"));
    meaning_keywords_filters_and_scores_with(&server.client(&keys[0]));
    server.stop();
    let refused = Server::try_start(&tmp.path().join("data"), &Options::default())
        .err()
        .expect("MiniLM started on e5's vectors");
    for identity in [
        "onnx:e5-small-v2-onnx-int8:384",
        "onnx:all-MiniLM-L6-v2-onnx-int8:384",
    ] {
        assert!(refused.contains(identity), "{identity} not in {refused}");
    }
}

fn meaning_keywords_filters_and_scores_with(c: &Client) {
    seed(c);

    // A paraphrase sharing no words with the memory ranks it first.
    for mode in ["semantic", "hybrid"] {
        let r = c.post(
            "/api/v1/memory/search",
            &json!({ "query": "a cat sleeping on the carpet", "mode": mode }),
        );
        assert_eq!(r.status, 200, "{:#}", r.body);
        assert_eq!(keys_of(&r.body)[0], "pet", "{mode}: {:#}", r.body);
    }

    // A keyword-only hit (an opaque code) is found in hybrid mode.
    let r = c.post(
        "/api/v1/memory/search",
        &json!({ "query": "XJ9-4471-QZ", "limit": 1 }),
    );
    assert_eq!(keys_of(&r.body), ["serial"], "{:#}", r.body);
    let hit = &r.body["results"][0];
    assert_eq!(hit["breakdown"]["keyword"], 1.0);
    assert_eq!(hit["source"], "manual");
    assert!(hit["memory_id"].as_str().unwrap().starts_with("mem_"));
    for part in ["semantic", "keyword", "importance", "timeDecay"] {
        let v = hit["breakdown"][part].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&v), "{part} = {v}");
    }

    // Keyword mode finds words, not meanings.
    let r = c.post(
        "/api/v1/memory/search",
        &json!({ "query": "revenue", "mode": "keyword" }),
    );
    assert_eq!(keys_of(&r.body), ["finance"]);
    let r = c.post(
        "/api/v1/memory/search",
        &json!({ "query": "a cat sleeping on the carpet", "mode": "keyword" }),
    );
    assert!(!keys_of(&r.body).contains(&"pet".to_string()));

    // Scores are in [0, 1] and sorted descending; min_score drops the rest.
    let r = c.post(
        "/api/v1/memory/search",
        &json!({ "query": "what do I like to eat" }),
    );
    let scores: Vec<f64> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)));
    assert_eq!(keys_of(&r.body)[0], "lunch");
    let cut = scores[0] - 0.0001;
    let r = c.post(
        "/api/v1/memory/search",
        &json!({ "query": "what do I like to eat", "min_score": cut }),
    );
    assert_eq!(keys_of(&r.body), ["lunch"]);

    // Namespace and tag (AND) filters.
    let r = c.post(
        "/api/v1/memory/search",
        &json!({ "query": "numbers", "namespace": "work" }),
    );
    assert!(
        keys_of(&r.body)
            .iter()
            .all(|k| k == "finance" || k == "serial")
    );
    let r = c.post(
        "/api/v1/memory/search",
        &json!({ "query": "number", "tags": ["numbers", "devices"] }),
    );
    assert_eq!(keys_of(&r.body), ["serial"]);
    let r = c.post(
        "/api/v1/memory/search",
        &json!({ "query": "number", "tags": ["numbers", "food"] }),
    );
    assert!(keys_of(&r.body).is_empty());

    // Limit: default 10, capped at 50.
    let r = c.post(
        "/api/v1/memory/search",
        &json!({ "query": "anything", "limit": 2 }),
    );
    assert_eq!(keys_of(&r.body).len(), 2);
    assert_eq!(
        c.post(
            "/api/v1/memory/search",
            &json!({ "query": "anything", "limit": 500 })
        )
        .status,
        200
    );
}

#[test]
fn a_search_sees_every_acknowledged_put() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &Options::default());
    let c = server.client(&keys[0]);
    for i in 0..15 {
        let word = format!("zebracode{i}");
        put(
            &c,
            &json!({ "key": format!("k{i}"), "value": format!("remember {word} please") }),
        );
        let r = c.post(
            "/api/v1/memory/search",
            &json!({ "query": word, "mode": "keyword" }),
        );
        assert_eq!(keys_of(&r.body), [format!("k{i}")]);
        let r = c.post(
            "/api/v1/memory/search",
            &json!({ "query": format!("remember {word} please"), "mode": "semantic", "limit": 1 }),
        );
        assert_eq!(keys_of(&r.body), [format!("k{i}")]);
    }
}
