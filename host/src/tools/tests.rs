//! Both backends through [`ToolBackend`]: the same operations give the same outcomes, and
//! an account reaches only its own tools.

use std::sync::Arc;

use serde_json::json;

use super::{
    embedded::EmbeddedTools,
    postgres::PgTools,
    store::{
        CreateError, HttpTool, ListedTool, Listing, McpServer, ToolBackend, ToolKind, ToolRecord,
    },
};
use crate::storage::{Backend, StorageConfig, connect};
use crate::test_postgres::Postgres;

/// Runs `check` on a fresh embedded store and a fresh PostgreSQL one.
async fn on_both<F>(check: F)
where
    F: AsyncFn(&dyn ToolBackend),
{
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
    check(&EmbeddedTools::open(db).unwrap()).await;
    let pg = Postgres::start();
    let config = StorageConfig {
        backend: Backend::Postgres,
        database_url: Some(pg.database("tools").into()),
        pool_size: 4,
    };
    check(&PgTools::new(connect(&config).await.unwrap())).await;
}

pub fn http(account: &str, name: &str, secret: Option<&str>) -> ToolRecord {
    ToolRecord {
        id: format!("tool_{account}_{name}"),
        account: account.into(),
        name: name.into(),
        description: "d".into(),
        timeout_secs: 2.5,
        created_at: 1,
        kind: ToolKind::Http(HttpTool {
            parameters: json!({ "type": "object" }),
            url: "https://api.example.com/".into(),
            method: "POST".into(),
            secret_header: secret.map(|_| "X-Key".into()),
        }),
        secret: secret.map(str::to_string),
    }
}

fn mcp(account: &str, name: &str) -> ToolRecord {
    ToolRecord {
        kind: ToolKind::Mcp(McpServer {
            url: "https://mcp.example.com/mcp".into(),
            listing: None,
        }),
        ..http(account, name, None)
    }
}

fn names(records: &[ToolRecord]) -> Vec<&str> {
    records.iter().map(|r| r.name.as_str()).collect()
}

async fn accounts_apart(s: &dyn ToolBackend) {
    for name in ["weather", "alpha", "zeta_2"] {
        s.create(http("a", name, None), 10).await.unwrap();
    }
    s.create(http("b", "weather", None), 10).await.unwrap();
    assert_eq!(
        names(&s.list("a").await.unwrap()),
        ["alpha", "weather", "zeta_2"]
    );
    assert_eq!(names(&s.list("b").await.unwrap()), ["weather"]);
    assert!(s.list("c").await.unwrap().is_empty());
    assert_eq!(
        s.get("a", "alpha").await.unwrap(),
        Some(http("a", "alpha", None))
    );
    assert!(s.get("b", "alpha").await.unwrap().is_none());
    assert!(
        s.delete("b", "alpha").await.unwrap().is_none(),
        "not b's to delete"
    );
    let deleted = s.delete("a", "weather").await.unwrap().unwrap();
    assert_eq!(deleted.account, "a");
    assert!(s.get("a", "weather").await.unwrap().is_none());
    assert!(s.get("b", "weather").await.unwrap().is_some(), "b's is b's");
    assert!(s.delete("a", "weather").await.unwrap().is_none());
}

async fn names_and_quota(s: &dyn ToolBackend) {
    s.create(http("a", "one", None), 2).await.unwrap();
    let again = s.create(http("a", "one", None), 2).await;
    assert!(matches!(again, Err(CreateError::Exists)), "{again:?}");
    s.create(mcp("a", "two"), 2).await.unwrap();
    let over = s.create(http("a", "three", None), 2).await;
    assert!(
        matches!(over, Err(CreateError::Quota { max: 2 })),
        "{over:?}"
    );
    s.create(http("b", "three", None), 2).await.unwrap();
    s.delete("a", "one").await.unwrap();
    s.create(http("a", "three", None), 2).await.unwrap();
}

async fn listings(s: &dyn ToolBackend) {
    s.create(mcp("a", "docs"), 10).await.unwrap();
    s.create(http("a", "plain", None), 10).await.unwrap();
    let listing = Listing {
        listed_at: 7,
        tools: vec![ListedTool {
            name: "mcp_docs_search".into(),
            remote: "search".into(),
            description: "Search the docs".into(),
            parameters: json!({ "type": "object", "properties": { "q": { "type": "string" } } }),
        }],
        error: None,
    };
    let id = "tool_a_docs";
    let stale = s
        .set_listing("a", "docs", "tool_other", listing.clone())
        .await;
    assert_eq!(
        stale.unwrap(),
        None,
        "another registration's listing is not kept"
    );
    assert_eq!(
        s.set_listing("b", "docs", id, listing.clone())
            .await
            .unwrap(),
        None
    );
    let plain = s
        .set_listing("a", "plain", "tool_a_plain", listing.clone())
        .await;
    assert_eq!(plain.unwrap(), None, "an HTTP tool has no listing");
    let updated = s
        .set_listing("a", "docs", id, listing.clone())
        .await
        .unwrap()
        .unwrap();
    let stored = s.get("a", "docs").await.unwrap().unwrap();
    assert_eq!(updated, stored);
    assert!(
        matches!(stored.kind, ToolKind::Mcp(McpServer { listing: Some(l), .. }) if l == listing)
    );
}

async fn sealing_keys(s: &dyn ToolBackend) {
    assert!(s.sealing_keys().await.unwrap().is_empty());
    s.create(http("a", "one", Some("v1.k1.AAAA")), 10)
        .await
        .unwrap();
    s.create(http("b", "two", Some("v1.k1.BBBB")), 10)
        .await
        .unwrap();
    s.create(http("b", "three", Some("v1.k2.CCCC")), 10)
        .await
        .unwrap();
    s.create(http("b", "four", None), 10).await.unwrap();
    let mut keys = s.sealing_keys().await.unwrap();
    keys.sort();
    assert_eq!(keys, ["k1", "k2"]);
}

#[tokio::test]
async fn an_account_reaches_its_own_tools_only() {
    on_both(accounts_apart).await;
}

#[tokio::test]
async fn names_are_unique_per_account_and_the_plan_bounds_the_count() {
    on_both(names_and_quota).await;
}

#[tokio::test]
async fn a_listing_is_kept_for_its_registration_only() {
    on_both(listings).await;
}

#[tokio::test]
async fn the_keys_that_sealed_secrets_are_known() {
    on_both(sealing_keys).await;
}
