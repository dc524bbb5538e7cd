use super::*;
use crate::test_postgres::Postgres;

fn config(url: String) -> StorageConfig {
    StorageConfig {
        backend: Backend::Postgres,
        database_url: Some(url.into()),
        pool_size: 2,
    }
}

/// Nodes starting at once all come up, and each migration is applied exactly once (sqlx
/// serializes them on an advisory lock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_starting_together_apply_the_schema_once() {
    let pg = Postgres::start();
    let config = config(pg.database("race"));
    let nodes: Vec<_> = (0..4)
        .map(|_| {
            let config = config.clone();
            tokio::spawn(async move { connect(&config).await })
        })
        .collect();
    for node in nodes {
        node.await.unwrap().unwrap();
    }
    let applied = pg.psql(
        "race",
        "SELECT count(*) FROM _sqlx_migrations WHERE success",
    );
    assert_eq!(applied, MIGRATOR.iter().count().to_string());
    assert_eq!(pg.psql("race", "SELECT count(*) FROM accounts"), "0");
}

/// A session left idle inside a transaction (its node paused mid-way) is ended by the
/// server, and its row locks go with it.
#[tokio::test]
async fn a_transaction_left_idle_ends_and_frees_its_locks() {
    let pg = Postgres::start();
    let url = pg.database("idle");
    let pool = connect(&config(url.clone())).await.unwrap();
    let mut stuck = pool.begin().await.unwrap();
    sqlx::query("INSERT INTO accounts VALUES ('acme', 'free', 0)")
        .execute(&mut *stuck)
        .await
        .unwrap();
    let other = connect(&config(url)).await.unwrap();
    // Waits for the stuck insert's lock until the server ends that session.
    let insert = sqlx::query("INSERT INTO accounts VALUES ('acme', 'liftoff', 0)");
    let waited = tokio::time::timeout(Duration::from_secs(30), insert.execute(&other)).await;
    waited
        .expect("the idle transaction's lock was never freed")
        .unwrap();
    assert!(stuck.commit().await.is_err(), "its session was ended");
}

/// pgvector is created by the first connection that can (the tests' role is a superuser);
/// a role that may not create it is told what to do, and connects once it exists.
#[tokio::test]
async fn pgvector_is_created_when_missing_or_its_absence_explained() {
    let pg = Postgres::start();
    let url = pg.database("made");
    connect(&config(url)).await.unwrap();
    let made = "SELECT extversion FROM pg_extension WHERE extname = 'vector'";
    assert!(at_least_0_8(&pg.psql("made", made)));

    pg.psql("postgres", "CREATE ROLE plain LOGIN");
    pg.psql("postgres", "CREATE DATABASE bare OWNER plain");
    let plain = pg.url("bare").replace("wasmind@", "plain@");
    let refused = connect(&config(plain.clone())).await.unwrap_err();
    let message = format!("{refused:#}");
    assert!(
        message.contains("run `CREATE EXTENSION vector` in it as a superuser"),
        "{message}"
    );
    pg.psql("bare", "CREATE EXTENSION vector");
    connect(&config(plain)).await.unwrap();
}

#[test]
fn pgvector_older_than_0_8_is_refused() {
    assert!(at_least_0_8("0.8.5") && at_least_0_8("0.10.0") && at_least_0_8("1.0"));
    assert!(!at_least_0_8("0.7.4") && !at_least_0_8("0.5") && !at_least_0_8(""));
}

#[tokio::test]
async fn an_unreachable_database_is_named_without_its_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://wasmind:hunter2@127.0.0.1:{port}/gone");
    let error = format!("{:#}", connect(&config(url)).await.unwrap_err());
    assert!(
        error.contains(&format!("wasmind:***@127.0.0.1:{port}/gone")),
        "{error}"
    );
    assert!(!error.contains("hunter2"), "{error}");
}

#[tokio::test]
async fn the_postgres_backend_asks_for_its_url() {
    let config = StorageConfig {
        backend: Backend::Postgres,
        ..StorageConfig::default()
    };
    let error = connect(&config).await.unwrap_err().to_string();
    assert!(error.contains("WASMIND_DATABASE_URL"), "{error}");
}

#[test]
fn the_storage_section_parses_and_the_url_comes_from_the_environment() {
    let config =
        crate::config::Config::parse("[storage]\nbackend = \"postgres\"\npool_size = 8\n").unwrap();
    assert_eq!(config.storage.backend, Backend::Postgres);
    assert_eq!(config.storage.pool_size, 8);
    let env = std::collections::BTreeMap::from([(
        "WASMIND_DATABASE_URL".to_string(),
        "postgres://a@b/c".to_string(),
    )]);
    let (config, _) = crate::config::Config::load(None, &env).unwrap();
    assert_eq!(
        config.storage.database_url.as_ref().map(Secret::expose),
        Some("postgres://a@b/c")
    );
    assert!(crate::config::Config::parse("[storage]\nbackend = \"mysql\"\n").is_err());
}

#[test]
fn passwords_are_redacted_and_nothing_else() {
    assert_eq!(redacted("postgres://u:p@h:5/d"), "postgres://u:***@h:5/d");
    assert_eq!(redacted("postgres://u@h/d"), "postgres://u@h/d");
    assert_eq!(
        redacted("postgres://u@h/d?password=hunter2&sslmode=require"),
        "postgres://u@h/d?password=***&sslmode=require"
    );
    assert_eq!(
        redacted("postgres://h/d?user=u&PassWord=hunter2&sslpassword=k3y"),
        "postgres://h/d?user=u&PassWord=***&sslpassword=***"
    );
    // Percent-encoded secrets, in the user info and the query: none survives, encoded or not.
    for url in [
        "postgres://u%40corp:hun%3Ater%402@h/d",
        "postgres://u@h/d?password=hun%26ter%3D2",
        "postgres://u:x@h/d?password=hun+ter2&application_name=a%20b",
    ] {
        let shown = redacted(url);
        for secret in ["hun", "ter"] {
            assert!(!shown.contains(secret), "{url} shown as {shown}");
        }
        assert!(shown.contains("***"), "{shown}");
    }
    assert_eq!(
        redacted("postgres://u%40corp:p@h/d"),
        "postgres://u%40corp:***@h/d"
    );
    assert!(!redacted("postgres://u:secret@h:notaport/d").contains("secret"));
}
