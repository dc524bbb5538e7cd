//! Both backends through [`AgentStore`]: the same operations give the same outcomes; and
//! on PostgreSQL what only several nodes show — one node's changes wake another's
//! watchers, and log numbering holds under appends from several nodes at once.

use std::{sync::Arc, time::Duration};

use super::*;
use crate::storage::{Backend, StorageConfig, connect};
use crate::test_postgres::Postgres;

fn embedded() -> (tempfile::TempDir, AgentStore) {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
    (dir, AgentStore::embedded(db).unwrap())
}

/// A node's store on `url`: its own pool and listener, as each node has.
async fn node(url: &str) -> AgentStore {
    let config = StorageConfig {
        backend: Backend::Postgres,
        database_url: Some(url.into()),
        pool_size: 4,
    };
    AgentStore::postgres(connect(&config).await.unwrap(), "node-a")
        .await
        .unwrap()
}

/// Runs `check` on an embedded store, then on a PostgreSQL node's.
async fn on_both(check: impl AsyncFn(&AgentStore)) {
    let (_d, s) = embedded();
    check(&s).await;
    let pg = Postgres::start();
    check(&node(&pg.database("agents")).await).await;
}

/// A new agent's record (also the cluster's tests').
pub(in crate::runtime) fn record(id: &str, account: &str) -> AgentRecord {
    AgentRecord {
        agent_id: id.into(),
        account: account.into(),
        key_id: "key_1".into(),
        name: "n".into(),
        status: Status::Spawning,
        task: "t".into(),
        created_at: 1,
        updated_at: 1,
        final_result: None,
        progress: vec![],
        error: None,
        model: "m".into(),
        started_at: None,
        ended_at: None,
        usage: Usage::default(),
        memory_mode: MemoryMode::default(),
        agent: None,
        seq: 0,
        steps: 0,
        tools: None,
    }
}

fn ids(page: &[AgentRecord]) -> Vec<&str> {
    page.iter().map(|r| r.agent_id.as_str()).collect()
}

async fn create_list_get_scoped(s: &AgentStore) {
    for i in 0..5 {
        s.create(record(&format!("ag_{i}"), "a")).await.unwrap();
    }
    let b = s.create(record("ag_b", "b")).await.unwrap();
    let (page, next) = s.list("a", None, 2).await.unwrap();
    assert_eq!(ids(&page), ["ag_4", "ag_3"]);
    assert!(page[0].seq > page[1].seq, "newest has the highest position");
    let (page, next) = s.list("a", next, 2).await.unwrap();
    assert_eq!(ids(&page), ["ag_2", "ag_1"]);
    let (page, next) = s.list("a", next, 2).await.unwrap();
    assert_eq!((ids(&page), next), (vec!["ag_0"], None));
    let (page, next) = s.list("a", None, 5).await.unwrap();
    assert_eq!((page.len(), next), (5, None), "an exact page has no next");
    assert!(s.get("a", "ag_b").await.unwrap().is_none());
    assert_eq!(s.get("b", "ag_b").await.unwrap(), Some(b));
    assert!(s.list("c", None, 10).await.unwrap().0.is_empty());
}

async fn updates_and_alive_set(s: &AgentStore) {
    s.create(record("ag_1", "a")).await.unwrap();
    s.create(record("ag_2", "a")).await.unwrap();
    s.create(record("ag_3", "b")).await.unwrap();
    s.update("a", "ag_1", None, |r| {
        r.status = Status::Running;
        true
    })
    .await
    .unwrap();
    let done = s
        .update("a", "ag_1", None, |r| {
            r.status = Status::Completed;
            r.final_result = Some("ok".into());
            true
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.status, Status::Completed);
    assert!(done.updated_at > 1, "a change stamps updated_at");
    assert_eq!(s.get("a", "ag_1").await.unwrap(), Some(done));
    let mut alive = s.alive().await.unwrap();
    alive.sort();
    assert_eq!(
        alive,
        [("a".into(), "ag_2".into()), ("b".into(), "ag_3".into())]
    );
    let unchanged = s
        .update("a", "ag_1", None, |_| false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(unchanged.final_result.as_deref(), Some("ok"));
    assert!(
        s.update("a", "ag_none", None, |_| true)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.update("b", "ag_2", None, |_| true)
            .await
            .unwrap()
            .is_none(),
        "another account's agent is not found"
    );
}

async fn progress_is_trimmed_and_logs_page(s: &AgentStore) {
    s.create(record("ag_1", "a")).await.unwrap();
    s.update("a", "ag_1", None, |r| {
        r.progress = (0..MAX_PROGRESS + 5)
            .map(|i| Progress {
                ts: i as u64,
                kind: "info".into(),
                message: i.to_string(),
                step: None,
            })
            .collect();
        true
    })
    .await
    .unwrap();
    let r = s.get("a", "ag_1").await.unwrap().unwrap();
    assert_eq!(r.progress.len(), MAX_PROGRESS);
    assert_eq!(r.progress[0].ts, 5);
    for i in 0..5 {
        let data = (i == 4).then(|| serde_json::json!({ "n": i }));
        let seq = s
            .append_log("a", "ag_1", None, "thinking", format!("m{i}"), data)
            .await
            .unwrap();
        assert_eq!(seq, i + 1);
    }
    let (page, more) = s.logs("a", "ag_1", 0, 3).await.unwrap();
    assert_eq!((page.len(), more, page[2].seq), (3, true, 3));
    assert_eq!(page[1].message, "m1");
    let (page, more) = s.logs("a", "ag_1", 3, 3).await.unwrap();
    assert_eq!((page.len(), more), (2, false));
    assert_eq!(page[1].data, Some(serde_json::json!({ "n": 4 })));
    assert!(s.logs("a", "ag_2", 0, 3).await.unwrap().0.is_empty());
    assert!(
        s.logs("b", "ag_1", 0, 3).await.unwrap().0.is_empty(),
        "another account's agent has no logs"
    );
    assert!(
        s.append_log("b", "ag_1", None, "thinking", "x".into(), None)
            .await
            .is_err(),
        "nothing is logged for another account's agent"
    );
}

async fn a_guest_log_event_made_again_is_stored_once(s: &AgentStore) {
    s.create(record("ag_1", "a")).await.unwrap();
    let event = |step, message: &str| LogEvent {
        seq: 0,
        ts: 1,
        kind: "thinking".into(),
        message: message.into(),
        data: None,
        step,
    };
    let append = |e| s.append_log_event("a", "ag_1", None, e);
    assert_eq!(append(event(Some(4), "made")).await.unwrap(), 1);
    assert_eq!(
        append(event(Some(4), "made")).await.unwrap(),
        1,
        "the step's event is the last one: not again"
    );
    assert_eq!(append(event(None, "host")).await.unwrap(), 2);
    assert_eq!(
        append(event(None, "host")).await.unwrap(),
        3,
        "no step: always"
    );
    assert_eq!(
        append(event(Some(4), "made")).await.unwrap(),
        4,
        "only the last event is compared"
    );
    assert_eq!(append(event(Some(9), "next")).await.unwrap(), 5);
    let (page, _) = s.logs("a", "ag_1", 0, 10).await.unwrap();
    let seqs: Vec<u64> = page.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
}

/// A logged update writes the record and its event together, numbered after the log's
/// events; an update that changes nothing logs nothing.
async fn a_logged_update_writes_its_event_with_it(s: &AgentStore) {
    s.create(record("ag_1", "a")).await.unwrap();
    s.append_log("a", "ag_1", None, "thinking", "first".into(), None)
        .await
        .unwrap();
    let end = |r: &AgentRecord| LogEvent::new("terminal", r.status.as_str().into(), None);
    let changed = s
        .update_logged(
            "a",
            "ag_1",
            None,
            |r| {
                r.status = Status::Completed;
                true
            },
            end,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(changed.status, Status::Completed);
    let unchanged = s.update_logged("a", "ag_1", None, |_| false, end).await;
    assert_eq!(unchanged.unwrap().unwrap().status, Status::Completed);
    let (page, _) = s.logs("a", "ag_1", 0, 10).await.unwrap();
    let events: Vec<(u64, &str, &str)> = page
        .iter()
        .map(|e| (e.seq, e.kind.as_str(), e.message.as_str()))
        .collect();
    assert_eq!(
        events,
        [(1, "thinking", "first"), (2, "terminal", "completed")]
    );
}

#[tokio::test]
async fn a_logged_update_writes_its_event_in_the_same_transaction() {
    on_both(a_logged_update_writes_its_event_with_it).await;
}

#[tokio::test]
async fn a_guest_log_event_made_again_after_a_crash_is_stored_once() {
    on_both(a_guest_log_event_made_again_is_stored_once).await;
}

#[tokio::test]
async fn create_list_get_are_scoped_by_account() {
    on_both(create_list_get_scoped).await;
}

#[tokio::test]
async fn updates_keep_the_alive_set() {
    on_both(updates_and_alive_set).await;
}

#[tokio::test]
async fn progress_is_trimmed_and_logs_are_numbered_and_paged() {
    on_both(progress_is_trimmed_and_logs_page).await;
}

#[tokio::test]
async fn a_change_on_one_node_wakes_watchers_on_another() {
    let pg = Postgres::start();
    let url = pg.database("watch");
    let (a, b) = (node(&url).await, node(&url).await);
    a.create(record("ag_1", "acct")).await.unwrap();
    let mut watch = b.watch("ag_1");
    a.append_log("acct", "ag_1", None, "thinking", "hello".into(), None)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), watch.changed())
        .await
        .expect("node b's watcher woke on node a's log event");
    let (events, _) = b.logs("acct", "ag_1", 0, 10).await.unwrap();
    assert_eq!(events[0].message, "hello");
    a.update("acct", "ag_1", None, |r| {
        r.status = Status::Running;
        true
    })
    .await
    .unwrap();
    tokio::time::timeout(Duration::from_secs(10), watch.changed())
        .await
        .expect("node b's watcher woke on node a's status change");
    let seen = b.get("acct", "ag_1").await.unwrap().unwrap();
    assert_eq!(seen.status, Status::Running);
}

#[tokio::test]
async fn appends_from_several_nodes_are_numbered_without_gaps() {
    let pg = Postgres::start();
    let url = pg.database("appends");
    let nodes = [node(&url).await, node(&url).await, node(&url).await];
    nodes[0].create(record("ag_1", "acct")).await.unwrap();
    let appends = (0..60).map(|i| {
        let store = nodes[i % 3].clone();
        tokio::spawn(async move {
            store
                .append_log("acct", "ag_1", None, "thinking", format!("m{i}"), None)
                .await
                .unwrap()
        })
    });
    let mut seqs = futures_util::future::join_all(appends)
        .await
        .into_iter()
        .map(|joined| joined.unwrap())
        .collect::<Vec<_>>();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=60).collect::<Vec<u64>>());
    let (events, more) = nodes[2].logs("acct", "ag_1", 0, 100).await.unwrap();
    assert_eq!((events.len(), more), (60, false));
    assert!(events.iter().zip(1..).all(|(e, n)| e.seq == n));
}
