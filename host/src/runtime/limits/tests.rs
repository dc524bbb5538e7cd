//! Both keepers admit within the same limits with the same refusals; and on PostgreSQL,
//! spawns at several nodes at once stay within each limit exactly.

use std::sync::Arc;

use super::{Admitted, Asked, LocalLimits, SharedLimits, SpawnLimits};
use crate::{
    accounts::{MonthUsage, PgUsage, Plan, PlanLimits, UsageLedger, UsageStore, Window},
    clock::now_ms,
    runtime::{
        admission::Admission,
        cluster::{Cluster, ClusterConfig},
        records::{AgentRecord, AgentStore, tests::record},
        spawn::{MonthlyBudget, SpawnRefusal},
    },
    storage::{Backend, StorageConfig, connect},
    test_postgres::Postgres,
};

fn limits(concurrent: u32, per_minute: u32, per_hour: u32, hours: f64) -> PlanLimits {
    PlanLimits {
        spawns_per_minute: per_minute,
        spawns_per_hour: per_hour,
        concurrent_agents: concurrent,
        memories: 100,
        agent_hours_per_month: hours,
        component_max_bytes: 1 << 20,
        components: 10,
        cpu_seconds_per_run: 60.0,
        keys: 5,
        tokens_per_run: 1_000,
        tokens_per_month: 1_000_000,
        versions_per_key: 10,
        event_streams: 5,
        mcp_sessions: 5,
        component_uploads_per_hour: 10,
        tools: 10,
        requests_in_flight: 100,
        http_requests_per_run: 10,
        http_bytes_per_run: 1 << 20,
        http_requests_per_month: 100,
        http_bytes_per_month: 10 << 20,
    }
}

fn draft(n: usize, key: &str, created_at: u64) -> AgentRecord {
    AgentRecord {
        key_id: key.into(),
        created_at,
        updated_at: created_at,
        ..record(&format!("ag_{key}_{n}"), "acct")
    }
}

async fn admit(
    gate: &dyn SpawnLimits,
    n: usize,
    key: &str,
    limits: &PlanLimits,
) -> Result<Admitted, SpawnRefusal> {
    let now = now_ms();
    let asked = Asked {
        plan: Plan::Free,
        limits,
        now,
    };
    gate.admit(draft(n, key, now), asked).await
}

fn local() -> (tempfile::TempDir, LocalLimits) {
    let (dir, gate, _) = local_with_ledger();
    (dir, gate)
}

/// A keeper in this process, and the ledger it reads finished months from.
fn local_with_ledger() -> (tempfile::TempDir, LocalLimits, Arc<UsageStore>) {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
    let usage = Arc::new(UsageStore::new(db.clone()).unwrap());
    let records = AgentStore::embedded(db).unwrap();
    let gate = LocalLimits::new(Admission::new(100, 100), usage.clone(), records);
    (dir, gate, usage)
}

/// A node's keeper on `url` with a host cap of `cap`: its own pool, as each node has.
async fn node(url: &str, cap: u32) -> SharedLimits {
    let config = StorageConfig {
        backend: Backend::Postgres,
        database_url: Some(url.into()),
        pool_size: 8,
    };
    let pool = connect(&config).await.unwrap();
    let records = AgentStore::postgres(pool.clone(), "node-a").await.unwrap();
    let cluster = Cluster::new(pool, "node-a".into(), &ClusterConfig::default());
    SharedLimits::new(Arc::new(cluster), Admission::new(cap, cap), records)
}

/// The same spawns on one keeper: concurrency, then the minute window, then the budget.
async fn one_keeper_admits_within_every_limit(gate: &dyn SpawnLimits) {
    let two = limits(2, 3, 10, 1.0);
    let first = admit(gate, 1, "k1", &two).await.unwrap();
    let _second = admit(gate, 2, "k1", &two).await.unwrap();
    assert!(first.record.seq > 0, "stored with a list position");
    match admit(gate, 3, "k1", &two).await.err() {
        Some(SpawnRefusal::ConcurrentLimit { current, max, .. }) => {
            assert_eq!((current, max), (2, 2));
        }
        other => panic!("expected the concurrency limit, got {other:?}"),
    }
    assert_eq!(gate.concurrent("acct").await.unwrap(), 2);
    let many = limits(10, 3, 10, 1.0);
    let _third = admit(gate, 4, "k1", &many).await.unwrap();
    match admit(gate, 5, "k1", &many).await.err() {
        Some(SpawnRefusal::RateLimited {
            window,
            retry_after_secs,
            ..
        }) => {
            assert_eq!(window, Window::Minute);
            assert!((55..=60).contains(&retry_after_secs), "{retry_after_secs}");
        }
        other => panic!("expected the minute window, got {other:?}"),
    }
    assert_eq!(gate.spawns_in_windows("acct", "k1").await.unwrap(), (3, 3));
    assert_eq!(gate.spawns_in_windows("acct", "k2").await.unwrap(), (0, 0));
    let _other_key = admit(gate, 6, "k2", &many).await.unwrap();
    let spent = limits(10, 10, 10, 0.0);
    match admit(gate, 7, "k3", &spent).await.err() {
        Some(SpawnRefusal::MonthlyQuota { limit_hours, .. }) => assert_eq!(limit_hours, 0.0),
        other => panic!("expected the monthly budget, got {other:?}"),
    }
}

#[tokio::test]
async fn both_keepers_admit_within_every_limit() {
    let (_dir, gate) = local();
    one_keeper_admits_within_every_limit(&gate).await;
    let pg = Postgres::start();
    let gate = node(&pg.database("limits"), 100).await;
    one_keeper_admits_within_every_limit(&gate).await;
}

/// Once the ledger has the plan's tokens for the month, the next spawn is refused naming
/// the token budget, with both monthly figures.
async fn spent_tokens_refuse_the_next_spawn(gate: &dyn SpawnLimits, ledger: &dyn UsageLedger) {
    let plan = limits(10, 10, 10, 10.0);
    let _running = admit(gate, 1, "t1", &plan).await.unwrap();
    let spent = MonthUsage {
        input_tokens: plan.tokens_per_month - 400,
        output_tokens: 399,
        ..MonthUsage::default()
    };
    ledger.add("acct", now_ms(), spent).await.unwrap();
    let _still_room = admit(gate, 2, "t1", &plan).await.unwrap();
    let last = MonthUsage {
        output_tokens: 1,
        ..MonthUsage::default()
    };
    ledger.add("acct", now_ms(), last).await.unwrap();
    match admit(gate, 3, "t1", &plan).await.err() {
        Some(SpawnRefusal::MonthlyQuota {
            budget: MonthlyBudget::Tokens,
            used_tokens,
            limit_tokens,
            used_hours,
            ..
        }) => {
            assert_eq!((used_tokens, limit_tokens), (1_000_000, 1_000_000));
            assert!(used_hours < 10.0);
        }
        other => panic!("expected the monthly token budget, got {other:?}"),
    }
}

#[tokio::test]
async fn both_keepers_refuse_a_spawn_once_the_months_tokens_are_spent() {
    let (_dir, gate, ledger) = local_with_ledger();
    spent_tokens_refuse_the_next_spawn(&gate, &*ledger).await;
    let pg = Postgres::start();
    let url = pg.database("tokens");
    let gate = node(&url, 100).await;
    let config = StorageConfig {
        backend: Backend::Postgres,
        database_url: Some(url.into()),
        pool_size: 2,
    };
    let ledger = PgUsage::new(connect(&config).await.unwrap());
    spent_tokens_refuse_the_next_spawn(&gate, &ledger).await;
}

#[tokio::test]
async fn concurrent_spawns_at_three_nodes_stay_within_the_limits_exactly() {
    let pg = Postgres::start();
    let url = pg.database("nodes");
    let nodes = Arc::new([
        node(&url, 100).await,
        node(&url, 100).await,
        node(&url, 100).await,
    ]);
    // 30 spawns at once, 10 per node: 5 may run at once.
    let racing = |limits: PlanLimits, key: &'static str| {
        let (nodes, limits) = (nodes.clone(), Arc::new(limits));
        futures_util::future::join_all((0..30).map(move |n| {
            let (nodes, limits) = (nodes.clone(), limits.clone());
            tokio::spawn(async move { admit(&nodes[n % 3], n, key, &limits).await })
        }))
    };
    let outcomes = racing(limits(5, 100, 100, 10.0), "k1").await;
    let admitted: Vec<_> = outcomes
        .into_iter()
        .filter_map(|o| o.unwrap().ok())
        .collect();
    assert_eq!(admitted.len(), 5, "the concurrency cap, exactly");
    assert_eq!(nodes[1].concurrent("acct").await.unwrap(), 5);
    // Of the next 30, at most 7 per minute per key.
    let outcomes = racing(limits(100, 7, 100, 10.0), "k2").await;
    let (mut admitted, mut rated) = (0, 0);
    for outcome in outcomes {
        match outcome.unwrap() {
            Ok(_) => admitted += 1,
            Err(SpawnRefusal::RateLimited {
                window: Window::Minute,
                ..
            }) => rated += 1,
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    assert_eq!((admitted, rated), (7, 23), "the minute window, exactly");
    assert_eq!(
        nodes[2].spawns_in_windows("acct", "k2").await.unwrap(),
        (7, 7)
    );
}

#[tokio::test]
async fn the_hour_window_budget_and_host_cap_count_across_nodes() {
    let pg = Postgres::start();
    let url = pg.database("windows");
    let (a, b) = (node(&url, 1).await, node(&url, 100).await);
    let hourly = limits(100, 100, 2, 10.0);
    // Two spawns 30 minutes ago, through the tables as node a made them then.
    let half_hour_ago = now_ms() - 30 * 60_000;
    let asked = Asked {
        plan: Plan::Free,
        limits: &hourly,
        now: half_hour_ago,
    };
    for n in 0..2 {
        let Admitted { place, .. } = b.admit(draft(n, "k", half_hour_ago), asked).await.unwrap();
        drop(place);
    }
    match admit(&a, 2, "k", &hourly).await.err() {
        Some(SpawnRefusal::RateLimited {
            window,
            retry_after_secs,
            ..
        }) => {
            assert_eq!(window, Window::Hour);
            assert!(
                (1795..=1800).contains(&retry_after_secs),
                "{retry_after_secs}"
            );
        }
        other => panic!("expected the hour window, got {other:?}"),
    }
    // Two agents alive for 30 minutes: an hour of this month's budget.
    let used = a.month_run_ms("acct", now_ms()).await.unwrap();
    assert!((3_600_000..3_660_000).contains(&used), "{used}");
    match admit(&a, 3, "k2", &limits(100, 100, 100, 1.0)).await.err() {
        Some(SpawnRefusal::MonthlyQuota { used_hours, .. }) => assert!(used_hours >= 1.0),
        other => panic!("expected the monthly budget, got {other:?}"),
    }
    // Node a's own cap is 1, and no node takes its offers here: its second live agent
    // waits for the first's slot.
    let roomy = limits(100, 100, 100, 10.0);
    let Admitted { place, .. } = admit(&a, 4, "k3", &roomy).await.unwrap();
    assert!(matches!(
        admit(&a, 5, "k3", &roomy).await.err(),
        Some(SpawnRefusal::AtCapacity { cap: 1 })
    ));
    admit(&b, 6, "k3", &roomy).await.expect("node b has room");
    drop(place);
    admit(&a, 7, "k3", &roomy)
        .await
        .expect("the slot came back");
}
