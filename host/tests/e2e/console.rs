//! The console's server side end to end: `wasmind console login` links (minted while the
//! server runs) sign in; missing and invalid ID tokens get their codes; a tenant reaches
//! only its own account through every route the console calls (the public ones with an ID
//! token); keys made and revoked in the console act on the public API at once; an agent's
//! event stream delivers its progress, its log and its end as they happen.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    time::Duration,
};

use serde_json::{Value, json};

use crate::{
    agents::{spawn, wait_for, wait_terminal},
    common::{Client, Options, Server, cli, put, server_with_keys},
};

const ME: &str = "/api/v1/console/me";
const KEYS: &str = "/api/v1/console/keys";

/// Mints a sign-in link with the CLI; returns (link, token).
#[track_caller]
pub(crate) fn login(dir: &Path, account: &str, url: Option<&str>) -> (String, String) {
    let mut args = vec![
        "console",
        "login",
        "--data-dir",
        dir.to_str().unwrap(),
        "--account",
        account,
    ];
    if let Some(url) = url {
        args.extend(["--url", url]);
    }
    let (ok, stdout, stderr) = cli(&args);
    assert!(ok, "console login failed: {stderr}");
    let link = stdout.trim().to_string();
    let token = link
        .split_once("#token=")
        .unwrap_or_else(|| panic!("no #token= in {link:?}"))
        .1
        .to_string();
    (link, token)
}

fn data_dir(tmp: &tempfile::TempDir) -> std::path::PathBuf {
    tmp.path().join("data")
}

#[test]
fn login_links_sign_in_and_bad_tokens_are_refused() {
    let (tmp, server, keys) = server_with_keys(&[("acme", "liftoff")], &Options::hash_embedder());
    let dir = data_dir(&tmp);
    let (link, token) = login(&dir, "acme", None);
    assert!(
        link.starts_with("http://127.0.0.1:8080/console#token="),
        "{link}"
    );
    let (link, _) = login(&dir, "acme", Some(&format!("{}/", server.base)));
    assert!(
        link.starts_with(&format!("{}/console#token=", server.base)),
        "{link}"
    );

    let me = Client::new(&server.base, Some(&token)).get(ME);
    assert_eq!(me.status, 200, "{:#}", me.body);
    assert_eq!(me.body["account"], "acme");
    assert_eq!(me.body["plan"], "liftoff");
    assert_eq!(me.body["subject"], "operator");
    assert!(me.body["expires_at"].as_str().unwrap().ends_with('Z'));

    Client::new(&server.base, None)
        .get(ME)
        .assert_error(401, "missing_id_token");
    let with_key = Client::new(&server.base, Some(&keys[0])).get(ME);
    with_key.assert_error(401, "invalid_id_token");
    assert!(
        with_key.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("API key"),
        "{:#}",
        with_key.body
    );
    // The public routes an account is read and managed through take the ID token as they
    // take a key (the console calls them); what a key does as itself does not.
    let signed_in = Client::new(&server.base, Some(&token));
    let listed = signed_in.get("/api/v1/memory/list");
    assert_eq!(listed.status, 200, "{:#}", listed.body);
    signed_in
        .post("/api/v1/memory", &json!({ "key": "k", "value": "v" }))
        .assert_error(401, "invalid_api_key");
    signed_in
        .post("/api/v1/agents", &json!({ "task": "t" }))
        .assert_error(401, "invalid_api_key");
    // A changed signature, garbage, an unknown account, another data dir's key.
    let (head, sig) = token.rsplit_once('.').unwrap();
    let flipped = if sig.starts_with('A') { "B" } else { "A" };
    let tampered = format!("{head}.{flipped}{}", &sig[1..]);
    let (_, ghost) = login(&dir, "ghost", None);
    let other = tempfile::tempdir().unwrap();
    let (_, foreign) = login(other.path(), "acme", None);
    for (bad, says) in [
        (tampered.as_str(), "signature"),
        ("not-a-token", "malformed"),
        (ghost.as_str(), "does not exist"),
        (foreign.as_str(), "not trusted"),
    ] {
        let r = Client::new(&server.base, Some(bad)).get(KEYS);
        r.assert_error(401, "invalid_id_token");
        let message = r.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{bad}: {message}");
        // On a public route, a credential shaped as an ID token is refused as one; any
        // other as an API key.
        let shared = Client::new(&server.base, Some(bad)).get("/api/v1/agents");
        match bad.split('.').count() {
            3 => {
                shared.assert_error(401, "invalid_id_token");
                let message = shared.body["error"]["message"].as_str().unwrap();
                assert!(message.contains(says), "{bad}: {message}");
            }
            _ => shared.assert_error(401, "invalid_api_key"),
        }
    }
    let malformed = Client::new(&server.base, None).send(
        Client::new(&server.base, None)
            .request(reqwest::Method::GET, KEYS)
            .header("authorization", "Basic abc"),
    );
    malformed.assert_error(401, "invalid_id_token");

    // The page: HTML under a policy that keeps it to this server.
    for path in ["/console", "/console/"] {
        let page = reqwest::blocking::get(format!("{}{path}", server.base)).unwrap();
        assert_eq!(page.status(), 200);
        let header = |h: &str| page.headers()[h].to_str().unwrap().to_string();
        assert!(header("content-type").starts_with("text/html"));
        assert!(header("content-security-policy").starts_with("default-src 'self'"));
    }
}

#[test]
fn keys_made_in_the_console_work_and_revoke_at_once() {
    let (tmp, server, keys) = server_with_keys(
        &[("acme", "free"), ("other", "free")],
        &Options::hash_embedder(),
    );
    let (_, token) = login(&data_dir(&tmp), "acme", None);
    let console = Client::new(&server.base, Some(&token));
    let created = console.send(console.request(reqwest::Method::POST, KEYS));
    assert_eq!(created.status, 201, "{:#}", created.body);
    let key = created.body["key"].as_str().unwrap().to_string();
    let key_id = created.body["key_id"].as_str().unwrap().to_string();
    assert!(key.starts_with("wm_") && key_id.starts_with("key_"));

    let public = server.client(&key);
    put(
        &public,
        &json!({ "key": "made_with_console_key", "value": "it works" }),
    );
    assert_eq!(public.get("/api/v1/memory/list").status, 200);

    let listed = console.get(KEYS);
    assert_eq!(listed.status, 200, "{:#}", listed.body);
    let ids: Vec<&str> = listed.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["key_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "the CLI's key and the console's: {ids:?}");
    assert_eq!(ids[0], key_id, "newest first");
    assert!(
        listed.body["data"][0]["key"].is_null(),
        "no secret in the list"
    );

    let revoked = console.delete(&format!("{KEYS}/{key_id}"));
    assert_eq!(revoked.status, 200, "{:#}", revoked.body);
    assert_eq!(revoked.body["key_id"], key_id.as_str());
    public
        .get("/api/v1/memory/list")
        .assert_error(401, "invalid_api_key");
    let again = console.delete(&format!("{KEYS}/{key_id}"));
    assert_eq!(again.status, 200, "idempotent: {:#}", again.body);
    assert_eq!(again.body["revoked_at"], revoked.body["revoked_at"]);
    let listed = console.get(KEYS);
    assert!(listed.body["data"][0]["revoked_at"].is_string());
    assert!(listed.body["data"][1]["revoked_at"].is_null());
    // The key secret in place of an id, and unknown ids, are not found.
    console
        .delete(&format!("{KEYS}/{}", keys[0]))
        .assert_error(404, "key_not_found");
    console
        .delete(&format!("{KEYS}/key_nope"))
        .assert_error(404, "key_not_found");
}

/// The key ids a console lists.
fn key_ids(c: &Client) -> Vec<String> {
    let r = c.get(KEYS);
    assert_eq!(r.status, 200, "{:#}", r.body);
    r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["key_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_tenant_reaches_only_its_own_account_through_every_route_the_console_calls() {
    let (tmp, server, keys) = server_with_keys(
        &[("alice", "free"), ("mallory", "free")],
        &Options::hash_embedder(),
    );
    let dir = data_dir(&tmp);
    let a = Client::new(&server.base, Some(&login(&dir, "alice", None).1));
    let m = Client::new(&server.base, Some(&login(&dir, "mallory", None).1));
    let alice = server.client(&keys[0]);
    put(
        &alice,
        &json!({ "key": "secret", "value": "alice's launch code 4242", "namespace": "vault" }),
    );
    let agent = spawn(&alice, "Remember that the vault code is 1234");
    wait_terminal(&alice, &agent);

    assert_eq!(a.get(ME).body["account"], "alice");
    assert_eq!(m.get(ME).body["account"], "mallory");

    // Keys: each sees its own; mallory cannot revoke alice's.
    let (a_keys, m_keys) = (key_ids(&a), key_ids(&m));
    assert_eq!((a_keys.len(), m_keys.len()), (1, 1));
    assert_ne!(a_keys, m_keys);
    m.delete(&format!("{KEYS}/{}", a_keys[0]))
        .assert_error(404, "key_not_found");
    assert_eq!(alice.get("/api/v1/memory/list").status, 200, "still live");

    // Agents, one agent, its event stream.
    let count = |c: &Client| {
        let r = c.get("/api/v1/agents");
        assert_eq!(r.status, 200, "{:#}", r.body);
        r.body["data"].as_array().unwrap().len()
    };
    assert_eq!((count(&a), count(&m)), (1, 0));
    assert_eq!(a.get(&format!("/api/v1/agents/{agent}")).status, 200);
    m.get(&format!("/api/v1/agents/{agent}"))
        .assert_error(404, "agent_not_found");
    let events = format!("/api/v1/console/agents/{agent}/events");
    m.get(&events).assert_error(404, "agent_not_found");

    // Memory: namespaces, list, search, history, delete.
    let namespaces = |c: &Client| c.get("/api/v1/memory/namespaces").body["namespaces"].clone();
    assert!(
        namespaces(&a)
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["namespace"] == "vault")
    );
    assert_eq!(namespaces(&m), json!([]));
    let listed = |c: &Client| {
        c.get("/api/v1/memory/list?namespace=vault").body["data"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!((listed(&a), listed(&m)), (1, 0));
    let search = json!({ "query": "launch code", "mode": "keyword", "namespace": "vault" });
    let found = |c: &Client| {
        let r = c.post("/api/v1/memory/search", &search);
        assert_eq!(r.status, 200, "{:#}", r.body);
        r.body["results"].as_array().unwrap().clone()
    };
    let hits = found(&a);
    assert_eq!(hits.len(), 1);
    assert!(hits[0]["breakdown"]["keyword"].is_number());
    assert!(found(&m).is_empty());
    let history = "/api/v1/memory/history?key=secret&namespace=vault";
    assert_eq!(a.get(history).status, 200);
    m.get(history).assert_error(404, "not_found");
    m.delete("/api/v1/memory?key=secret&namespace=vault&hard=true")
        .assert_error(404, "not_found");
    assert_eq!(listed(&a), 1, "mallory deleted nothing");

    // Usage: each its own figures and keys.
    let (ua, um) = (
        a.get("/api/v1/console/usage").body,
        m.get("/api/v1/console/usage").body,
    );
    assert!(ua["memories"]["live"].as_u64().unwrap() >= 1, "{ua:#}");
    assert_eq!(um["memories"]["live"], 0, "{um:#}");
    assert!(ua["agent_hours"]["used"].as_f64().unwrap() > 0.0, "{ua:#}");
    assert_eq!(um["agent_hours"]["used"], 0.0, "{um:#}");
    let window_keys = |u: &Value| -> Vec<String> {
        u["spawn_windows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["key_id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(window_keys(&ua), [a_keys[0].clone(), a_keys[0].clone()]);
    assert_eq!(window_keys(&um), [m_keys[0].clone(), m_keys[0].clone()]);
    assert_eq!(ua["spawn_windows"][0]["used"], 1, "{ua:#}");
    assert_eq!(ua["plan"], "free");
    assert_eq!(ua["concurrent_agents"]["limit"], 2);

    // And alice's memory survived, deletable by alice.
    let gone = a.delete("/api/v1/memory?key=secret&namespace=vault");
    assert_eq!(gone.status, 200, "{:#}", gone.body);
    assert_eq!(listed(&a), 0);
}

/// One server-sent event.
#[derive(Debug)]
pub(crate) struct Sse {
    pub(crate) event: String,
    pub(crate) data: Value,
}

/// Reads events from an open stream until `end` (or the stream closes).
pub(crate) fn read_events(response: reqwest::blocking::Response) -> Vec<Sse> {
    let mut out = Vec::new();
    let (mut event, mut data) = (String::new(), String::new());
    for line in BufReader::new(response).lines() {
        let line = line.expect("reading the stream");
        if let Some(name) = line.strip_prefix("event:") {
            event = name.trim().to_string();
        } else if let Some(chunk) = line.strip_prefix("data:") {
            data.push_str(chunk.trim_start());
        } else if line.is_empty() && !event.is_empty() {
            let done = event == "end";
            out.push(Sse {
                event: std::mem::take(&mut event),
                data: serde_json::from_str(&std::mem::take(&mut data)).unwrap(),
            });
            if done {
                break;
            }
        }
    }
    out
}

pub(crate) fn open_stream(server: &Server, path: &str) -> reqwest::blocking::Response {
    let response = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap()
        .get(format!("{}{path}", server.base))
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    response
}

#[test]
fn an_agents_events_stream_as_they_happen() {
    let (tmp, server, keys) = server_with_keys(&[("acme", "free")], &Options::hash_embedder());
    let (_, token) = login(&data_dir(&tmp), "acme", None);
    let public = server.client(&keys[0]);

    // A whole run: everything, in order, then the end (`?id_token=`, as EventSource sends it).
    let id = spawn(&public, "Remember that the launch is on Friday");
    let events = read_events(open_stream(
        &server,
        &format!("/api/v1/console/agents/{id}/events?id_token={token}"),
    ));
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names.first(), Some(&"status"), "{names:?}");
    assert_eq!(&names[names.len() - 2..], ["status", "end"], "{names:?}");
    let last = &events[events.len() - 2].data;
    assert_eq!(last["status"], "completed", "{last:#}");
    let record = public.get(&format!("/api/v1/agents/{id}")).body;
    let progress: Vec<&Value> = events
        .iter()
        .filter(|e| e.event == "progress")
        .map(|e| &e.data)
        .collect();
    assert!(!progress.is_empty(), "{names:?}");
    assert_eq!(
        progress,
        record["progress"]
            .as_array()
            .unwrap()
            .iter()
            .collect::<Vec<_>>(),
        "every progress entry once, in order"
    );
    let logs: Vec<&Value> = events
        .iter()
        .filter(|e| e.event == "log")
        .map(|e| &e.data)
        .collect();
    let stored = public.get(&format!("/api/v1/agents/{id}/logs")).body;
    assert_eq!(
        logs,
        stored["data"]
            .as_array()
            .unwrap()
            .iter()
            .collect::<Vec<_>>(),
        "every log event once, in order"
    );

    // Live: a spinning agent's stream is open before it stops; the stop arrives on it.
    let config = format!(
        "[runtime]\ncomponent = {:?}\nstop_grace_secs = 1.0\n",
        crate::guests::SPIN
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let key = crate::common::create_key(&dir, "acme", "free");
    let spinning = Server::start_with(
        &dir,
        &Options {
            config: Some(config),
            hash_embedder: true,
            ..Default::default()
        },
    );
    let (_, token) = login(&dir, "acme", None);
    let public = spinning.client(&key);
    let id = spawn(&public, "spin");
    wait_for(&public, &id, Duration::from_secs(20), |a| {
        a["status"] == "running"
    });
    let stream = {
        let response = reqwest::blocking::Client::new()
            .get(format!(
                "{}/api/v1/console/agents/{id}/events",
                spinning.base
            ))
            .bearer_auth(&token)
            .send()
            .unwrap();
        assert_eq!(response.status(), 200);
        response
    };
    let reader = std::thread::spawn(move || read_events(stream));
    // The stream is open (its response arrived); only now is the agent stopped.
    assert_eq!(public.delete(&format!("/api/v1/agents/{id}")).status, 200);
    let events = reader.join().unwrap();
    let statuses: Vec<&str> = events
        .iter()
        .filter(|e| e.event == "status")
        .map(|e| e.data["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses.first(), Some(&"running"), "{events:?}");
    assert_eq!(statuses.last(), Some(&"stopped"), "{events:?}");
    assert_eq!(events.last().unwrap().event, "end");
}

/// A log longer than the pages the stream reads it in arrives whole, once, in order,
/// before the end.
#[test]
fn a_long_log_streams_whole_page_after_page() {
    let config = format!("[runtime]\ncomponent = {:?}\n", crate::guests::HOSTILE);
    let options = Options {
        config: Some(config),
        ..Options::hash_embedder()
    };
    let (tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let (_, token) = login(&data_dir(&tmp), "acme", None);
    let public = server.client(&keys[0]);
    let id = spawn(&public, "flood 1200");
    assert_eq!(wait_terminal(&public, &id)["status"], "completed");
    let events = read_events(open_stream(
        &server,
        &format!("/api/v1/console/agents/{id}/events?id_token={token}"),
    ));
    let logs: Vec<&Value> = events
        .iter()
        .filter(|e| e.event == "log")
        .map(|e| &e.data)
        .collect();
    let floods: Vec<&str> = logs
        .iter()
        .filter_map(|l| l["message"].as_str())
        .filter(|m| m.starts_with("flood "))
        .collect();
    let expected: Vec<String> = (0..1200).map(|i| format!("flood {i}")).collect();
    assert_eq!(floods, expected, "every log event once, in order");
    let seqs: Vec<u64> = logs.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order, no repeats");
    assert_eq!(logs.iter().filter(|l| l["kind"] == "terminal").count(), 1);
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(&names[names.len() - 2..], ["status", "end"]);
}

/// An identity provider configured in `[console]`: its ES256 ID tokens sign in to the
/// account its claim names; a partial `[console]` section stops the start, naming what is
/// missing.
#[test]
fn an_identity_providers_tokens_sign_in() {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
    use jsonwebtoken::{Algorithm, EncodingKey, Header, jwk::Jwk};

    let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
    let key = EncodingKey::from_ec_der(pair.to_pkcs8v1().unwrap().as_ref());
    let mut jwk =
        serde_json::to_value(Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap()).unwrap();
    jwk["kid"] = json!("idp-1");
    let tmp = tempfile::tempdir().unwrap();
    let jwks = tmp.path().join("jwks.json");
    std::fs::write(&jwks, json!({ "keys": [jwk] }).to_string()).unwrap();
    let dir = tmp.path().join("data");
    crate::common::create_key(&dir, "acme", "free");

    let partial = Options {
        config: Some("[console]\nissuer = \"https://idp.example\"\n".into()),
        hash_embedder: true,
        ..Default::default()
    };
    let refused = Server::try_start(&dir, &partial).err().expect("refused");
    assert!(refused.contains("missing: audience"), "{refused}");

    let config = format!(
        "[console]\nissuer = \"https://idp.example\"\naudience = \"wasmind\"\n\
         jwks_file = {:?}\naccount_claim = \"org\"\n",
        jwks.to_str().unwrap()
    );
    let server = Server::start_with(
        &dir,
        &Options {
            config: Some(config),
            hash_embedder: true,
            ..Default::default()
        },
    );
    let token = |aud: &str| {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some("idp-1".into());
        let exp = crate::common::now_ms() / 1_000 + 600;
        let claims = json!({ "iss": "https://idp.example", "aud": aud, "sub": "alice@idp", "exp": exp, "org": "acme" });
        jsonwebtoken::encode(&header, &claims, &key).unwrap()
    };
    let me = Client::new(&server.base, Some(&token("wasmind"))).get(ME);
    assert_eq!(me.status, 200, "{:#}", me.body);
    assert_eq!(
        (me.body["account"].as_str(), me.body["subject"].as_str()),
        (Some("acme"), Some("alice@idp"))
    );
    let other = Client::new(&server.base, Some(&token("someone-else"))).get(ME);
    other.assert_error(401, "invalid_id_token");
    assert!(
        other.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("audience"),
        "{:#}",
        other.body
    );
    // The server's own links work beside the provider.
    let (_, own) = login(&dir, "acme", None);
    assert_eq!(Client::new(&server.base, Some(&own)).get(ME).status, 200);
}
