//! The same behaviour from both backends: each check runs on the embedded store and on a
//! real PostgreSQL.

use std::sync::Arc;

use super::{AccountStore, Accounts, CreateKeyError, Places, REVOKED_KEY_HOLD_MS};
use crate::accounts::{AccountError, KeyStore, PgAccounts, Plan, PlanSource, Plans};
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
    let (first, info) = store.create("acme", None, &Plans::default()).await.unwrap();
    assert!(first.starts_with("wm_") && first.len() == 67);
    assert_eq!((info.account.as_str(), info.plan), ("acme", Plan::Free));
    let who = store.authenticate(&first).await.unwrap().unwrap();
    assert_eq!(
        (&*who.account, who.plan, &*who.key_id),
        ("acme", Plan::Free, info.id.as_str())
    );

    // A second key with a plan moves the account; without one it keeps the plan.
    let (second, _) = store
        .create("acme", Some(Plan::Liftoff), &Plans::default())
        .await
        .unwrap();
    let (_, other) = store.create("zeta", None, &Plans::default()).await.unwrap();
    assert_eq!(
        store
            .create("acme", None, &Plans::default())
            .await
            .unwrap()
            .1
            .plan,
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

    let set = store
        .set_plan("acme", Plan::Lightyear, PlanSource::Billing)
        .await
        .unwrap();
    assert_eq!(
        (
            set.name.as_str(),
            set.plan,
            set.plan_source,
            set.active_keys
        ),
        ("acme", Plan::Lightyear, PlanSource::Billing, 3)
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

    // Refusals are typed, and name what to fix.
    let e = store.revoke("key_nope").await.unwrap_err();
    assert!(
        matches!(&e, AccountError::NoSuchKey(k) if k == "key_nope"),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(e.contains("no key \"key_nope\""), "{e}");
    let e = store
        .set_plan("nobody", Plan::Free, PlanSource::Operator)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, AccountError::NoSuchAccount(a) if a == "nobody"),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(e.contains("`keys create` makes accounts"), "{e}");
    let e = store
        .create("not ok!", None, &Plans::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("is invalid"), "{e}");
    assert!(store.authenticate("wm_unknown").await.unwrap().is_none());
}

/// Plans whose free tier has `keys` keys and liftoff one more.
fn keys_bound(keys: u32) -> Plans {
    let mut plans = Plans::default();
    plans.free.keys = keys;
    plans.liftoff.keys = keys + 1;
    plans
}

async fn keys_of_one_account(store: &dyn AccountStore) {
    let plans = keys_bound(2);
    let (_, first) = store.create("acme", None, &plans).await.unwrap();
    let (_, second) = store.create("acme", None, &plans).await.unwrap();
    let (_, theirs) = store.create("zeta", None, &plans).await.unwrap();

    // The plan's bound counts active keys; the refusal names the account, plan and bound.
    let refused = store.create("acme", None, &plans).await.unwrap_err();
    let two = Places {
        active: 2,
        held: 0,
        frees_at: None,
    };
    assert!(
        matches!(
            refused,
            CreateKeyError::KeyLimit { ref account, plan: Plan::Free, places, max: 2 }
                if account == "acme" && places == two
        ),
        "{refused:?}"
    );
    assert!(
        refused.to_string().contains("free plan's maximum of 2"),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("keeps its place for an hour"),
        "{refused}"
    );
    // A larger plan given with the key raises the bound in the same step.
    let (_, third) = store
        .create("acme", Some(Plan::Liftoff), &plans)
        .await
        .unwrap();
    assert!(matches!(
        store.create("acme", None, &plans).await,
        Err(CreateKeyError::KeyLimit { max: 3, .. })
    ));

    let ids = |keys: Vec<crate::accounts::KeyInfo>| -> Vec<String> {
        keys.into_iter().map(|k| k.id).collect()
    };
    assert_eq!(
        ids(store.keys("acme").await.unwrap()),
        [third.id, second.id, first.id.clone()],
        "newest first, the account's only"
    );
    assert_eq!(
        ids(store.keys("zeta").await.unwrap()),
        std::slice::from_ref(&theirs.id)
    );
    assert!(store.keys("nobody").await.unwrap().is_empty());

    // Revoking one's own key: another account's, or a secret, is not found.
    assert_eq!(store.revoke_own("acme", &theirs.id).await.unwrap(), None);
    assert_eq!(store.revoke_own("acme", "wm_secret").await.unwrap(), None);
    let revoked = store.revoke_own("acme", &first.id).await.unwrap().unwrap();
    assert!(revoked.revoked_at.is_some() && revoked.account == "acme");
    let again = store.revoke_own("acme", &first.id).await.unwrap().unwrap();
    assert_eq!(again.revoked_at, revoked.revoked_at, "idempotent");
    let listed = store.keys("acme").await.unwrap();
    assert_eq!(listed.iter().filter(|k| k.revoked_at.is_some()).count(), 1);
    assert!(store.keys("zeta").await.unwrap()[0].revoked_at.is_none());
    // The revoked key keeps its place for an hour: its spawn windows may still count.
    let held = store.create("acme", None, &plans).await.unwrap_err();
    let revoked_at = revoked.revoked_at.unwrap();
    let places = Places {
        active: 2,
        held: 1,
        frees_at: Some(revoked_at + REVOKED_KEY_HOLD_MS),
    };
    assert!(
        matches!(held, CreateKeyError::KeyLimit { places: p, max: 3, .. } if p == places),
        "{held:?}"
    );
    assert!(
        held.to_string().contains("1 revoked within the last hour"),
        "{held}"
    );
    // Another account's keys take none of its places.
    store.create("zeta", None, &plans).await.unwrap();
}

#[tokio::test]
async fn keys_and_plans_behave_alike_on_both_backends() {
    let (_dir, embedded) = embedded();
    keys_and_plans(&*embedded).await;
    let (_dir, embedded) = self::embedded();
    keys_of_one_account(&*embedded).await;
    let pg = Postgres::start();
    keys_and_plans(&*node(&pg.database("accounts")).await).await;
    keys_of_one_account(&*node(&pg.database("one_account")).await).await;
}

/// A data dir whose keys were made before the per-account index finds them by account
/// once reopened.
#[test]
fn keys_made_before_the_account_index_are_indexed_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
    let store = KeyStore::new(db.clone()).unwrap();
    let (_, made) = store.create("acme", None, &Plans::default()).unwrap();
    let txn = db.begin_write().unwrap();
    txn.delete_table(redb::TableDefinition::<(&str, &str), &str>::new(
        "account_keys",
    ))
    .unwrap();
    txn.commit().unwrap();
    let reopened = KeyStore::new(db).unwrap();
    let found = reopened.keys("acme").unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].id, made.id);
}

/// Two nodes on one database: a key made through one works through the other at its next
/// request, and a revocation through the other refuses it on the first at once.
#[tokio::test]
async fn keys_take_effect_on_every_node_at_once() {
    let pg = Postgres::start();
    let url = pg.database("nodes");
    let (a, b) = (node(&url).await, node(&url).await);
    let (secret, info) = a
        .create("acme", Some(Plan::Liftoff), &Plans::default())
        .await
        .unwrap();
    assert_eq!(
        b.authenticate(&secret).await.unwrap().unwrap().plan,
        Plan::Liftoff
    );
    b.set_plan("acme", Plan::Lightyear, PlanSource::Operator)
        .await
        .unwrap();
    assert_eq!(
        a.authenticate(&secret).await.unwrap().unwrap().plan,
        Plan::Lightyear
    );
    b.revoke(&info.id).await.unwrap();
    assert!(a.authenticate(&secret).await.unwrap().is_none());
}

/// Active keys take places for good, revoked ones for the hold after their revocation.
#[test]
fn revoked_keys_hold_their_places_for_an_hour() {
    let hour = REVOKED_KEY_HOLD_MS;
    let now = 10 * hour;
    let places = Places::of(
        [
            None,
            Some(now - 10),
            Some(now - hour + 5),
            Some(now - hour),
            None,
        ],
        now,
    );
    assert_eq!(
        places,
        Places {
            active: 2,
            held: 2,
            frees_at: Some(now + 5),
        }
    );
    assert_eq!(places.taken(), 4);
    assert_eq!(Places::of([Some(now - hour)], now), Places::default());
}
