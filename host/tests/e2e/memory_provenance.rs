//! Provenance of memory versions (issue 26): every door a write comes in by — REST, import,
//! MCP, consolidation (here), an agent's tool call and automatic extraction
//! (`memory_modes`) — is recorded on the version with the key, agent and replaced ids it
//! has, returned by get, history and search, and never to another account.

use std::{collections::HashMap, path::Path};

use serde_json::{Value, json};

use crate::{
    common::{
        Client, Options, Server, cli, create_key,
        fake_mind::{FakeMind, Reply},
        put,
    },
    mcp::{Via, call, ok, results, session},
};

/// account → id of its key, as `keys list` shows them (read before the server starts).
fn key_ids(dir: &Path) -> HashMap<String, String> {
    let (done, listing, err) = cli(&["keys", "list", "--data-dir", dir.to_str().unwrap()]);
    assert!(done, "{err}");
    listing
        .lines()
        .skip(1)
        .map(|line| {
            let mut cols = line.split_whitespace();
            let id = cols.next().unwrap().to_string();
            (cols.next().unwrap().to_string(), id)
        })
        .collect()
}

/// The provenance of the live memory at `address` (`key=…[&namespace=…]`), as get and the
/// newest history entry give it (they must agree).
#[track_caller]
fn provenance(c: &Client, address: &str) -> Value {
    let got = c.get(&format!("/api/v1/memory?{address}"));
    assert_eq!(got.status, 200, "{:#}", got.body);
    let history = c.get(&format!("/api/v1/memory/history?{address}"));
    assert_eq!(history.status, 200, "{:#}", history.body);
    assert_eq!(
        history.body["data"][0]["provenance"],
        got.body["provenance"]
    );
    got.body["provenance"].clone()
}

/// What a keyed door records: the door and the key, nothing of agents or summaries.
fn keyed(door: &str, key_id: &str) -> Value {
    json!({ "door": door, "key_id": key_id, "agent_id": null, "step": null, "replaced": [] })
}

#[test]
fn each_door_is_recorded_with_its_key_and_no_other_account_reads_it() {
    let summary =
        json!({ "key": "colour_summary", "value": "The user's favourite colour is blue." });
    let mind = FakeMind::start([Reply::tool_call("write_summary", summary)]);
    let options = Options {
        config: Some("[memory]\nconsolidate_cooldown_secs = 0\n".into()),
        ..Options::hash_embedder()
    }
    .openai_mind(&mind.base_url());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let (acme_key, beta_key) = (
        create_key(&dir, "acme", "free"),
        create_key(&dir, "beta", "free"),
    );
    let ids = key_ids(&dir);
    let server = Server::start_with(&dir, &options);
    let (acme, beta) = (server.client(&acme_key), server.client(&beta_key));
    let acme_id = ids["acme"].as_str();
    assert!(acme_id.starts_with("key_") && ids["beta"] != acme_id);

    put(
        &acme,
        &json!({ "key": "city", "value": "The user lives in Lisbon." }),
    );
    assert_eq!(provenance(&acme, "key=city"), keyed("rest", acme_id));

    let imported = acme.post(
        "/api/v1/memory/import",
        &json!({ "memories": [{ "key": "pet", "value": "The user has a cat named Miso." }] }),
    );
    assert_eq!(imported.status, 200, "{:#}", imported.body);
    assert_eq!(provenance(&acme, "key=pet"), keyed("import", acme_id));

    let report = session(
        Via::Http,
        &server,
        &acme_key,
        &json!([call(
            "service_memory_put",
            &json!({ "key": "team", "value": "The user supports Benfica." })
        )]),
    );
    ok(&results(&report)[0]);
    assert_eq!(provenance(&acme, "key=team"), keyed("mcp", acme_id));

    let originals: Vec<Value> = ["", "!", "."]
        .iter()
        .enumerate()
        .map(|(i, end)| {
            let value = format!("The user's favourite colour is blue{end}");
            let body =
                json!({ "namespace": "colours", "key": format!("colour_{i}"), "value": value });
            put(&acme, &body)["memory_id"].clone()
        })
        .collect();
    let done = acme.post(
        "/api/v1/memory/consolidate",
        &json!({ "namespace": "colours" }),
    );
    assert_eq!(done.status, 200, "{:#}", done.body);
    let merged = &done.body["consolidated"][0];
    let summary_key = merged["key"].as_str().unwrap();
    let written = provenance(&acme, &format!("key={summary_key}&namespace=colours"));
    assert_eq!(
        (&written["door"], &written["key_id"]),
        (&json!("consolidation"), &json!(acme_id))
    );
    let mut replaced = written["replaced"].as_array().unwrap().clone();
    replaced.sort_by_key(|v| v.to_string());
    let mut expected = originals;
    expected.sort_by_key(|v| v.to_string());
    assert_eq!(replaced, expected, "{written:#}");
    assert_eq!(merged["replaced"].as_array().unwrap().len(), 3);

    let found = acme.post(
        "/api/v1/memory/search",
        &json!({ "query": "Lisbon", "mode": "keyword" }),
    );
    assert_eq!(found.status, 200, "{:#}", found.body);
    assert_eq!(found.body["results"][0]["key"], "city");
    assert_eq!(
        found.body["results"][0]["provenance"],
        keyed("rest", acme_id)
    );

    // Another account reads none of it: not the memory, its history, nor a search hit.
    let summary_address = format!("key={summary_key}&namespace=colours");
    for address in ["key=city", "key=pet", "key=team", &summary_address] {
        beta.get(&format!("/api/v1/memory?{address}"))
            .assert_error(404, "not_found");
        beta.get(&format!("/api/v1/memory/history?{address}"))
            .assert_error(404, "not_found");
    }
    let theirs = beta.post(
        "/api/v1/memory/search",
        &json!({ "query": "Lisbon cat Benfica colour" }),
    );
    assert_eq!(theirs.status, 200, "{:#}", theirs.body);
    assert_eq!(theirs.body["results"], json!([]));
    // Its own write records its own key.
    put(&beta, &json!({ "key": "city", "value": "Porto" }));
    assert_eq!(provenance(&beta, "key=city"), keyed("rest", &ids["beta"]));
}
