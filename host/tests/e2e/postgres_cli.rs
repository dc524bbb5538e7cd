//! The operator's CLI on the postgres backend: `--config` naming a database sends `keys`
//! and `accounts` there (a real PostgreSQL the test starts), with no data dir involved.

use crate::common::{binary, postgres::Postgres};

/// `wasmind ARGS --config CONFIG`, ARGS split at spaces: (success, stdout, stderr).
fn wasmind(config: &std::path::Path, args: &str) -> (bool, String, String) {
    let out = std::process::Command::new(binary())
        .args(args.split(' '))
        .arg("--config")
        .arg(config)
        .current_dir(config.parent().unwrap())
        .output()
        .expect("running wasmind");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn keys_and_accounts_live_in_the_configured_database() {
    let pg = Postgres::start();
    let url = pg.database("cli");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("wasmind.toml");
    std::fs::write(
        &config,
        format!("[storage]\nbackend = \"postgres\"\ndatabase_url = \"{url}\"\n"),
    )
    .unwrap();

    let (ok, secret, stderr) = wasmind(&config, "keys create --account acme --plan liftoff");
    assert!(ok, "{stderr}");
    let secret = secret.trim();
    assert!(secret.starts_with("wm_"), "{secret}");
    // Stored in the database, hashed; nothing in a data dir.
    assert_eq!(
        pg.psql("cli", "SELECT account_id, plan FROM accounts"),
        "acme|liftoff"
    );
    assert_eq!(
        pg.psql(
            "cli",
            "SELECT count(*) FROM api_keys WHERE key_hash LIKE 'wm_%'"
        ),
        "0"
    );
    assert!(!dir.path().join("wasmind-data").exists());

    let (ok, listed, stderr) = wasmind(&config, "keys list");
    assert!(ok, "{stderr}");
    assert!(
        listed
            .lines()
            .any(|l| l.contains("acme") && l.contains("liftoff")),
        "{listed}"
    );
    let (ok, out, stderr) = wasmind(&config, "accounts set-plan --account acme --plan lightyear");
    assert!(ok, "{stderr}");
    assert_eq!(out.trim(), "account acme is now on plan lightyear");
    let (ok, out, stderr) = wasmind(&config, &format!("keys revoke {secret}"));
    assert!(ok, "{stderr}");
    assert!(out.starts_with("revoked key_"), "{out}");
    let (ok, accounts, stderr) = wasmind(&config, "accounts list");
    assert!(ok, "{stderr}");
    let row = accounts.lines().find(|l| l.starts_with("acme")).unwrap();
    assert!(
        row.contains("lightyear") && row.trim_end().ends_with(" 0 operator"),
        "{row}"
    );

    // Usage rows any node added are what `usage` prints, beside the plan's token budget and
    // the account's keys (none active after the revoke) against its plan's.
    pg.psql(
        "cli",
        "INSERT INTO account_usage VALUES ('acme', '2026-11', 3600000, 10, 20, 1500)",
    );
    let (ok, usage, stderr) = wasmind(&config, "usage --account acme");
    assert!(ok, "{stderr}");
    let row: Vec<&str> = usage.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        row,
        [
            "acme",
            "2026-11",
            "lightyear",
            "-",
            "1.0000",
            "1.500",
            "10",
            "20",
            "30/500000000",
            "0/2000000",
            "0/214748364800",
            "0/100",
            "-",
            "-",
            "-"
        ],
        "{usage}"
    );
}

#[test]
fn an_unreachable_database_is_an_error_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("wasmind.toml");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(
        &config,
        format!(
            "[storage]\nbackend = \"postgres\"\ndatabase_url = \"postgres://op:s3cret@127.0.0.1:{port}/x\"\n"
        ),
    )
    .unwrap();
    let (ok, _, stderr) = wasmind(&config, "keys list");
    assert!(!ok);
    assert!(
        stderr.contains(&format!("op:***@127.0.0.1:{port}")),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");
}
