//! Both backends through [`ComponentBackend`]: the same operations give the same
//! outcomes, and the bytes stored with a component are read back by its account only.

use std::sync::Arc;

use super::{
    embedded::EmbeddedComponents,
    postgres::PgComponents,
    store::{ComponentBackend, ComponentRecord, CreateError},
};
use crate::storage::{Backend, StorageConfig, connect};
use crate::test_postgres::Postgres;

/// Runs `check` on a fresh embedded store and a fresh PostgreSQL one.
async fn on_both<F>(check: F)
where
    F: AsyncFn(&dyn ComponentBackend),
{
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
    let embedded = EmbeddedComponents::open(db, &dir.path().join("components")).unwrap();
    check(&embedded).await;
    let pg = Postgres::start();
    let config = StorageConfig {
        backend: Backend::Postgres,
        database_url: Some(pg.database("components").into()),
        pool_size: 4,
    };
    check(&PgComponents::new(connect(&config).await.unwrap())).await;
}

fn record(id: &str, account: &str, name: &str, version: &str, sha: &str) -> ComponentRecord {
    ComponentRecord {
        component_id: id.into(),
        account: account.into(),
        name: name.into(),
        version: version.into(),
        sha256: sha.into(),
        size: 8,
        created_at: 1,
        seq: 0,
    }
}

async fn pages(s: &dyn ComponentBackend) {
    for i in 0..5 {
        let r = record(&format!("cmp_{i}"), "a", "n", &format!("{i}.0.0"), "x");
        s.create(r, b"wasm".to_vec(), 10, 0).await.unwrap();
    }
    s.create(
        record("cmp_b", "b", "n", "1.0.0", "x"),
        b"wasm".to_vec(),
        10,
        0,
    )
    .await
    .unwrap();
    let ids = |page: &[ComponentRecord]| {
        page.iter()
            .map(|r| r.component_id.clone())
            .collect::<Vec<_>>()
    };
    let (page, next) = s.list("a", None, 2).await.unwrap();
    assert_eq!(ids(&page), ["cmp_4", "cmp_3"]);
    let (page, next) = s.list("a", next, 2).await.unwrap();
    assert_eq!(ids(&page), ["cmp_2", "cmp_1"]);
    let (page, next) = s.list("a", next, 2).await.unwrap();
    assert_eq!((ids(&page), next), (vec!["cmp_0".to_string()], None));
    assert!(s.get("a", "cmp_b").await.unwrap().is_none());
    assert!(s.get("b", "cmp_b").await.unwrap().is_some());
    assert!(
        s.delete("a", "cmp_b").await.unwrap().is_none(),
        "not a's to delete"
    );
    assert!(s.resolve("a", "cmp_b").await.unwrap().is_none());
}

async fn resolves(s: &dyn ComponentBackend) {
    // Upload order and string order both differ from semver order.
    for (id, v) in [
        ("cmp_1", "1.10.0"),
        ("cmp_2", "1.9.0"),
        ("cmp_3", "2.0.0-beta.1"),
        ("cmp_4", "1.2.0"),
    ] {
        s.create(record(id, "a", "notes", v, "x"), b"wasm".to_vec(), 10, 0)
            .await
            .unwrap();
    }
    s.create(
        record("cmp_5", "a", "notes_two", "9.0.0", "x"),
        b"wasm".to_vec(),
        10,
        0,
    )
    .await
    .unwrap();
    s.create(
        record("cmp_6", "b", "notes", "3.0.0", "x"),
        b"wasm".to_vec(),
        10,
        0,
    )
    .await
    .unwrap();
    let resolved = async |spec: &str| s.resolve("a", spec).await.unwrap().map(|r| r.component_id);
    assert_eq!(resolved("notes").await.as_deref(), Some("cmp_3"));
    assert_eq!(resolved("notes@1.9.0").await.as_deref(), Some("cmp_2"));
    assert_eq!(resolved("cmp_4").await.as_deref(), Some("cmp_4"));
    assert_eq!(resolved("notes@3.0.0").await, None);
    assert_eq!(resolved("note").await, None);
    assert_eq!(resolved("cmp_6").await, None);
    s.delete("a", "cmp_3").await.unwrap();
    assert_eq!(resolved("notes").await.as_deref(), Some("cmp_1"));
}

async fn quota(s: &dyn ComponentBackend) {
    s.create(
        record("cmp_1", "a", "n", "1.0.0", "x"),
        b"wasm".to_vec(),
        2,
        0,
    )
    .await
    .unwrap();
    assert!(matches!(
        s.create(
            record("cmp_2", "a", "n", "1.0.0", "y"),
            b"wasm".to_vec(),
            2,
            0
        )
        .await,
        Err(CreateError::Exists)
    ));
    s.create(
        record("cmp_3", "b", "n", "1.0.0", "x"),
        b"wasm".to_vec(),
        2,
        0,
    )
    .await
    .unwrap();
    s.create(
        record("cmp_4", "a", "n", "1.0.1", "x"),
        b"wasm".to_vec(),
        2,
        0,
    )
    .await
    .unwrap();
    assert!(matches!(
        s.create(
            record("cmp_5", "a", "n", "1.0.2", "x"),
            b"wasm".to_vec(),
            2,
            0
        )
        .await,
        Err(CreateError::Quota { max: 2 })
    ));
    s.delete("a", "cmp_4").await.unwrap();
    s.create(
        record("cmp_5", "a", "n", "1.0.2", "x"),
        b"wasm".to_vec(),
        2,
        0,
    )
    .await
    .unwrap();
}

async fn references(s: &dyn ComponentBackend) {
    assert_eq!(s.validation_us("same").await.unwrap(), None);
    s.create(
        record("cmp_1", "a", "n", "1.0.0", "same"),
        b"wasm".to_vec(),
        10,
        0,
    )
    .await
    .unwrap();
    s.create(
        record("cmp_2", "b", "m", "1.0.0", "same"),
        b"wasm".to_vec(),
        10,
        99,
    )
    .await
    .unwrap();
    let (gone, last) = s.delete("a", "cmp_1").await.unwrap().unwrap();
    assert_eq!((gone.component_id.as_str(), last), ("cmp_1", false));
    assert!(s.referenced("same").await.unwrap());
    assert_eq!(
        s.validation_us("same").await.unwrap(),
        Some(0),
        "the first one's"
    );
    let (_, last) = s.delete("b", "cmp_2").await.unwrap().unwrap();
    assert!(last);
    assert!(!s.referenced("same").await.unwrap());
    assert_eq!(s.validation_us("same").await.unwrap(), None);
}

async fn bytes_are_read_back_by_their_account_only(s: &dyn ComponentBackend) {
    s.create(
        record("cmp_1", "a", "n", "1.0.0", "d1"),
        b"one".to_vec(),
        10,
        0,
    )
    .await
    .unwrap();
    s.create(
        record("cmp_2", "b", "n", "1.0.0", "d1"),
        b"one".to_vec(),
        10,
        0,
    )
    .await
    .unwrap();
    assert_eq!(
        s.bytes("a", "d1").await.unwrap().as_deref(),
        Some(&b"one"[..])
    );
    assert_eq!(
        s.bytes("c", "d1").await.unwrap(),
        None,
        "c has no component of them"
    );
    s.delete("a", "cmp_1").await.unwrap();
    assert_eq!(s.bytes("a", "d1").await.unwrap(), None, "a's last one went");
    assert_eq!(
        s.bytes("b", "d1").await.unwrap().as_deref(),
        Some(&b"one"[..])
    );
    assert!(matches!(
        s.create(
            record("cmp_3", "b", "n", "1.0.0", "d2"),
            b"two".to_vec(),
            10,
            0
        )
        .await,
        Err(CreateError::Exists)
    ));
    assert_eq!(
        s.bytes("b", "d2").await.unwrap(),
        None,
        "a refused upload leaves no bytes"
    );
    assert_eq!(s.count("b").await.unwrap(), 1);
}

#[tokio::test]
async fn pages_are_newest_first_and_scoped_to_the_account() {
    on_both(pages).await;
}

#[tokio::test]
async fn a_name_resolves_to_its_highest_semver_and_name_at_version_to_that_one() {
    on_both(resolves).await;
}

#[tokio::test]
async fn a_name_and_version_is_taken_once_per_account_within_the_quota() {
    on_both(quota).await;
}

#[tokio::test]
async fn shared_bytes_stay_referenced_until_the_last_component_goes() {
    on_both(references).await;
}

#[tokio::test]
async fn the_bytes_of_a_component_are_its_account_s() {
    on_both(bytes_are_read_back_by_their_account_only).await;
}
