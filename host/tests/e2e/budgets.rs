//! Budgets in plans end to end: an account's API keys (the console and the CLI refuse one
//! past the plan's `keys`), Mind tokens per run (the run fails `token_limit_exceeded`) and
//! per month (the next spawn is 402 `monthly_quota_exceeded` naming the token budget),
//! versions kept per memory key (older ones pruned), component uploads per hour (429
//! `rate_limited`) and open event streams (429 `stream_limit_reached`), each shown by the
//! console's usage (and by `wasmind usage`: the monthly ones, keys, and, from a running
//! server, uploads and streams).

use std::time::Duration;

use serde_json::json;

use crate::{
    agents::{spawn, wait_for, wait_terminal},
    common::{
        Client, Options, cli, components::post_component, on_postgres, poll_until, put,
        server_with_keys,
    },
    console::{login, read_events},
};

const KEYS: &str = "/api/v1/console/keys";
const USAGE: &str = "/api/v1/console/usage";

#[test]
fn keys_stop_at_the_plans_bound_in_the_console_and_the_cli() {
    // The free plan's default bound is 5 active keys; the CLI made 4.
    let (tmp, server, _keys) = server_with_keys(&[("acme", "free"); 4], &Options::hash_embedder());
    let dir = tmp.path().join("data");
    let (_, token) = login(&dir, "acme", None);
    let console = Client::new(&server.base, Some(&token));
    let created = console.send(console.request(reqwest::Method::POST, KEYS));
    assert_eq!(created.status, 201, "{:#}", created.body);

    let refused = console.send(console.request(reqwest::Method::POST, KEYS));
    refused.assert_error(402, "key_quota_exceeded");
    assert_eq!(
        refused.body["error"]["details"],
        json!({ "plan": "free", "activeKeys": 5, "revokedKeys": 0, "maxKeys": 5 })
    );
    assert_eq!(
        refused.retry_after, None,
        "waiting frees no active key's place"
    );
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("revoke a key you no longer need"),
        "{message}"
    );
    assert_eq!(
        console.get(USAGE).body["keys"],
        json!({ "active": 5, "revoked_last_hour": 0, "limit": 5 })
    );

    // The operator's CLI, through the running server (or the shared database), alike.
    let d = dir.to_str().unwrap();
    let (ok, _, err) = cli(&["keys", "create", "--data-dir", d, "--account", "acme"]);
    assert!(!ok && err.contains("the free plan's maximum of 5"), "{err}");

    // A revoked key keeps its place for an hour (see the next test), on every door.
    let key_id = created.body["key_id"].as_str().unwrap();
    assert_eq!(console.delete(&format!("{KEYS}/{key_id}")).status, 200);
    assert_eq!(
        console.get(USAGE).body["keys"],
        json!({ "active": 4, "revoked_last_hour": 1, "limit": 5 })
    );
    let (ok, _, err) = cli(&["keys", "create", "--data-dir", d, "--account", "acme"]);
    assert!(
        !ok && err.contains("1 revoked within the last hour"),
        "{err}"
    );
}

/// A free plan of two keys, each spawning two agents a minute.
const TWO_KEYS: &str = "[plans.free]\nspawns_per_minute = 2\nspawns_per_hour = 30\n\
    concurrent_agents = 10\nmemories = 100\nagent_hours_per_month = 10.0\nkeys = 2\n";

/// Spawn windows are per key (§8), so a fresh key would bring fresh windows: a revoked key
/// keeps its place under the plan's `keys` for an hour, and an account spawns no more by
/// making keys than with its plan's keys all active (here 2 keys × 2 a minute).
#[test]
fn key_churn_does_not_raise_the_spawn_rate() {
    let options = Options {
        config: Some(TWO_KEYS.into()),
        ..Options::hash_embedder()
    };
    let (tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let dir = tmp.path().join("data");
    let (_, token) = login(&dir, "acme", None);
    let console = Client::new(&server.base, Some(&token));
    let spawn_task = json!({ "task": "Say hello", "memory_mode": "off" });
    let spawn_to_the_rate = |key: &str| {
        let c = server.client(key);
        for _ in 0..2 {
            let spawned = c.post("/api/v1/agents", &spawn_task);
            assert_eq!(spawned.status, 201, "{:#}", spawned.body);
        }
        let third = c.post("/api/v1/agents", &spawn_task);
        third.assert_error(429, "rate_limited");
        assert_eq!(third.body["error"]["details"]["window"], "minute");
    };
    // The first key spawns to its rate, is revoked, and another is made: the plan has room
    // for two keys, so this is no more than two keys spawning side by side.
    spawn_to_the_rate(&keys[0]);
    let listed = console.get(KEYS).body;
    let first = listed["data"][0]["key_id"].as_str().unwrap();
    assert_eq!(console.delete(&format!("{KEYS}/{first}")).status, 200);
    let made = console.send(console.request(reqwest::Method::POST, KEYS));
    assert_eq!(made.status, 201, "{:#}", made.body);
    let second = made.body["key"].as_str().unwrap().to_owned();
    spawn_to_the_rate(&second);

    // Revoked by the operator this time: two revoked keys hold both places for the hour,
    // so no door makes a third key and its fresh windows.
    let second_id = made.body["key_id"].as_str().unwrap();
    let config = dir.with_extension("toml");
    let operator = |args: &[&str]| {
        let out = std::process::Command::new(crate::common::binary())
            .args(args)
            .args([
                "--data-dir",
                dir.to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, err) = operator(&["keys", "revoke", second_id]);
    assert!(ok, "{err}");
    let refused = console.send(console.request(reqwest::Method::POST, KEYS));
    refused.assert_error(402, "key_quota_exceeded");
    assert_eq!(
        refused.body["error"]["details"],
        json!({ "plan": "free", "activeKeys": 0, "revokedKeys": 2, "maxKeys": 2 })
    );
    let retry: u64 = refused.retry_after.as_deref().unwrap().parse().unwrap();
    assert!(
        (3_500..=3_600).contains(&retry),
        "a place frees an hour after the first revocation: {retry}"
    );
    let (ok, err) = operator(&["keys", "create", "--account", "acme"]);
    assert!(
        !ok && err.contains("2 revoked within the last hour"),
        "{err}"
    );
    assert_eq!(
        console.get(USAGE).body["keys"],
        json!({ "active": 0, "revoked_last_hour": 2, "limit": 2 })
    );
}

/// A free plan of one Mind token per run and per month: the offline Mind's first answer
/// spends more.
const ONE_TOKEN: &str = "[plans.free]\nspawns_per_minute = 5\nspawns_per_hour = 30\n\
    concurrent_agents = 2\nmemories = 100\nagent_hours_per_month = 10.0\n\
    tokens_per_run = 1\ntokens_per_month = 1\n";

#[test]
fn a_run_past_its_tokens_fails_and_a_spent_month_refuses_the_next_spawn() {
    let options = Options {
        config: Some(ONE_TOKEN.into()),
        hash_embedder: true,
        ..Default::default()
    };
    let (tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    let done = wait_terminal(&c, &spawn(&c, "Remember that the launch is on Friday"));
    assert_eq!(done["status"], "failed", "{done:#}");
    assert_eq!(done["error"]["code"], "token_limit_exceeded", "{done:#}");
    let message = done["error"]["message"].as_str().unwrap();
    assert!(message.contains("past its plan's 1 per run"), "{message}");
    let spent = done["usage"]["input_tokens"].as_u64().unwrap()
        + done["usage"]["output_tokens"].as_u64().unwrap();
    assert!(spent > 1, "{done:#}");

    // The run's tokens count for the month once its end is recorded.
    let dir = tmp.path().join("data");
    let (_, token) = login(&dir, "acme", None);
    let console = Client::new(&server.base, Some(&token));
    let tokens = poll_until(
        Duration::from_secs(30),
        "the run's tokens in the month's usage",
        || {
            let usage = console.get(USAGE).body;
            match usage["tokens"]["used"].as_u64() {
                Some(used) if used >= spent => Ok(usage["tokens"].clone()),
                _ => Err(format!("{usage:#}")),
            }
        },
    );
    assert_eq!(
        (&tokens["limit"], &tokens["per_run"]),
        (&json!(1), &json!(1))
    );

    let refused = c.post("/api/v1/agents", &json!({ "task": "Another task" }));
    refused.assert_error(402, "monthly_quota_exceeded");
    let details = &refused.body["error"]["details"];
    assert_eq!(
        (
            &details["plan"],
            &details["budget"],
            &details["limitTokens"]
        ),
        (&json!("free"), &json!("tokens"), &json!(1))
    );
    assert!(
        details["usedTokens"].as_u64().unwrap() >= spent,
        "{details:#}"
    );
    assert_eq!(details["limitHours"], 10.0);
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("1 Mind tokens for this month are used"),
        "{message}"
    );

    // `wasmind usage` shows the month's tokens against the plan's, and the keys.
    let d = dir.to_str().unwrap();
    let (ok, out, err) = cli(&["usage", "--data-dir", d, "--account", "acme"]);
    assert!(ok, "{err}");
    let row: Vec<&str> = out
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let used = tokens["used"].as_u64().unwrap();
    assert!(row.len() == 15 && row[0] == "acme", "{out}");
    let (row_tokens, row_keys) = (row[8], row[11]);
    let (used_then, limit) = row_tokens.split_once('/').unwrap();
    // The limit is the plans of the process that answers: the running server's through its
    // admin socket; on postgres the CLI's own configuration, which here has no `[plans]`.
    let plans_limit = if on_postgres() { "2000000" } else { "1" };
    assert!(
        used_then.parse::<u64>().unwrap() >= used && limit == plans_limit,
        "{out}"
    );
    assert_eq!(row_keys, "1/5", "{out}");
}

/// A free plan keeping three versions of each memory key.
const THREE_VERSIONS: &str = "[plans.free]\nspawns_per_minute = 5\nspawns_per_hour = 30\n\
    concurrent_agents = 2\nmemories = 100\nagent_hours_per_month = 10.0\n\
    versions_per_key = 3\n";

#[test]
fn a_key_keeps_the_plans_versions_and_older_ones_are_pruned() {
    let options = Options {
        config: Some(THREE_VERSIONS.into()),
        hash_embedder: true,
        ..Default::default()
    };
    let (tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    for n in 1..=5 {
        put(&c, &json!({ "key": "plan", "value": format!("draft {n}") }));
    }
    let history = c.get("/api/v1/memory/history?key=plan");
    assert_eq!(history.status, 200, "{:#}", history.body);
    let values: Vec<&str> = history.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["draft 5", "draft 4", "draft 3"]);
    assert_eq!(c.get("/api/v1/memory?key=plan").body["value"], "draft 5");

    let (_, token) = login(&tmp.path().join("data"), "acme", None);
    let console = Client::new(&server.base, Some(&token));
    assert_eq!(
        console.get(USAGE).body["memories"],
        json!({ "live": 1, "limit": 100, "versions_per_key": 3 })
    );
}

/// A free plan of one open event stream and two component uploads an hour, its agents
/// spinning until stopped.
fn one_stream_two_uploads() -> Options {
    let config = format!(
        "[plans.free]\nspawns_per_minute = 5\nspawns_per_hour = 30\nconcurrent_agents = 2\n\
         memories = 100\nagent_hours_per_month = 10.0\nevent_streams = 1\n\
         component_uploads_per_hour = 2\n\n[runtime]\ncomponent = {:?}\nstop_grace_secs = 1.0\n",
        crate::guests::SPIN
    );
    Options {
        config: Some(config),
        hash_embedder: true,
        ..Default::default()
    }
}

#[test]
fn event_streams_and_component_uploads_stop_at_the_plans_bounds() {
    let (tmp, server, keys) = server_with_keys(&[("acme", "free")], &one_stream_two_uploads());
    let public = server.client(&keys[0]);
    let (_, token) = login(&tmp.path().join("data"), "acme", None);
    let console = Client::new(&server.base, Some(&token));

    // Uploads are counted before they compile: two that do not validate use the hour.
    for version in ["1.0.0", "1.0.1"] {
        post_component(&public, b"not a component".to_vec(), "bad", version)
            .assert_error(400, "invalid_component");
    }
    let refused = post_component(&public, b"not a component".to_vec(), "bad", "1.0.2");
    refused.assert_error(429, "rate_limited");
    assert_eq!(
        refused.body["error"]["details"],
        json!({ "plan": "free", "window": "hour", "limitPerHour": 2 })
    );
    let retry: u64 = refused.retry_after.as_deref().unwrap().parse().unwrap();
    assert!((3_500..=3_600).contains(&retry), "{retry}");
    assert_eq!(
        console.get(USAGE).body["component_uploads"],
        json!({ "last_hour": 2, "limit": 2 })
    );

    // One stream open on a running agent holds the account's one place.
    let id = spawn(&public, "spin");
    wait_for(&public, &id, Duration::from_secs(20), |a| {
        a["status"] == "running"
    });
    let events = format!("{}/api/v1/console/agents/{id}/events", server.base);
    let open = || {
        reqwest::blocking::Client::new()
            .get(&events)
            .bearer_auth(&token)
            .send()
            .unwrap()
    };
    let first = open();
    assert_eq!(first.status(), 200);
    let second = open();
    assert_eq!(second.status(), 429);
    assert_eq!(second.headers()["retry-after"], "5");
    let body: serde_json::Value = second.json().unwrap();
    assert_eq!(body["error"]["code"], "stream_limit_reached");
    assert_eq!(
        body["error"]["details"],
        json!({ "plan": "free", "currentStreams": 1, "maxStreams": 1 })
    );
    assert_eq!(
        console.get(USAGE).body["event_streams"],
        json!({ "open": 1, "limit": 1 })
    );

    // The stream ends with its agent, and its place is free again.
    let reader = std::thread::spawn(move || read_events(first));
    assert_eq!(public.delete(&format!("/api/v1/agents/{id}")).status, 200);
    let ended = reader.join().unwrap();
    assert_eq!(ended.last().unwrap().event, "end");
    poll_until(
        Duration::from_secs(10),
        "the stream's place given back",
        || {
            let usage = console.get(USAGE).body;
            match usage["event_streams"]["open"] == 0 {
                true => Ok(()),
                false => Err(format!("{usage:#}")),
            }
        },
    );
    let again = open();
    assert_eq!(again.status(), 200);
    assert_eq!(read_events(again).last().unwrap().event, "end");

    // `wasmind usage` shows both as the running server counts them, through its admin
    // socket; on postgres the CLI asks the database, which does not count them.
    let dir = tmp.path().join("data");
    let args = [
        "usage",
        "--data-dir",
        dir.to_str().unwrap(),
        "--account",
        "acme",
    ];
    let live = match on_postgres() {
        true => ["-", "-", "-"],
        false => ["2/2", "0/1", "0/5"],
    };
    // The account's row is written as its agent's run is metered, just after it ends.
    poll_until(Duration::from_secs(10), "the account's usage row", || {
        let (ok, out, err) = cli(&args);
        assert!(ok, "{err}");
        let row: Vec<String> = (out.lines().nth(1).unwrap_or_default().split_whitespace())
            .map(str::to_owned)
            .collect();
        match row.len() == 15 && row[12..] == live {
            true => Ok(()),
            false => Err(out),
        }
    });
}
