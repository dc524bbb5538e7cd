//! Running it live: the CLI through a running server's admin socket (live at once, the
//! same answers as on the files), a killed server's socket, health and readiness, request
//! ids in responses and JSON logs, the Mind's start-up check, and no downtime while keys
//! and plans change under load.

use std::{
    os::unix::fs::{FileTypeExt, MetadataExt},
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};

use crate::{
    agents::{spawn, wait_terminal},
    common::{
        Client, Options, Server, cli, create_key, fake_anthropic::FakeAnthropic,
        fake_mind::FakeMind, poll_until, put, usage_rows,
    },
};

/// Runs a CLI command on `dir` that must succeed; returns its stdout.
#[track_caller]
fn run(dir: &Path, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["--data-dir", dir.to_str().unwrap()]);
    let (ok, out, err) = cli(&all);
    assert!(ok, "wasmind {args:?} failed: {err}");
    out
}

/// What the CLI lists; of usage, what is metered in the files (not the counts only a running
/// server keeps).
fn listings(dir: &Path) -> [String; 3] {
    let (metered, _) = usage_rows(&run(dir, &["usage"]));
    [
        run(dir, &["keys", "list"]),
        run(dir, &["accounts", "list"]),
        metered.iter().map(|words| words.join(" ") + "\n").collect(),
    ]
}

fn note(c: &Client, key: &str) -> u16 {
    c.post(
        "/api/v1/memory",
        &json!({"key": key, "value": "the launch is on Friday"}),
    )
    .status
}

/// The free plan admits one spawn a minute, so a plan change shows on the next spawn.
const ONE_SPAWN_A_MINUTE: &str = "[plans.free]\nspawns_per_minute = 1\nspawns_per_hour = 30\n\
     concurrent_agents = 2\nmemories = 1000\nagent_hours_per_month = 10.0\n";

#[test]
fn the_cli_acts_through_a_running_server_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let options = Options {
        config: Some(ONE_SPAWN_A_MINUTE.into()),
        ..Options::hash_embedder()
    };
    let mut server = Server::start_with(&dir, &options);
    let socket = std::fs::metadata(dir.join("admin.sock")).unwrap();
    assert!(socket.file_type().is_socket());
    assert_eq!(socket.mode() & 0o777, 0o600, "owner-only");

    // A key made while the server runs authenticates on the very next request.
    let key = create_key(&dir, "acme", "free");
    let c = server.client(&key);
    assert_eq!(note(&c, "first"), 201);

    // The plan applies to the next spawn: free admits one a minute, lightyear more.
    wait_terminal(&c, &spawn(&c, "Remember that the launch is on Friday"));
    let refused = c.post("/api/v1/agents", &json!({"task": "Say hello"}));
    refused.assert_error(429, "rate_limited");
    assert_eq!(refused.body["error"]["details"]["plan"], "free");
    let moved = run(
        &dir,
        &[
            "accounts",
            "set-plan",
            "--account",
            "acme",
            "--plan",
            "lightyear",
        ],
    );
    assert_eq!(moved.trim(), "account acme is now on plan lightyear");
    wait_terminal(&c, &spawn(&c, "Say hello"));
    let accounts = run(&dir, &["accounts", "list"]);
    let acme: Vec<&str> = accounts
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        (acme[0], acme[1], acme[3], acme[4]),
        ("acme", "lightyear", "1", "operator")
    );

    // A revoked key is refused on the very next request.
    let second = create_key(&dir, "acme", "lightyear");
    let revoked = run(&dir, &["keys", "revoke", &key]);
    assert!(revoked.starts_with("revoked key_"), "{revoked}");
    c.get("/api/v1/memory/list")
        .assert_error(401, "invalid_api_key");
    assert_eq!(note(&server.client(&second), "second"), 201);

    // The server and the files tell the same story, once nothing is moving.
    server.stop();
    assert!(
        !dir.join("admin.sock").exists(),
        "a stopped server removes its socket"
    );
    let on_files = listings(&dir);
    let server = Server::start_with(&dir, &options);
    assert_eq!(listings(&dir), on_files);
    assert!(on_files[0].contains("acme") && !on_files[0].contains(&second[3..]));
    assert_eq!(on_files[2].lines().count(), 2, "{}", on_files[2]);
    drop(server);
}

#[test]
fn a_killed_servers_socket_gets_in_nobodys_way() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut server = Server::start_with(&dir, &Options::hash_embedder());
    server.kill9();
    assert!(
        dir.join("admin.sock").exists(),
        "SIGKILL leaves the socket file"
    );

    // Nothing answers on it: the CLI works on the files.
    let offline_key = create_key(&dir, "acme", "free");
    let server = Server::start_with(&dir, &Options::hash_embedder());
    let socket = std::fs::metadata(dir.join("admin.sock")).unwrap();
    assert_eq!(socket.mode() & 0o777, 0o600);
    assert_eq!(note(&server.client(&offline_key), "made_offline"), 201);
    let live_key = create_key(&dir, "beta", "free");
    assert_eq!(note(&server.client(&live_key), "made_live"), 201);
}

#[test]
fn health_readiness_and_request_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let options = Options {
        env: vec![("WASMIND_LOG_FORMAT".into(), "json".into())],
        ..Options::hash_embedder()
    };
    let server = Server::start_with(&dir, &options);
    let anonymous = Client::new(&server.base, None);
    let health = anonymous.get("/healthz");
    assert_eq!(
        (health.status, &health.body),
        (200, &json!({"status": "ok"}))
    );
    let ready = anonymous.get("/readyz");
    assert_eq!(ready.status, 200, "{:#}", ready.body);
    assert_eq!(ready.body["status"], "ready");
    assert_eq!(
        ready.body["checks"],
        json!({"embedder": "ready", "indexes": "ready", "runtime": "ready"})
    );
    let mind = poll_until(Duration::from_secs(30), "the Mind's check", || {
        let mind = anonymous.get("/readyz").body["mind"].clone();
        match mind["status"] == "checking" {
            true => Err(mind.to_string()),
            false => Ok(mind),
        }
    });
    assert_eq!(mind["status"], "offline", "{mind}");

    let http = reqwest::blocking::Client::new();
    let echoed = http
        .get(format!("{}/api/v1/memory/list", server.base))
        .header("x-request-id", "op-test-42")
        .send()
        .unwrap();
    assert_eq!(echoed.status(), 401);
    assert_eq!(echoed.headers()["x-request-id"], "op-test-42");
    let ids: Vec<String> = (0..2)
        .map(|_| {
            let r = http.get(format!("{}/healthz", server.base)).send().unwrap();
            r.headers()["x-request-id"].to_str().unwrap().to_owned()
        })
        .collect();
    assert!(ids[0].len() == 36 && ids[0] != ids[1], "{ids:?}");

    // The request's log line is JSON and carries its id.
    let line = poll_until(Duration::from_secs(10), "the request's log line", || {
        let log = server.log();
        log.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|l| l["span"]["request_id"] == "op-test-42")
            .ok_or(log)
    });
    assert_eq!(line["span"]["path"], "/api/v1/memory/list", "{line}");
    assert_eq!(line["fields"]["status"], 401, "{line}");
}

/// Starts a server on a fresh dir with `env`; returns it and its settled `/readyz` `mind`
/// as a request with a key sees it (with the check's words; without a key, its state alone).
fn mind_check(env: &[(&str, &str)]) -> (tempfile::TempDir, Server, Value) {
    let tmp = tempfile::tempdir().unwrap();
    let options = Options {
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Options::hash_embedder()
    };
    let dir = tmp.path().join("data");
    let key = create_key(&dir, "operator", "free");
    let server = Server::start_with(&dir, &options);
    let (keyed, anonymous) = (server.client(&key), Client::new(&server.base, None));
    let mind = poll_until(Duration::from_secs(30), "the Mind's check", || {
        let ready = keyed.get("/readyz");
        let mind = ready.body["mind"].clone();
        match (ready.status, mind["status"].as_str()) {
            (200, Some(status)) if status != "checking" => Ok(mind),
            _ => Err(ready.body.to_string()),
        }
    });
    let public = anonymous.get("/readyz").body["mind"].clone();
    assert_eq!(public, json!({ "status": mind["status"] }), "states only");
    (tmp, server, mind)
}

#[test]
fn the_mind_is_set_up_from_vendor_variables_and_checked_at_start() {
    let openai = FakeMind::start([]);
    openai.require_key("sk-right");
    let base = openai.base_url();
    let openai_with = |key: &'static str, model: &'static str| {
        mind_check(&[
            ("WASMIND_MIND", "openai"),
            ("WASMIND_MIND_BASE_URL", &base),
            ("WASMIND_MIND_MODEL", model),
            ("OPENAI_API_KEY", key),
        ])
    };

    let (tmp, server, mind) = openai_with("sk-right", "fake-gpt");
    assert_eq!(mind["status"], "ok", "{mind}");
    let key = create_key(&tmp.path().join("data"), "acme", "free");
    let c = server.client(&key);
    let done = wait_terminal(&c, &spawn(&c, "Say hello"));
    assert_eq!(done["status"], "completed", "{done:#}");
    let sent = openai.authorizations();
    assert!(
        !sent.is_empty() && sent.iter().all(|a| a.as_deref() == Some("Bearer sk-right")),
        "OPENAI_API_KEY is the key sent: {sent:?}"
    );
    drop(server);

    let (_tmp, server, mind) = openai_with("sk-wrong", "fake-gpt");
    assert_eq!(mind["status"], "key_rejected", "{mind}");
    let message = mind["message"].as_str().unwrap();
    assert!(
        message.contains("OPENAI_API_KEY") && !message.contains("sk-wrong"),
        "{mind}"
    );
    assert!(
        server.log().contains("refused the API key"),
        "{}",
        server.log()
    );
    drop(server);

    let (_tmp, _server, mind) = openai_with("sk-right", "fake-nope");
    assert_eq!(mind["status"], "model_not_found", "{mind}");
    assert!(
        mind["message"].as_str().unwrap().contains("fake-nope"),
        "{mind}"
    );

    let anthropic = FakeAnthropic::start([]);
    anthropic.require_key("sk-ant-right");
    let base = anthropic.base_url();
    let (_tmp, _server, mind) = mind_check(&[
        ("WASMIND_MIND", "anthropic"),
        ("WASMIND_MIND_BASE_URL", &base),
        ("WASMIND_MIND_MODEL", "fake-claude"),
        ("ANTHROPIC_API_KEY", "sk-ant-right"),
    ]);
    assert_eq!(mind["status"], "ok", "{mind}");
    assert_eq!(anthropic.listings(), 1);

    let tmp = tempfile::tempdir().unwrap();
    let no_model = Options {
        env: vec![("WASMIND_MIND".into(), "anthropic".into())],
        ..Options::hash_embedder()
    };
    let log = Server::try_start(&tmp.path().join("data"), &no_model)
        .err()
        .expect("a remote provider needs a model");
    assert!(log.contains("WASMIND_MIND_MODEL"), "{log}");
}

/// Plans generous enough that toggling between them never refuses this test's load.
const TWO_ROOMY_PLANS: &str = "[plans.liftoff]\nspawns_per_minute = 30\nspawns_per_hour = 500\n\
     concurrent_agents = 25\nmemories = 250000\nagent_hours_per_month = 1000.0\n";

#[test]
fn keys_and_plans_change_under_load_without_a_failed_request() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let key = create_key(&dir, "acme", "lightyear");
    let options = Options {
        config: Some(TWO_ROOMY_PLANS.into()),
        ..Options::hash_embedder()
    };
    let server = Server::start_with(&dir, &options);
    let done = Arc::new(AtomicBool::new(false));
    // Put+search pairs answered and agents ended so far: each round of changes waits until
    // both moved on, so every change lands among live traffic.
    let progress = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);

    let memory = {
        let (c, done, progress) = (server.client(&key), done.clone(), progress.clone());
        std::thread::spawn(move || {
            let mut answered = Vec::new();
            while !done.load(Ordering::Relaxed) {
                let i = answered.len();
                let put = c.post(
                    "/api/v1/memory",
                    &json!({"key": format!("fact_{i}"), "value": format!("fact number {i}")}),
                );
                let search = c.post("/api/v1/memory/search", &json!({"query": "fact number"}));
                answered.push((put.status, search.status));
                progress[0].fetch_add(1, Ordering::Relaxed);
            }
            answered
        })
    };
    let agents = {
        let (c, done, progress) = (server.client(&key), done.clone(), progress.clone());
        std::thread::spawn(move || {
            let mut ended = Vec::new();
            while !done.load(Ordering::Relaxed) {
                let r = c.post(
                    "/api/v1/agents",
                    &json!({"task": "Remember that tea is at four"}),
                );
                assert_eq!(r.status, 201, "spawn refused mid-change: {:#}", r.body);
                let id = r.body["agent_id"].as_str().unwrap().to_owned();
                ended.push(wait_terminal(&c, &id)["status"].clone());
                progress[1].fetch_add(1, Ordering::Relaxed);
            }
            ended
        })
    };

    for round in 0..6 {
        let before = progress.each_ref().map(|n| n.load(Ordering::Relaxed));
        let tenant = format!("tenant-{round}");
        let fresh = create_key(&dir, &tenant, "free");
        let c = server.client(&fresh);
        assert_eq!(note(&c, "hello"), 201, "a new key works at once");
        run(&dir, &["keys", "revoke", &fresh]);
        c.get("/api/v1/memory/list")
            .assert_error(401, "invalid_api_key");
        let plan = if round % 2 == 0 {
            "liftoff"
        } else {
            "lightyear"
        };
        run(
            &dir,
            &["accounts", "set-plan", "--account", "acme", "--plan", plan],
        );
        let extra = create_key(&dir, "acme", plan);
        run(&dir, &["keys", "revoke", &extra]);
        run(&dir, &["usage"]);
        poll_until(Duration::from_secs(60), "memory and agent traffic", || {
            let now = progress.each_ref().map(|n| n.load(Ordering::Relaxed));
            match now[0] > before[0] && now[1] > before[1] {
                true => Ok(()),
                false => Err(format!("stuck at {now:?} since {before:?}")),
            }
        });
    }
    done.store(true, Ordering::Relaxed);

    let answered = memory.join().expect("memory traffic");
    let failed: Vec<_> = answered
        .iter()
        .filter(|(put, search)| ![200, 201].contains(put) || *search != 200)
        .take(10)
        .collect();
    assert!(
        failed.is_empty(),
        "of {} put+search pairs, some failed (first ones): {failed:?}",
        answered.len()
    );
    let ended = agents.join().expect("agents");
    assert!(ended.iter().all(|s| s == "completed"), "{ended:?}");
    put(
        &server.client(&key),
        &json!({"key": "after", "value": "still serving"}),
    );
}

/// A `wasmind serve` started by hand, for watching it before it is ready (the common
/// harness waits for readiness); killed when dropped.
struct Loading(std::process::Child);

impl Drop for Loading {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The agent component is read from a named pipe, so loading waits, deterministically,
/// until the test writes it: meanwhile the server answers health, 503s the API, and takes
/// keys over the admin socket — and logs none of those 503s as an error (a load balancer
/// polling a starting server is no failure). (Started with `--log-format json`: its lines
/// are JSON.)
#[test]
fn readiness_is_503_until_loading_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let pipe = tmp.path().join("agent.pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    let config = tmp.path().join("wasmind.toml");
    std::fs::write(&config, format!("[runtime]\ncomponent = {pipe:?}\n")).unwrap();
    let mut child = std::process::Command::new(crate::common::binary())
        .args(["serve", "--log-format", "json", "--listen", "127.0.0.1:0"])
        .arg("--data-dir")
        .arg(&dir)
        .arg("--config")
        .arg(&config)
        .env("WASMIND_EMBEDDER", "hash")
        .env("WASMIND_LOG", "info")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let server = Loading(child);
    let (tx, rx) = std::sync::mpsc::channel();
    let errors = Arc::new(std::sync::Mutex::new(Vec::new()));
    let logged = errors.clone();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok) {
            let Ok(line) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if line["level"] == "ERROR" {
                logged.lock().unwrap().push(line.clone());
            }
            let message = line["fields"]["message"].as_str().unwrap_or_default();
            if let Some(addr) = message.split("bound to ").nth(1) {
                let _ = tx.send(addr.to_string());
            }
        }
    });
    let base = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the server bound");
    let anonymous = Client::new(&base, None);
    assert_eq!(anonymous.get("/healthz").status, 200);
    let loading = poll_until(
        Duration::from_secs(60),
        "indexes up, runtime waiting",
        || {
            let ready = anonymous.get("/readyz");
            match ready.body["checks"]["indexes"] == "ready" {
                true => Ok(ready),
                false => Err(ready.body.to_string()),
            }
        },
    );
    assert_eq!(loading.status, 503, "{:#}", loading.body);
    assert_eq!(loading.body["status"], "loading");
    assert_eq!(loading.body["checks"]["runtime"], "loading");

    let key = create_key(&dir, "acme", "free");
    let early = Client::new(&base, Some(&key));
    let refused = early.get("/api/v1/memory/list");
    refused.assert_error(503, "temporarily_unavailable");
    assert_eq!(refused.retry_after.as_deref(), Some("1"));
    assert_eq!(anonymous.get("/readyz").status, 503);

    std::fs::write(&pipe, std::fs::read(crate::guests::NOTES_AGENT).unwrap()).unwrap();
    poll_until(Duration::from_secs(120), "ready", || {
        let ready = anonymous.get("/readyz");
        match ready.status {
            200 => Ok(()),
            _ => Err(ready.body.to_string()),
        }
    });
    assert_eq!(note(&early, "ready_now"), 201);
    drop(server);
    reader.join().expect("the log reader");
    let errors = errors.lock().unwrap();
    assert!(errors.is_empty(), "logged as errors: {errors:#?}");
}
