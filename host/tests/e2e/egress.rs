//! Agents' outgoing HTTP (`wasi:http`) through the egress door, on either backend: the
//! `fetch` guest (the `wstd` client) against an origin on 127.0.0.2, which the operator's
//! config allows (its host and port on the allowlist, its address's range listed), and a
//! canary on 127.0.0.1, which every refused request below would reach were it not refused.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{
    agents::wait_terminal,
    common::{
        Client,
        components::upload,
        fake_mind::{FakeMind, Reply},
        on_postgres,
        origin::Origin,
        server_with_keys,
    },
    durable::Setup,
    guests::{FETCH, WEB_DIGEST},
};

/// The egress section: the origin allowed; the canary, and every address spelled below,
/// on the allowlist too, so that the address check, not the allowlist, refuses them.
fn egress(origin: &Origin, canary: &Origin) -> String {
    let (o, c) = (origin.port(), canary.port());
    let hosts = [
        "127.0.0.1",
        "localhost",
        "[::1]",
        "10.0.0.1",
        "[::ffff:127.0.0.1]",
    ];
    let mut allow: Vec<String> = hosts
        .iter()
        .map(|h| format!("{{ host = \"{h}\", ports = [{c}], schemes = [\"http\"] }}"))
        .collect();
    allow.push(format!(
        "{{ host = \"127.0.0.2\", ports = [{o}], schemes = [\"http\"] }}"
    ));
    allow.push("{ host = \"169.254.169.254\", schemes = [\"http\"] }".into());
    format!(
        "[egress]\nallow_ranges = [\"127.0.0.2/32\"]\nallow = [\n{}\n]\n",
        allow.join(",\n")
    )
}

/// Spawns the `fetch` component `guest` on `task`; its id.
fn spawn_fetch(c: &Client, guest: &Value, task: &str) -> String {
    let r = c.post(
        "/api/v1/agents",
        &json!({ "task": task, "agent": guest["component_id"], "memory_mode": "off" }),
    );
    assert_eq!(r.status, 201, "{:#}", r.body);
    r.body["agent_id"].as_str().unwrap().to_string()
}

/// The agent's `egress` log events: (rule, url).
fn refusals(c: &Client, id: &str) -> Vec<(String, String)> {
    let logs = c.get(&format!("/api/v1/agents/{id}/logs?limit=1000")).body;
    (logs["data"].as_array().unwrap().iter())
        .filter(|e| e["kind"] == "egress")
        .map(|e| {
            let rule = e["data"]["rule"].as_str().unwrap().to_string();
            (rule, e["data"]["url"].as_str().unwrap().to_string())
        })
        .collect()
}

/// Named after the `fetch` guest (`foreach_guest!` in guests.rs): a GET and a POST to an
/// allowed origin are sent, each with an `Idempotency-Key` of its own, and answered.
#[test]
pub fn fetch() {
    let (origin, canary) = (Origin::start("127.0.0.2"), Origin::start("127.0.0.1"));
    let options = crate::common::Options {
        config: Some(egress(&origin, &canary)),
        ..crate::common::Options::hash_embedder()
    };
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    let guest = upload(&c, FETCH, "fetch", "1.0.0");
    let task = format!(
        "get {}; post {} remember the milk",
        origin.url("/hello"),
        origin.url("/notes")
    );
    let id = spawn_fetch(&c, &guest, &task);
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(
        done["final_result"],
        "200 hello /hello | 200 got: remember the milk"
    );
    let seen = origin.requests();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        (seen[0].method.as_str(), seen[1].method.as_str()),
        ("GET", "POST")
    );
    let keys: Vec<&str> = seen
        .iter()
        .map(|s| s.idempotency_key.as_deref().unwrap())
        .collect();
    assert_eq!(keys[0].len(), 32, "{keys:?}");
    assert_ne!(keys[0], keys[1]);
    assert!(refusals(&c, &id).is_empty());
    assert!(canary.requests().is_empty());
}

/// Named after the example agent `web-digest`: it fetches the page its task names, the
/// Mind summarizes it, and the summary is remembered under the page's key.
#[test]
pub fn web_digest() {
    let (origin, canary) = (Origin::start("127.0.0.2"), Origin::start("127.0.0.1"));
    let mind = FakeMind::start([Reply::text("The page greets its reader.")]);
    let options = crate::common::Options {
        config: Some(egress(&origin, &canary)),
        ..crate::common::Options::hash_embedder().openai_mind(&mind.base_url())
    };
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    let guest = upload(&c, WEB_DIGEST, "web_digest", "1.0.0");
    let url = origin.url("/status");
    let task = format!("Check {url} and remember what it says.");
    let body = json!({ "task": task, "agent": guest["component_id"], "memory_mode": "explicit" });
    let id = c.post("/api/v1/agents", &body).body["agent_id"]
        .as_str()
        .unwrap()
        .to_string();
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["final_result"], "The page greets its reader.");
    let asked = &mind.requests()[0]["messages"][1]["content"];
    assert!(
        asked.as_str().unwrap().ends_with("hello /status"),
        "{asked}"
    );
    let key = format!("page_127_0_0_2_{}_status", origin.port());
    let saved = c.get(&format!("/api/v1/memory?key={key}&namespace=web"));
    assert_eq!(saved.status, 200, "{:#}", saved.body);
    assert_eq!(
        saved.body["value"],
        format!("{url}: The page greets its reader.")
    );
    let seen = origin.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("GET", "/status")
    );
}

#[test]
fn refused_requests_reach_nothing_and_the_log_names_the_rule() {
    let (origin, canary) = (Origin::start("127.0.0.2"), Origin::start("127.0.0.1"));
    let options = crate::common::Options {
        config: Some(egress(&origin, &canary)),
        ..crate::common::Options::hash_embedder()
    };
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    let guest = upload(&c, FETCH, "fetch", "1.0.0");
    let port = canary.port();
    let refused_by_address = [
        format!("http://127.0.0.1:{port}/"),
        format!("http://[::1]:{port}/"),
        format!("http://10.0.0.1:{port}/"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        // 127.0.0.1 in decimal and in octal.
        format!("http://2130706433:{port}/"),
        format!("http://0177.0.0.1:{port}/"),
        // A name resolving to loopback, which is not allowed.
        format!("http://localhost:{port}/"),
    ];
    let redirect = origin.url(&format!("/redirect?to=http://127.0.0.1:{port}/"));
    let unlisted = format!("http://127.0.0.2:{}/", port);
    let mut task: Vec<String> = refused_by_address
        .iter()
        .map(|u| format!("get {u}"))
        .collect();
    task.push(format!("follow {redirect}"));
    task.push(format!("get {unlisted}"));
    let id = spawn_fetch(&c, &guest, &task.join("; "));
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    let answers: Vec<&str> = done["final_result"]
        .as_str()
        .unwrap()
        .split(" | ")
        .collect();
    assert_eq!(answers.len(), task.len(), "{answers:?}");
    for (command, answer) in task.iter().zip(&answers) {
        assert!(answer.starts_with("error: "), "{command}: {answer}");
    }
    let refusals = refusals(&c, &id);
    let rules: Vec<&str> = refusals.iter().map(|(rule, _)| rule.as_str()).collect();
    // One refusal per request: the redirect itself was answered (302), and the request to
    // its location refused like any other.
    let mut expected = vec!["address"; refused_by_address.len() + 1];
    expected.push("allowlist");
    assert_eq!(rules, expected, "{refusals:?}");
    assert!(canary.requests().is_empty(), "{:?}", canary.requests());
    let seen = origin.requests();
    assert_eq!(
        seen.len(),
        1,
        "only the redirect reached the origin: {seen:?}"
    );
    assert_eq!(seen[0].path, "/redirect");
}

/// Killed while its agent waits for a slow response, the server resumes the agent after
/// the restart: the request made before is not sent again, the one in flight is, once,
/// with the same `Idempotency-Key`, and the agent completes.
#[test]
fn a_request_in_flight_at_a_kill_is_sent_again_with_its_key() {
    let (origin, canary) = (Origin::start("127.0.0.2"), Origin::start("127.0.0.1"));
    let mind = FakeMind::start(Vec::<Reply>::new());
    let setup = Setup::with(&mind, "free", Some(egress(&origin, &canary)));
    let (mut server, c) = setup.start();
    let guest = upload(&c, FETCH, "fetch", "1.0.0");
    let task = format!("get {}; get {}", origin.url("/first"), origin.url("/slow"));
    let id = spawn_fetch(&c, &guest, &task);
    assert!(origin.wait_for_requests(2, Duration::from_secs(60)));
    server.kill9();

    origin.release();
    let (_server, c) = setup.start();
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["final_result"], "200 hello /first | 200 slow answer");
    sent_once_more(&origin, "/first");
}

/// After a kill -9 during `/slow`: `origin` saw `first` once and `/slow` twice, the second
/// time with the first's `Idempotency-Key`, which no other request had.
pub fn sent_once_more(origin: &Origin, first: &str) {
    let seen = origin.requests();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, [first, "/slow", "/slow"], "{seen:?}");
    assert_eq!(seen[1].idempotency_key, seen[2].idempotency_key);
    assert_ne!(seen[0].idempotency_key, seen[1].idempotency_key);
}

/// A free plan with small budgets of outgoing HTTP, beside the egress section.
fn small_budgets(origin: &Origin, canary: &Origin) -> String {
    egress(origin, canary)
        + "[plans.free]\nspawns_per_minute = 30\nspawns_per_hour = 100\n\
           concurrent_agents = 2\nmemories = 1000\nagent_hours_per_month = 10.0\n\
           http_requests_per_run = 2\nhttp_requests_per_month = 3\nhttp_bytes_per_run = 1000\n"
}

/// Each budget of outgoing HTTP refuses past it with its rule logged, and what was sent
/// shows in `wasmind usage`, the console's usage and `/metrics`.
#[test]
fn each_budget_refuses_past_it_and_usage_counts_what_went_out() {
    let (origin, canary) = (Origin::start("127.0.0.2"), Origin::start("127.0.0.1"));
    let options = crate::common::Options {
        config: Some(small_budgets(&origin, &canary)),
        ..crate::common::Options::hash_embedder()
    };
    let (tmp, server, keys) = server_with_keys(&[("acme", "free"), ("beta", "free")], &options);
    let (acme, beta) = (server.client(&keys[0]), server.client(&keys[1]));
    let guest = upload(&acme, FETCH, "fetch", "1.0.0");
    let gets = |paths: &[&str]| -> String {
        let urls: Vec<String> = paths
            .iter()
            .map(|p| format!("get {}", origin.url(p)))
            .collect();
        urls.join("; ")
    };
    let answers = |c: &Client, guest: &Value, task: &str| -> (String, Vec<(String, String)>) {
        let id = spawn_fetch(c, guest, task);
        let done = wait_terminal(c, &id);
        assert_eq!(done["status"], "completed", "{done:#}");
        (
            done["final_result"].as_str().unwrap().to_string(),
            refusals(c, &id),
        )
    };

    // Two requests a run: the third is refused.
    let (answer, refused) = answers(&acme, &guest, &gets(&["/a", "/b", "/c"]));
    let parts: Vec<&str> = answer.split(" | ").collect();
    assert_eq!(parts[..2], ["200 hello /a", "200 hello /b"], "{answer}");
    assert!(parts[2].starts_with("error: "), "{answer}");
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].0, "budget");
    // Three a month: the run's two and one more; the month's count is the ended runs'.
    let (answer, refused) = answers(&acme, &guest, &gets(&["/d", "/e"]));
    assert!(answer.starts_with("200 hello /d | error: "), "{answer}");
    assert_eq!(refused.len(), 1, "{refused:?}");
    // A thousand bytes a run: a body of 1,500 is refused before it is sent.
    let beta_guest = upload(&beta, FETCH, "fetch", "1.0.0");
    let task = format!("post {} {}", origin.url("/big"), "x".repeat(1_500));
    let (answer, refused) = answers(&beta, &beta_guest, &task);
    assert!(answer.starts_with("error: "), "{answer}");
    assert_eq!(refused.len(), 1, "{refused:?}");
    let paths: Vec<String> = origin.requests().iter().map(|s| s.path.clone()).collect();
    assert_eq!(paths, ["/a", "/b", "/d"], "nothing refused was sent");

    // The month's usage: acme sent three requests (no bodies; answers of 8 bytes each).
    let d = tmp.path().join("data");
    let args = [
        "usage",
        "--data-dir",
        d.to_str().unwrap(),
        "--account",
        "acme",
    ];
    let (ok, out, err) = crate::common::cli(&args);
    assert!(ok, "{err}");
    let row: Vec<&str> = out
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    // The limit is the plans of the process that answers: the running server's through its
    // admin socket; on postgres the CLI's own configuration, which here has no `[plans]`.
    let limit = if on_postgres() { "3/10000" } else { "3/3" };
    assert_eq!((row[9], row[10]), (limit, "24/1073741824"), "{out}");
    let usage = acme_console_usage(&server, &d);
    assert_eq!(usage["http"]["requests"], 3, "{usage:#}");
    assert_eq!(usage["http"]["requests_limit"], 3);
    let metrics = reqwest::blocking::get(format!("{}/metrics", server.base))
        .unwrap()
        .text()
        .unwrap();
    assert!(
        metrics.contains("wasmind_agent_http_requests_total{outcome=\"budget\"} 3"),
        "{metrics}"
    );
    assert!(
        metrics.contains("wasmind_agent_http_requests_total{outcome=\"answered\"} 3"),
        "{metrics}"
    );
}

/// The console's usage report of `acme`, signed in through `wasmind console login`.
pub fn acme_console_usage(server: &crate::common::Server, dir: &std::path::Path) -> Value {
    let (_, token) = crate::console::login(dir, "acme", None);
    let console = Client::new(&server.base, Some(&token));
    console.get("/api/v1/console/usage").body
}

/// `wasmind accounts <args> --data-dir <dir>`: its output.
fn accounts(dir: &std::path::Path, args: &[&str]) -> String {
    let mut all = vec!["accounts", args[0], "--data-dir", dir.to_str().unwrap()];
    all.extend(&args[1..]);
    let (ok, out, err) = crate::common::cli(&all);
    assert!(ok, "{args:?}: {err}");
    out
}

/// An account's own entry, set by the operator with `wasmind accounts allow-host` while
/// the server runs, lets that account's agents (and no other's) reach the host from their
/// next request, shows in GET /api/v1/egress and the console's, and `deny-host` takes it
/// back.
#[test]
fn an_accounts_own_entry_admits_only_its_agents() {
    let origin = Origin::start("127.0.0.2");
    let config = "[egress]\nallow_ranges = [\"127.0.0.2/32\"]\n\
                  allow = [{ host = \"api.example.com\" }]\n";
    let options = crate::common::Options {
        config: Some(config.into()),
        ..crate::common::Options::hash_embedder()
    };
    let (tmp, server, keys) = server_with_keys(&[("acme", "free"), ("beta", "free")], &options);
    let (acme, beta) = (server.client(&keys[0]), server.client(&keys[1]));
    let dir = tmp.path().join("data");
    let port = origin.port().to_string();
    let allow = ["allow-host", "--account", "acme", "--host", "127.0.0.2"];
    let out = accounts(
        &dir,
        &[&allow[..], &["--port", &port, "--scheme", "http"]].concat(),
    );
    assert!(out.contains("127.0.0.2"), "{out}");
    let hosts = accounts(&dir, &["hosts", "--account", "acme"]);
    assert!(
        hosts.contains("127.0.0.2 ") && hosts.contains(&port),
        "{hosts}"
    );

    let listed = acme.get("/api/v1/egress");
    assert_eq!(listed.status, 200);
    assert_eq!(
        listed.body,
        json!({ "plan": "free", "entries": [
            { "host": "api.example.com", "ports": [], "schemes": ["https"], "from": "everyone" },
            { "host": "127.0.0.2", "ports": [origin.port()], "schemes": ["http"], "from": "account" },
        ]})
    );
    assert_eq!(
        beta.get("/api/v1/egress").body["entries"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let (_, token) = crate::console::login(&dir, "acme", None);
    let console = Client::new(&server.base, Some(&token));
    assert_eq!(console.get("/api/v1/egress").body, listed.body);

    let task = format!("get {}", origin.url("/mine"));
    let guests = [&acme, &beta].map(|c| upload(c, FETCH, "fetch", "1.0.0"));
    let run = |c: &Client, guest: &Value| {
        let id = spawn_fetch(c, guest, &task);
        let done = wait_terminal(c, &id);
        assert_eq!(done["status"], "completed", "{done:#}");
        (
            done["final_result"].as_str().unwrap().to_string(),
            refusals(c, &id),
        )
    };
    let (answer, refused) = run(&acme, &guests[0]);
    assert_eq!(answer, "200 hello /mine");
    assert!(refused.is_empty(), "{refused:?}");
    let (answer, refused) = run(&beta, &guests[1]);
    assert!(answer.starts_with("error: "), "{answer}");
    assert_eq!(refused[0].0, "allowlist", "{refused:?}");

    accounts(
        &dir,
        &["deny-host", "--account", "acme", "--host", "127.0.0.2"],
    );
    let (answer, refused) = run(&acme, &guests[0]);
    assert!(answer.starts_with("error: "), "{answer}");
    assert_eq!(refused[0].0, "allowlist", "{refused:?}");
    assert_eq!(
        origin.requests().len(),
        1,
        "only acme's allowed request was sent"
    );
}
