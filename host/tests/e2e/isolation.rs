//! A tenant never sees another's data, on any memory route: read, search, list, export,
//! delete, dedupe, consolidate and import, and for the memories an agent writes too.
//! Every "B sees nothing" is checked against the same request by A finding something, so
//! an empty answer cannot pass for isolation.

use serde_json::{Value, json};

use crate::{
    agents::{spawn, wait_terminal},
    common::{Client, Options, Resp, put, server_with_keys},
};

/// Every live memory of the account (all namespaces), newest first, as full records.
fn live(c: &Client) -> Vec<Value> {
    let r = c.get("/api/v1/memory/list?limit=200");
    assert_eq!(r.status, 200, "{:#}", r.body);
    assert_eq!(
        r.body["next_cursor"],
        Value::Null,
        "one page holds them all"
    );
    r.body["data"].as_array().unwrap().clone()
}

/// Every stored version of every live key of the account: what must not change.
fn snapshot(c: &Client) -> Vec<(Value, Value)> {
    live(c)
        .into_iter()
        .map(|m| {
            let history = c.get(&format!(
                "/api/v1/memory/history?key={}&namespace={}",
                m["key"].as_str().unwrap(),
                m["namespace"].as_str().unwrap()
            ));
            assert_eq!(history.status, 200, "{:#}", history.body);
            (m, history.body["data"].clone())
        })
        .collect()
}

/// A search's results.
fn hits(r: &Resp) -> Vec<Value> {
    assert_eq!(r.status, 200, "{:#}", r.body);
    r.body["results"].as_array().unwrap().clone()
}

/// The memory_ids of a search's results.
fn hit_ids(r: &Resp) -> Vec<Value> {
    hits(r).iter().map(id_of).collect()
}

/// Every string in a JSON document, however deep: its texts, without its numbers.
fn strings(v: &Value) -> Vec<&str> {
    match v {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::Object(fields) => fields.values().flat_map(strings).collect(),
        _ => vec![],
    }
}

/// A record's memory_id: every version of every memory has its own.
fn id_of(m: &Value) -> Value {
    m["memory_id"].clone()
}

#[test]
fn account_b_reaches_nothing_of_a() {
    let (_tmp, server, keys) = server_with_keys(
        &[("alice", "free"), ("mallory", "free")],
        &Options::hash_embedder(),
    );
    let (a, b) = (server.client(&keys[0]), server.client(&keys[1]));
    put(
        &a,
        &json!({ "key": "secret", "value": "alice's launch code 4242", "namespace": "vault", "tags": ["t"] }),
    );
    put(&a, &json!({ "key": "dup", "value": "same words here" }));
    for (i, end) in ["", "!", "."].iter().enumerate() {
        put(
            &a,
            &json!({ "key": format!("colour_{i}"), "value": format!("Alice's favourite colour is teal{end}") }),
        );
    }
    put(&b, &json!({ "key": "dup", "value": "same words here" }));
    let b_dup = b.get("/api/v1/memory?key=dup").body;

    // A memory an agent of A writes: the default agent (offline Mind, memory_mode auto)
    // puts through its tool and has its run extracted into `agent_runs`.
    let agent = spawn(&a, "Remember that the vault code is 1234");
    let done = wait_terminal(&a, &agent);
    assert_eq!(done["status"], "completed", "{done:#}");
    let a_live = live(&a);
    assert!(
        a_live
            .iter()
            .any(|m| m["namespace"] == "agent_runs" && m["source"] == "auto_extracted"),
        "the agent's run memory: {a_live:#?}"
    );
    assert!(
        a_live
            .iter()
            .any(|m| m["source"] == "manual" && m["value"].as_str().unwrap().contains("1234")),
        "the agent's own put: {a_live:#?}"
    );
    let a_ids: Vec<Value> = a_live.iter().map(id_of).collect();
    let before = snapshot(&a);

    // A finds its own data by every route B is about to try.
    for mode in ["hybrid", "semantic", "keyword"] {
        for (query, secret) in [
            ("alice launch code 4242", "4242"),
            ("vault code 1234", "1234"),
        ] {
            let body = json!({ "query": query, "mode": mode });
            let mine = a.post("/api/v1/memory/search", &body);
            assert!(
                hits(&mine)
                    .iter()
                    .any(|h| h["value"].as_str().unwrap().contains(secret)),
                "{mode} {query}: A does not find it, so B not finding it proves nothing: {:#}",
                mine.body
            );
            let theirs = hit_ids(&b.post("/api/v1/memory/search", &body));
            assert!(
                theirs.iter().all(|id| *id == id_of(&b_dup)),
                "{mode} {query}: B got {theirs:?}"
            );
        }
    }
    let in_vault = json!({ "query": "launch code", "namespace": "vault" });
    assert!(!hit_ids(&a.post("/api/v1/memory/search", &in_vault)).is_empty());
    assert!(hit_ids(&b.post("/api/v1/memory/search", &in_vault)).is_empty());

    // Every live memory of A, by its address: A reads it, B gets 404 (or its own `dup`).
    for m in &a_live {
        let (key, ns) = (m["key"].as_str().unwrap(), m["namespace"].as_str().unwrap());
        let address = format!("key={key}&namespace={ns}");
        let got = a.get(&format!("/api/v1/memory?{address}"));
        assert_eq!(got.body["memory_id"], m["memory_id"], "{:#}", got.body);
        if key == "dup" {
            let own = b.get(&format!("/api/v1/memory?{address}")).body;
            assert_eq!(id_of(&own), id_of(&b_dup), "B reads its own dup: {own:#}");
            continue;
        }
        b.get(&format!("/api/v1/memory?{address}"))
            .assert_error(404, "not_found");
        b.get(&format!("/api/v1/memory/history?{address}"))
            .assert_error(404, "not_found");
    }

    // B's deletes of A's key are 404 and delete nothing.
    b.delete("/api/v1/memory?key=secret&namespace=vault")
        .assert_error(404, "not_found");
    b.delete("/api/v1/memory?key=secret&namespace=vault&hard=true")
        .assert_error(404, "not_found");
    assert_eq!(
        a.get("/api/v1/memory?key=secret&namespace=vault").body["value"],
        "alice's launch code 4242"
    );

    // B's views list only B's memory.
    let list = b.get("/api/v1/memory/list").body;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    assert_eq!(list["data"][0]["memory_id"], id_of(&b_dup));
    assert_eq!(
        b.get("/api/v1/memory/list?namespace=vault").body["data"],
        json!([])
    );
    assert_eq!(
        b.get("/api/v1/memory/list?namespace=agent_runs").body["data"],
        json!([])
    );
    assert_eq!(
        b.get("/api/v1/memory/namespaces").body["namespaces"],
        json!([{ "namespace": "default", "count": 1 }])
    );
    let export = b.get("/api/v1/memory/export").body;
    assert_eq!(export["count"], 1);
    // Only the export's texts are searched: its timestamps are digits that may spell a code.
    let texts = strings(&export).join("\n");
    for secret in ["4242", "1234", "teal"] {
        assert!(!texts.contains(secret), "{export:#}");
    }

    // Dedupe never pairs across accounts: identical texts in two accounts stay.
    assert_eq!(
        b.post("/api/v1/memory/dedupe", &json!({})).body["removed"],
        0
    );
    // Consolidate clusters only B's own memories, even at a threshold that joins anything.
    let b_colours: Vec<Value> = ["", "!", "."]
        .iter()
        .enumerate()
        .map(|(i, end)| {
            id_of(&put(
                &b,
                &json!({ "key": format!("colour_{i}"), "value": format!("Alice's favourite colour is teal{end}") }),
            ))
        })
        .collect();
    let merged = b.post(
        "/api/v1/memory/consolidate",
        &json!({ "threshold": 0.01, "min_cluster_size": 2 }),
    );
    assert_eq!(merged.status, 200, "{:#}", merged.body);
    let replaced: Vec<Value> = merged.body["consolidated"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["replaced"].as_array().unwrap().clone())
        .collect();
    assert!(
        b_colours.iter().all(|id| replaced.contains(id)),
        "B's own cluster is consolidated: {:#}",
        merged.body
    );
    assert!(
        replaced.iter().all(|id| !a_ids.contains(id)),
        "B's consolidate took A's memories: {:#}",
        merged.body
    );

    // Import writes B's own memories under A's keys; A's stay as they were.
    let imported = b.post(
        "/api/v1/memory/import",
        &json!({ "memories": [
            { "key": "secret", "namespace": "vault", "value": "mallory's decoy" },
            { "key": "colour_0", "value": "Mallory's favourite colour is red" },
        ] }),
    );
    assert_eq!(imported.status, 200, "{:#}", imported.body);
    assert_eq!(
        (
            imported.body["imported"].clone(),
            imported.body["failed"].clone()
        ),
        (json!(2), json!(0)),
        "{:#}",
        imported.body
    );
    let decoy = b.get("/api/v1/memory?key=secret&namespace=vault").body;
    assert_eq!(
        (decoy["value"].clone(), decoy["version"].clone()),
        (json!("mallory's decoy"), json!(1)),
        "a first version of B's own key: {decoy:#}"
    );
    assert!(!a_ids.contains(&id_of(&decoy)));

    // Same key in both accounts is two separate memories.
    let hard = b.delete("/api/v1/memory?key=dup&hard=true");
    assert_eq!(hard.status, 200, "{:#}", hard.body);
    assert_eq!(a.get("/api/v1/memory?key=dup").status, 200);
    assert_eq!(
        a.get("/api/v1/memory?key=secret&namespace=vault").body["value"],
        "alice's launch code 4242"
    );

    // After all of B's writes, every stored version of A's is exactly as before (the
    // access counter aside: A's own GETs above count).
    let strip = |mut records: Vec<(Value, Value)>| {
        for (m, versions) in &mut records {
            for r in std::iter::once(m).chain(versions.as_array_mut().unwrap()) {
                r.as_object_mut().unwrap().remove("access_count");
                r.as_object_mut().unwrap().remove("accessCount");
            }
        }
        records
    };
    assert_eq!(strip(snapshot(&a)), strip(before));

    // A's agent is A's alone.
    for path in [
        format!("/api/v1/agents/{agent}"),
        format!("/api/v1/agents/{agent}/logs"),
    ] {
        b.get(&path).assert_error(404, "agent_not_found");
        assert_eq!(a.get(&path).status, 200);
    }
    b.delete(&format!("/api/v1/agents/{agent}"))
        .assert_error(404, "agent_not_found");
    assert_eq!(b.get("/api/v1/agents").body["data"], json!([]));
    assert_eq!(
        a.get(&format!("/api/v1/agents/{agent}")).body["status"],
        "completed"
    );
}

/// Keyword scores use the account's own BM25 statistics (document count, average length):
/// B storing 60 memories full of A's query terms leaves A's keyword breakdown exactly as it
/// was. With index-wide statistics it moved, and so told A something about B's data.
#[test]
fn another_accounts_memories_leave_keyword_scores_unchanged() {
    let (_tmp, server, keys) = server_with_keys(
        &[("alice", "free"), ("bob", "lightyear")],
        &Options::hash_embedder(),
    );
    let (a, b) = (server.client(&keys[0]), server.client(&keys[1]));
    for (key, value) in [
        ("pie", "apple cherry pie"),
        ("day", "an apple a day keeps the doctor away"),
        ("spring", "cherry blossom in spring"),
        ("walk", "a quiet walk by the river"),
    ] {
        put(&a, &json!({ "key": key, "value": value }));
    }
    let keyword_breakdown = || -> Vec<(Value, Value)> {
        let query = json!({ "query": "apple cherry", "mode": "keyword" });
        hits(&a.post("/api/v1/memory/search", &query))
            .iter()
            .map(|h| (h["key"].clone(), h["breakdown"]["keyword"].clone()))
            .collect()
    };
    let before = keyword_breakdown();
    assert_eq!(before.len(), 3, "{before:?}");
    for i in 0..60 {
        let value = format!("apple number {i} and more apple words than anyone needs");
        put(&b, &json!({ "key": format!("b{i}"), "value": value }));
    }
    assert_eq!(keyword_breakdown(), before);
}
