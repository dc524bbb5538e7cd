//! The same behaviour from both backends: each check runs on the embedded store and on a
//! real PostgreSQL.

use std::sync::Arc;

use super::{AccountStore, Accounts};
use crate::accounts::{KeyStore, PgAccounts, Plan};
use crate::storage::{Backend, StorageConfig, connect};
use crate::test_postgres::Postgres;

fn embedded() -> (tempfile::TempDir, Accounts) {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
    (dir, Arc::new(KeyStore::new(db).unwrap()))
}

/// A node's store on `url`: its own pool, as each node has.
async fn node(url: &str) -> Accounts {
    let config = StorageConfig {
        backend: Backend::Postgres,
        database_url: Some(url.into()),
        pool_size: 2,
    };
    Arc::new(PgAccounts::new(connect(&config).await.unwrap()))
}

async fn keys_and_plans(store: &dyn AccountStore) {
    let (first, info) = store.create("acme", None).await.unwrap();
    assert!(first.starts_with("wm_") && first.len() == 67);
    assert_eq!((info.account.as_str(), info.plan), ("acme", Plan::Free));
    let who = store.authenticate(&first).await.unwrap().unwrap();
    assert_eq!(
        (&*who.account, who.plan, &*who.key_id),
        ("acme", Plan::Free, info.id.as_str())
    );

    // A second key with a plan moves the account; without one it keeps the plan.
    let (second, _) = store.create("acme", Some(Plan::Liftoff)).await.unwrap();
    let (_, other) = store.create("zeta", None).await.unwrap();
    assert_eq!(
        store.create("acme", None).await.unwrap().1.plan,
        Plan::Liftoff
    );
    assert_eq!(
        store.authenticate(&first).await.unwrap().unwrap().plan,
        Plan::Liftoff
    );
    assert_eq!(store.plan("zeta").await.unwrap(), Some(Plan::Free));
    assert_eq!(store.plan("nobody").await.unwrap(), None);
    let plans = store.plans().await.unwrap();
    assert_eq!((plans.len(), plans["acme"]), (2, Plan::Liftoff));

    let listed = store.list().await.unwrap();
    assert_eq!(listed.len(), 4);
    let order: Vec<(u64, &str)> = listed
        .iter()
        .map(|k| (k.created_at, k.id.as_str()))
        .collect();
    assert!(order.is_sorted(), "oldest first: {order:?}");
    assert!(
        listed
            .iter()
            .any(|k| k.id == other.id && k.account == "zeta")
    );

    let set = store.set_plan("acme", Plan::Lightyear).await.unwrap();
    assert_eq!(
        (set.name.as_str(), set.plan, set.active_keys),
        ("acme", Plan::Lightyear, 3)
    );
    assert_eq!(
        store.authenticate(&second).await.unwrap().unwrap().plan,
        Plan::Lightyear
    );

    // Revoking by id and by secret; twice keeps the first time.
    let revoked = store.revoke(&info.id).await.unwrap();
    assert!(revoked.revoked_at.is_some());
    assert_eq!(
        store.revoke(&info.id).await.unwrap().revoked_at,
        revoked.revoked_at
    );
    assert!(store.authenticate(&first).await.unwrap().is_none());
    assert!(store.revoke(&second).await.unwrap().revoked_at.is_some());
    assert!(store.authenticate(&second).await.unwrap().is_none());
    let accounts = store.accounts().await.unwrap();
    let names: Vec<(&str, u32)> = accounts
        .iter()
        .map(|a| (a.name.as_str(), a.active_keys))
        .collect();
    assert_eq!(names, [("acme", 1), ("zeta", 1)]);

    // Refusals name what to fix.
    let e = store.revoke("key_nope").await.unwrap_err().to_string();
    assert!(e.contains("no key \"key_nope\""), "{e}");
    let e = store
        .set_plan("nobody", Plan::Free)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("`keys create` makes accounts"), "{e}");
    let e = store.create("not ok!", None).await.unwrap_err().to_string();
    assert!(e.contains("is invalid"), "{e}");
    assert!(store.authenticate("wm_unknown").await.unwrap().is_none());
}

#[tokio::test]
async fn keys_and_plans_behave_alike_on_both_backends() {
    let (_dir, embedded) = embedded();
    keys_and_plans(&*embedded).await;
    let pg = Postgres::start();
    keys_and_plans(&*node(&pg.database("accounts")).await).await;
}

/// Two nodes on one database: a key made through one works through the other at its next
/// request, and a revocation through the other refuses it on the first at once.
#[tokio::test]
async fn keys_take_effect_on_every_node_at_once() {
    let pg = Postgres::start();
    let url = pg.database("nodes");
    let (a, b) = (node(&url).await, node(&url).await);
    let (secret, info) = a.create("acme", Some(Plan::Liftoff)).await.unwrap();
    assert_eq!(
        b.authenticate(&secret).await.unwrap().unwrap().plan,
        Plan::Liftoff
    );
    b.set_plan("acme", Plan::Lightyear).await.unwrap();
    assert_eq!(
        a.authenticate(&secret).await.unwrap().unwrap().plan,
        Plan::Lightyear
    );
    b.revoke(&info.id).await.unwrap();
    assert!(a.authenticate(&secret).await.unwrap().is_none());
}
