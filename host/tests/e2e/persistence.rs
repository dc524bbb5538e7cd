//! Durability: kill -9 during a stream of puts; every acknowledged put survives and is
//! searchable after a restart (the indexes replay what they missed).

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use serde_json::json;

use crate::common::{Client, Options, Server, create_key};

#[test]
fn acknowledged_puts_survive_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let key = create_key(&dir, "acme", "lightyear");
    let mut server = Server::start_with(&dir, &Options::default());
    let acked = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (base, key, acked, stop) = (server.base.clone(), key.clone(), acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let c = Client::new(&base, Some(&key));
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let k = format!("w{w}_item_{i}");
                    let body = json!({ "key": k, "value": format!("writer {w} wrote note number {i} marker{w}x{i}") });
                    let req = c.request(reqwest::Method::POST, "/api/v1/memory").bearer_auth(&key).json(&body);
                    match req.send() {
                        Ok(r) if r.status().as_u16() == 201 => acked.lock().unwrap().push(k),
                        _ => break,
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(2_500));
    server.kill9();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() >= 20,
        "too few puts acknowledged to mean anything: {}",
        acked.len()
    );

    let server = Server::start_with(&dir, &Options::default());
    let c = server.client(&key);
    let listed = c.get("/api/v1/memory/namespaces").body;
    assert!(listed["namespaces"][0]["count"].as_u64().unwrap() >= acked.len() as u64);
    for k in &acked {
        assert_eq!(
            c.get(&format!("/api/v1/memory?key={k}")).status,
            200,
            "{k} lost"
        );
    }
    // Searchable through both indexes after the restart.
    for k in acked.iter().step_by((acked.len() / 10).max(1)) {
        let (w, i) = k.trim_start_matches('w').split_once("_item_").unwrap();
        let marker = format!("marker{w}x{i}");
        let r = c.post(
            "/api/v1/memory/search",
            &json!({ "query": marker, "mode": "keyword" }),
        );
        assert_eq!(
            r.body["results"][0]["key"],
            k.as_str(),
            "keyword index lost {k}"
        );
        let r = c.post("/api/v1/memory/search", &json!({ "query": format!("writer {w} wrote note number {i} {marker}"), "mode": "semantic", "limit": 3 }));
        let keys: Vec<&str> = r.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|h| h["key"].as_str())
            .collect();
        assert!(
            keys.contains(&k.as_str()),
            "vector index lost {k}: {keys:?}"
        );
    }
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
