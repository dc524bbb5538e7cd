//! A lost node's agents on a real PostgreSQL: failed once however many nodes reap at once,
//! metered to the node's last heartbeat, and the node's own writes refused afterwards. And
//! offered spawns: taken by one node, with what the run is allowed, or withdrawn.

use std::{sync::Arc, time::Duration};

use sqlx::PgPool;

use super::{
    Cluster, ClusterConfig, offers,
    reaper::{HOST_LOST, reap},
};
use crate::runtime::journal::{
    Bounds, Entry, Fault, Journal, JournalError, JournalStore, PgJournal, Run,
};
use crate::{
    accounts::{PgUsage, UsageLedger},
    clock::now_ms,
    memory::Quota,
    runtime::records::{
        AgentRecord, AgentStore, Allowance, Claim, FIRST_EPOCH, RecordError, Status, insert_agent,
        tests::record,
    },
    storage::{Backend, StorageConfig, connect},
    test_postgres::Postgres,
};

/// A node's pool on `url`.
async fn pool(url: &str) -> PgPool {
    let config = StorageConfig {
        backend: Backend::Postgres,
        database_url: Some(url.into()),
        pool_size: 4,
    };
    connect(&config).await.unwrap()
}

/// Stores a running agent claimed by node-a, started at `started` with its lease until
/// `lease_until`.
async fn running(pool: &PgPool, id: &str, started: u64, lease_until: u64) {
    let mut r = record(id, "acct");
    r.status = Status::Running;
    r.started_at = Some(started);
    held_by_a(pool, r, lease_until, None).await;
}

/// Stores `r` as node-a's, its lease until `lease_until`; offered to every node with
/// `offer`.
async fn held_by_a(pool: &PgPool, r: AgentRecord, lease_until: u64, offer: Option<Allowance>) {
    let claim = Claim {
        node: "node-a",
        lease_until: Some(lease_until),
        offer,
    };
    let mut conn = pool.acquire().await.unwrap();
    insert_agent(&mut conn, r, claim).await.unwrap();
}

/// Reaps as node-b, which has no room to resume an agent: how many it failed.
async fn failed(pool: &PgPool, lease_ms: u64, now: u64) -> usize {
    let reaped = reap(pool, "node-b", lease_ms, now, |_| None::<()>);
    let reaped = reaped.await.unwrap();
    assert!(reaped.taken.is_empty());
    reaped.failed
}

fn stale<T>(result: &Result<T, RecordError>) -> bool {
    matches!(result, Err(RecordError::Stale(_)))
}

#[tokio::test]
async fn a_lost_nodes_agents_fail_once_and_its_writes_are_refused() {
    let pg = Postgres::start();
    let url = pg.database("cluster");
    let (a, b) = (pool(&url).await, pool(&url).await);
    let store = AgentStore::postgres(a.clone(), "node-a").await.unwrap();
    let (now, lease_ms) = (now_ms(), 15_000);
    running(&a, "ag_lost", now - 60_000, now - 1_000).await;
    running(&a, "ag_kept", now - 60_000, now + 60_000).await;

    let (x, y) = tokio::join!(failed(&a, lease_ms, now), failed(&b, lease_ms, now));
    assert_eq!(x + y, 1, "one node fails the lost agent");
    assert_eq!(failed(&b, lease_ms, now).await, 0, "once");

    let lost = store.get("acct", "ag_lost").await.unwrap().unwrap();
    assert_eq!(lost.status, Status::Failed);
    let error = lost.error.unwrap();
    assert_eq!(error.code, HOST_LOST);
    assert!(error.message.contains("node-a"), "{}", error.message);
    // No journal: its run had not begun, so there is nothing to resume it from.
    assert!(error.message.contains("had not begun"), "{}", error.message);
    let (events, _) = store.logs("acct", "ag_lost", 0, 10).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, "terminal");
    assert_eq!(events[0].data.as_ref().unwrap()["error"]["code"], HOST_LOST);
    let kept = store.get("acct", "ag_kept").await.unwrap().unwrap();
    assert_eq!(kept.status, Status::Running, "a live lease is left alone");
    assert!(
        store.alive().await.unwrap().len() == 1,
        "only the kept one is node-a's"
    );

    // Metered up to the last heartbeat: the lease's end less one lease.
    let last_beat = now - 1_000 - lease_ms;
    let month = PgUsage::new(a.clone()).month("acct", last_beat).await;
    assert_eq!(month.unwrap().run_ms, last_beat - (now - 60_000));

    let mine = Some(FIRST_EPOCH);
    assert!(stale(
        &store.update("acct", "ag_lost", mine, |_| true).await
    ));
    let logged = store.append_log("acct", "ag_lost", mine, "thinking", "late".into(), None);
    assert!(stale(&logged.await));
    assert_eq!(
        store.logs("acct", "ag_lost", 0, 10).await.unwrap().0.len(),
        1
    );
    assert!(
        store
            .update("acct", "ag_kept", mine, |_| true)
            .await
            .is_ok()
    );
    let logged = store.append_log("acct", "ag_kept", mine, "thinking", "on".into(), None);
    assert_eq!(logged.await.unwrap(), 1, "a current claim writes");
    let unfenced = store.update("acct", "ag_lost", None, |r| {
        r.name = "renamed".into();
        true
    });
    assert_eq!(unfenced.await.unwrap().unwrap().name, "renamed");
}

/// Stores a spawn node-a offers with `allowance`, its lease until `lease_until`.
async fn offered(pool: &PgPool, id: &str, lease_until: u64, allowance: Allowance) {
    held_by_a(pool, record(id, "acct"), lease_until, Some(allowance)).await;
}

/// Node `node` on `pool`, with the default lease.
fn node(pool: &PgPool, node: &str) -> Cluster {
    Cluster::new(pool.clone(), node.into(), &ClusterConfig::default())
}

#[tokio::test]
async fn an_offer_is_taken_by_one_node_with_its_allowance_or_withdrawn() {
    let pg = Postgres::start();
    let url = pg.database("offers");
    let (a, b) = (pool(&url).await, pool(&url).await);
    let store = AgentStore::postgres(a.clone(), "node-a").await.unwrap();
    let allowance = Allowance {
        memory_quota: Quota {
            memories: 1_234,
            versions_per_key: 7,
        },
        cpu_budget: Duration::from_millis(60_500),
        token_budget: 4_321,
    };
    let now = now_ms();
    offered(&a, "ag_offered", now + 60_000, allowance).await;

    let (nb, nc) = (node(&b, "node-b"), node(&a, "node-c"));
    let (x, y) = tokio::join!(offers::take(&nb), offers::take(&nc));
    let taken: Vec<_> = [x.unwrap(), y.unwrap()].into_iter().flatten().collect();
    assert_eq!(taken.len(), 1, "one node takes an offer");
    let (record, got) = &taken[0];
    assert_eq!(record.agent_id, "ag_offered");
    assert_eq!(*got, allowance, "the claiming node runs it as admitted");
    assert!(offers::take(&nb).await.unwrap().is_none(), "taken once");
    assert!(offers::await_claim(&a, &store, record).await.unwrap());
    assert!(
        store.alive().await.unwrap().is_empty(),
        "no longer node-a's"
    );
    let claimed = store.update("acct", "ag_offered", Some(FIRST_EPOCH), |_| true);
    assert!(claimed.await.is_ok(), "the claim writes under epoch 1");

    offered(&a, "ag_unwanted", now + 60_000, allowance).await;
    let unwanted = store.get("acct", "ag_unwanted").await.unwrap().unwrap();
    assert!(!offers::await_claim(&a, &store, &unwanted).await.unwrap());
    assert_eq!(
        store.get("acct", "ag_unwanted").await.unwrap(),
        None,
        "withdrawn"
    );

    // An offer its node never withdrew (it died) lapses like a lost node's agent.
    offered(&a, "ag_orphan", now - 1_000, allowance).await;
    assert_eq!(failed(&b, 15_000, now).await, 1);
    let orphan = store.get("acct", "ag_orphan").await.unwrap().unwrap();
    assert_eq!(orphan.status, Status::Failed);
    let message = orphan.error.unwrap().message;
    assert!(message.contains("before any node took it"), "{message}");
}

/// One recorded call.
fn entry(step: u64) -> Entry {
    Entry {
        step,
        func: "mind.complete".into(),
        args: step,
        ts: step,
        result: serde_json::json!(step),
    }
}

#[tokio::test]
async fn a_lost_nodes_journaled_agent_is_taken_over_and_the_lost_nodes_journal_writes_refused() {
    let pg = Postgres::start();
    let url = pg.database("takeover");
    let (a, b) = (pool(&url).await, pool(&url).await);
    let store = AgentStore::postgres(a.clone(), "node-a").await.unwrap();
    let journal = PgJournal::new(a.clone());
    let (now, lease_ms) = (now_ms(), 15_000);
    let allowance = Allowance::from_row(10, Some(3), 1_000, Some(500));
    let run_a = |id: &str| Run {
        account: "acct".into(),
        agent_id: id.into(),
        fence: Some(FIRST_EPOCH),
    };
    for (id, lapsed) in [("ag_lost", 1_000), ("ag_long_lost", 2 * lease_ms)] {
        running(&a, id, now - 60_000, now - lapsed).await;
        let run = run_a(id);
        journal.begin(&run, allowance).await.unwrap();
        let appended = journal.append(&run, vec![entry(1), entry(2)], true);
        appended.await.unwrap();
    }

    // Without room: the one lost lately is left for a node with room, the other failed.
    assert_eq!(failed(&b, lease_ms, now).await, 1);
    let long_lost = store.get("acct", "ag_long_lost").await.unwrap().unwrap();
    assert_eq!(long_lost.status, Status::Failed);
    let message = long_lost.error.unwrap().message;
    assert!(message.contains("no node had room"), "{message}");
    let lost = store.get("acct", "ag_lost").await.unwrap().unwrap();
    assert_eq!(lost.status, Status::Running);

    // With room: node-b claims it under the next epoch, once, and its journal is whole.
    let (x, y) = tokio::join!(
        reap(&a, "node-b", lease_ms, now, |_| Some(())),
        reap(&b, "node-b", lease_ms, now, |_| Some(()))
    );
    let taken: Vec<_> = [x.unwrap(), y.unwrap()]
        .into_iter()
        .flat_map(|r| r.taken)
        .collect();
    assert_eq!(taken.len(), 1, "one node takes the lost agent");
    assert_eq!(taken[0].record.agent_id, "ag_lost");
    assert_eq!((taken[0].epoch, taken[0].owner.as_str()), (2, "node-a"));
    let recorded = journal.load("acct", "ag_lost").await.unwrap().unwrap();
    assert_eq!(recorded.allowance, allowance);
    assert_eq!(recorded.entries, [entry(1), entry(2)]);

    // node-a's late writes are refused; node-b's go on from where node-a left off.
    let late = journal
        .append(&run_a("ag_lost"), vec![entry(3)], true)
        .await;
    assert!(matches!(late, Err(JournalError::Stale(_))), "{late:?}");
    journal.end(&run_a("ag_lost")).await.unwrap();
    let run_b = Run {
        fence: Some(2),
        ..run_a("ag_lost")
    };
    journal.append(&run_b, vec![entry(3)], false).await.unwrap();
    let entries = journal
        .load("acct", "ag_lost")
        .await
        .unwrap()
        .unwrap()
        .entries;
    assert_eq!(entries.len(), 3, "node-a's end deleted nothing");
    assert!(stale(
        &store
            .update("acct", "ag_lost", Some(FIRST_EPOCH), |_| true)
            .await
    ));

    // Stopped while no node runs it: it stays stopped, and its journal is swept.
    let stopped = store.update("acct", "ag_lost", None, |r| {
        r.status = Status::Stopped;
        true
    });
    stopped.await.unwrap();
    assert_eq!(PgJournal::sweep(&a).await.unwrap(), 2);
    assert_eq!(journal.load("acct", "ag_lost").await.unwrap(), None);
    assert_eq!(
        reap(&b, "node-b", lease_ms, now, |_| Some(()))
            .await
            .unwrap()
            .taken
            .len(),
        0
    );
}

/// A node's agent writes memory under the node's claim: once another node claims the
/// agent, its puts and deletes are refused in the write's own transaction — a claim made
/// while a write waits is waited for, then refuses it — and the journal's check before a
/// Mind request refuses likewise; the new claim writes.
#[tokio::test]
async fn a_stale_claims_memory_writes_and_mind_requests_are_refused() {
    use crate::memory::{
        Door, MemoryError, MemoryService, PgMemory, Provenance, PutInput, RunFence,
        embed::{EmbedService, HashEmbedder},
    };

    let pg = Postgres::start();
    let a = pool(&pg.database("fenced")).await;
    let now = now_ms();
    running(&a, "ag_fenced", now, now + 60_000).await;
    let backend = PgMemory::open(a.clone(), "hash:lexical-hash:64", 64).await;
    let embed = EmbedService::new(Arc::new(HashEmbedder::new(64)), &Default::default());
    let memory = MemoryService::over(Arc::new(backend.unwrap()), embed, &Default::default());
    let quota = Quota::memories(10);
    fn by(step: u64) -> Provenance {
        Provenance {
            agent_id: Some("ag_fenced".into()),
            step: Some(step),
            ..Provenance::door(Door::AgentTool)
        }
    }
    fn put(key: &str, step: u64) -> PutInput {
        PutInput {
            account: "acct".into(),
            key: key.into(),
            value: format!("the {key} fact"),
            namespace: "default".into(),
            tags: Vec::new(),
            importance: 5.0,
            expires_in_days: None,
            observed_at: None,
            provenance: by(step),
        }
    }
    fn fence(epoch: u64) -> Option<RunFence> {
        Some(RunFence {
            agent_id: "ag_fenced".into(),
            epoch,
        })
    }
    fn refused<T>(result: &Result<T, MemoryError>) -> bool {
        matches!(result, Err(MemoryError::Stale(id)) if id == "ag_fenced")
    }
    let put_fenced = |input, epoch| memory.put_fenced(input, quota, fence(epoch));
    put_fenced(put("kept", 1), FIRST_EPOCH).await.unwrap();

    // Another node's claim, its transaction still open: the write waits for it, then finds
    // the next epoch, and writes nothing.
    let mut claim = a.begin().await.unwrap();
    sqlx::query("UPDATE agents SET epoch = epoch + 1 WHERE agent_id = 'ag_fenced'")
        .execute(&mut *claim)
        .await
        .unwrap();
    let late = tokio::spawn({
        let memory = memory.clone();
        async move {
            memory
                .put_fenced(put("late", 2), quota, fence(FIRST_EPOCH))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !late.is_finished(),
        "the write waits for the claim's commit"
    );
    claim.commit().await.unwrap();
    let late = late.await.unwrap();
    assert!(refused(&late), "{late:?}");
    let gone = memory.get("acct", "default", "late").await;
    assert!(
        matches!(gone, Err(MemoryError::NotFound { .. })),
        "{gone:?}"
    );
    let deleted = (memory.delete_by("acct", "default", "kept", &by(3), fence(FIRST_EPOCH))).await;
    assert!(refused(&deleted), "{deleted:?}");
    memory.get("acct", "default", "kept").await.unwrap();

    // The new claim writes; a write no claim fences (REST's) is not held back.
    put_fenced(put("taken_over", 4), 2).await.unwrap();
    let deleted = (memory.delete_by("acct", "default", "kept", &by(5), fence(2))).await;
    assert!(deleted.is_ok(), "{deleted:?}");
    memory.put(put("unfenced", 6), quota).await.unwrap();

    // What a Mind request checks before it is sent.
    let journal = PgJournal::new(a.clone());
    let run = |epoch: u64| Run {
        account: "acct".into(),
        agent_id: "ag_fenced".into(),
        fence: Some(epoch),
    };
    let refused = journal.holds(&run(FIRST_EPOCH)).await;
    assert!(
        matches!(refused, Err(JournalError::Stale(_))),
        "{refused:?}"
    );
    journal.holds(&run(2)).await.unwrap();
    // The run's journal says so as fencing, not as a storage failure.
    let stale = Journal::new(
        run(FIRST_EPOCH),
        Arc::new(journal),
        Vec::new(),
        Bounds::NONE,
    );
    let fault = stale.holds().await.unwrap_err();
    assert_eq!(fault, Fault::Fenced("ag_fenced".into()));
    assert_eq!(fault.code(), "claim_lost");
}
