//! Durability: kill -9 during a stream of creates, updates, soft and hard deletes; after a
//! restart every acknowledged write is there exactly (values, versions, deletions), and
//! the live memories are searchable (the indexes replay what they missed).

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};

use crate::common::{Client, Options, Server, create_key, poll_until};

/// What a key holds: its versions' values, oldest first.
#[derive(Clone, Debug, PartialEq)]
enum State {
    /// Never written, or hard-deleted: no version at all.
    Absent,
    Live(Vec<String>),
    SoftDeleted(Vec<String>),
}

/// The value of version `v` of writer `w`'s key `j`, with a marker word for keyword search.
fn value(w: usize, j: usize, v: usize) -> String {
    format!("writer {w} wrote note number {j} version {v} marker{w}x{j}v{v}")
}

/// Writer `w`'s step `i`: each key `j` gets three writes — a create, an update, then a
/// soft delete (j % 3 == 0), a hard delete (1) or a second update (2). Returns the key,
/// the request, the status that acknowledges it, and the key's state once acknowledged.
fn step(c: &Client, w: usize, i: usize) -> (String, reqwest::blocking::RequestBuilder, u16, State) {
    let (j, phase) = (i / 3, i % 3);
    let key = format!("w{w}_item_{j}");
    let put = |v: usize| {
        let body = json!({ "key": key, "value": value(w, j, v) });
        c.request(reqwest::Method::POST, "/api/v1/memory")
            .json(&body)
    };
    let values = |n: usize| (1..=n).map(|v| value(w, j, v)).collect::<Vec<_>>();
    let delete = |hard: bool| {
        c.request(
            reqwest::Method::DELETE,
            &format!("/api/v1/memory?key={key}&hard={hard}"),
        )
    };
    let (request, status, after) = match (phase, j % 3) {
        (0, _) => (put(1), 201, State::Live(values(1))),
        (1, _) => (put(2), 201, State::Live(values(2))),
        (_, 0) => (delete(false), 200, State::SoftDeleted(values(2))),
        (_, 1) => (delete(true), 200, State::Absent),
        _ => (put(3), 201, State::Live(values(3))),
    };
    (key, request, status, after)
}

/// What the server holds for `key`, read through get and history; checks that the live
/// version's value and version agree with its history and versions count 1, 2, 3….
fn observe(c: &Client, key: &str) -> State {
    let got = c.get(&format!("/api/v1/memory?key={key}"));
    let history = c.get(&format!("/api/v1/memory/history?key={key}"));
    if history.status == 404 {
        got.assert_error(404, "not_found");
        return State::Absent;
    }
    assert_eq!(history.status, 200, "{:#}", history.body);
    let versions = history.body["data"].as_array().unwrap();
    for (newest_first, record) in versions.iter().enumerate() {
        assert_eq!(
            record["version"],
            json!(versions.len() - newest_first),
            "{key}: {:#}",
            history.body
        );
    }
    let values: Vec<String> = versions
        .iter()
        .rev()
        .map(|r| r["value"].as_str().unwrap().to_string())
        .collect();
    if versions[0]["deletedAt"].is_null() {
        assert_eq!(got.status, 200, "{key}: {:#}", got.body);
        assert_eq!(got.body["memory_id"], versions[0]["memory_id"]);
        assert_eq!(got.body["version"], json!(values.len()));
        State::Live(values)
    } else {
        got.assert_error(404, "not_found");
        State::SoftDeleted(values)
    }
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let key = create_key(&dir, "acme", "lightyear");
    let mut server = Server::start_with(&dir, &Options::default());
    let acked = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (base, key, acked, stop) = (
                server.base.clone(),
                key.clone(),
                acked.clone(),
                stop.clone(),
            );
            // Returns (key, the states it may be in): one when its last write was
            // acknowledged, two (before and after) when the kill cut that write off.
            std::thread::spawn(move || {
                let c = Client::new(&base, Some(&key));
                let mut expected: Vec<(String, Vec<State>)> = Vec::new();
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let (k, request, ok, after) = step(&c, w, i);
                    if i % 3 == 0 {
                        expected.push((k.clone(), vec![State::Absent]));
                    }
                    let slot = &mut expected.last_mut().unwrap().1;
                    match request.bearer_auth(&key).send() {
                        Ok(r) => {
                            assert_eq!(r.status().as_u16(), ok, "{k} step {i}: {:?}", r.text());
                            acked.fetch_add(1, Ordering::Relaxed);
                            *slot = vec![after];
                        }
                        Err(_) => {
                            slot.push(after);
                            break;
                        }
                    }
                }
                expected
            })
        })
        .collect();
    poll_until(
        Duration::from_secs(60),
        "too few writes acknowledged",
        || {
            let n = acked.load(Ordering::Relaxed);
            if n >= 120 {
                Ok(())
            } else {
                Err(format!("{n} so far"))
            }
        },
    );
    server.kill9();
    stop.store(true, Ordering::Relaxed);
    let expected: Vec<(String, Vec<State>)> = writers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    assert!(
        acked.load(Ordering::Relaxed) >= 20,
        "too few writes acknowledged to mean anything"
    );

    let server = Server::start_with(&dir, &Options::default());
    let c = server.client(&key);
    for (k, allowed) in &expected {
        let found = observe(&c, k);
        assert!(
            allowed.contains(&found),
            "{k}: {found:?}, expected one of {allowed:?}"
        );
    }
    let certain_live = expected
        .iter()
        .filter(|(_, s)| matches!(s.as_slice(), [State::Live(_)]))
        .count();
    let maybe_live = expected
        .iter()
        .filter(|(_, s)| s.iter().any(|s| matches!(s, State::Live(_))))
        .count();
    let listed = c.get("/api/v1/memory/namespaces").body;
    let count = listed["namespaces"][0]["count"].as_u64().unwrap() as usize;
    assert!(
        (certain_live..=maybe_live).contains(&count),
        "{count} live, expected {certain_live}..={maybe_live}"
    );

    // Searchable through both indexes after the restart; deleted keys by neither.
    let settled: Vec<(&String, &State)> = expected
        .iter()
        .filter_map(|(k, s)| match s.as_slice() {
            [one] => Some((k, one)),
            _ => None,
        })
        .collect();
    let states: Vec<&State> = settled.iter().map(|(_, s)| *s).collect();
    assert!(
        states.contains(&&State::Absent)
            && states.iter().any(|s| matches!(s, State::SoftDeleted(_)))
            && states
                .iter()
                .any(|s| matches!(s, State::Live(v) if v.len() == 3)),
        "the kill came before a hard delete, a soft delete and a second update were all acknowledged"
    );
    for (k, state) in &settled {
        let (State::Live(values) | State::SoftDeleted(values)) = state else {
            continue;
        };
        let latest = values.last().unwrap();
        let marker = latest.rsplit(' ').next().unwrap();
        let r = c.post(
            "/api/v1/memory/search",
            &json!({ "query": marker, "mode": "keyword" }),
        );
        let keys = hit_keys(&r.body);
        if let State::Live(_) = state {
            assert_eq!(keys.first(), Some(k), "keyword index lost {k}");
        } else {
            assert!(!keys.contains(k), "keyword index kept deleted {k}");
            continue;
        }
        let r = c.post(
            "/api/v1/memory/search",
            &json!({ "query": latest, "mode": "semantic", "limit": 3 }),
        );
        let keys = hit_keys(&r.body);
        assert!(keys.contains(k), "vector index lost {k}: {keys:?}");
    }
}

/// The keys of a search response's results.
fn hit_keys(body: &Value) -> Vec<&String> {
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| match &h["key"] {
            Value::String(k) => Some(k),
            _ => None,
        })
        .collect()
}

#[test]
fn graceful_restart_keeps_everything() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let key = create_key(&dir, "acme", "free");
    let options = Options {
        hash_embedder: true,
        ..Default::default()
    };
    let mut server = Server::start_with(&dir, &options);
    let c = server.client(&key);
    crate::common::put(&c, &json!({ "key": "kept", "value": "survives a restart" }));
    server.stop();
    assert!(server.log().contains("saving indexes"), "{}", server.log());
    let server = Server::start_with(&dir, &options);
    let c = server.client(&key);
    assert_eq!(
        c.get("/api/v1/memory?key=kept").body["value"],
        "survives a restart"
    );
    let r = c.post("/api/v1/memory/search", &json!({ "query": "restart" }));
    assert_eq!(r.body["results"][0]["key"], "kept");
}
