//! The postgres backend on a real PostgreSQL, checked against the embedded backend: the
//! same operations give the same outcomes and the same scores; and what only several
//! nodes can show — one node's writes found by another, one quota shared by all.

use std::{collections::HashMap, sync::Arc};

use sqlx::{AssertSqlSafe, Row};

use super::{
    PgMemory, Txn,
    group::{self, Pending},
};
use crate::clock::now_ms;
use crate::memory::service::tests::{found_at, instant, travel_through_versions};
use crate::memory::{
    Deleted, Door, ListQuery, Memory, MemoryBackend, MemoryError, MemoryService, Mode, Provenance,
    PutInput, Quota, SearchQuery, Source, TimeFilter,
    backend::{CandidateQuery, Merge},
    embed::{EmbedService, HashEmbedder},
    transfer::ImportItem,
};
use crate::storage::{Backend, StorageConfig, connect};
use crate::test_postgres::Postgres;

const DIMS: usize = 64;
const IDENTITY: &str = "hash:lexical-hash:64";

fn embed() -> EmbedService {
    EmbedService::new(Arc::new(HashEmbedder::new(DIMS)), &Default::default())
}

fn embedded(dir: &tempfile::TempDir) -> MemoryService {
    let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
    MemoryService::open(db, &dir.path().join("index"), embed(), &Default::default()).unwrap()
}

/// A node's backend on `url`: its own pool, as each node has.
async fn node(url: &str) -> PgMemory {
    let config = StorageConfig {
        backend: Backend::Postgres,
        database_url: Some(url.into()),
        pool_size: 4,
    };
    let pool = connect(&config).await.unwrap();
    PgMemory::open(pool, IDENTITY, DIMS).await.unwrap()
}

fn service(backend: PgMemory) -> MemoryService {
    MemoryService::over(Arc::new(backend), embed(), &Default::default())
}

fn input(account: &str, namespace: &str, key: &str, value: &str) -> PutInput {
    PutInput {
        account: account.into(),
        key: key.into(),
        value: value.into(),
        namespace: namespace.into(),
        tags: vec![format!("t{}", key.len() % 2)],
        importance: 5.0,
        expires_in_days: None,
        observed_at: None,
        provenance: Provenance::door(Door::Rest),
    }
}

fn query(text: &str, mode: Mode) -> SearchQuery {
    SearchQuery {
        query: text.into(),
        namespace: None,
        tags: Vec::new(),
        limit: 50,
        mode,
        min_score: 0.0,
        rerank: false,
        time: Default::default(),
    }
}

/// A script of every kind of operation; what each did, without the ids and instants that
/// differ between two stores by nature.
async fn transcript(s: &MemoryService) -> Vec<String> {
    let mut out = Vec::new();
    let mut say = |line: String| out.push(line);
    for (ns, key, value) in [
        ("default", "pet", "a cat named Tom"),
        ("default", "pet", "a dog named Rex"),
        ("default", "pet", "a dog named Rex"),
        ("work", "desk", "the third floor"),
        ("work", "lunch", "noodles on fridays"),
        ("default", "car", "a blue bicycle"),
    ] {
        let put = s
            .put(input("acme", ns, key, value), Quota::memories(5))
            .await
            .unwrap();
        say(format!(
            "put {key}: v{} created={} previous={}",
            put.memory.version,
            put.created,
            put.memory.previous.is_some()
        ));
    }
    let refused = s
        .put(input("acme", "x", "six", "over"), Quota::memories(4))
        .await;
    say(format!("quota: {}", refused.unwrap_err()));
    let got = s.get("acme", "default", "pet").await.unwrap();
    let got = s.get("acme", "default", got.key.as_str()).await.unwrap();
    say(format!(
        "get pet: {} accesses={}",
        got.value, got.access_count
    ));
    let missing = s.get("acme", "default", "nothing").await.unwrap_err();
    say(format!("get missing: {missing}"));
    let history = s
        .history("acme", "default", "pet", None, usize::MAX)
        .await
        .unwrap()
        .memories;
    say(format!(
        "history: {:?}",
        history
            .iter()
            .map(|m| (m.version, m.value.as_str(), m.is_latest))
            .collect::<Vec<_>>()
    ));
    let mut before = None;
    loop {
        let page = s
            .list(
                "acme",
                ListQuery {
                    limit: 2,
                    before,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let keys: Vec<&str> = page.memories.iter().map(|m| m.key.as_str()).collect();
        say(format!(
            "page: {keys:?} more={}",
            page.next_before.is_some()
        ));
        match page.next_before {
            Some(next) => before = Some(next),
            None => break,
        }
    }
    let filtered = s
        .list(
            "acme",
            ListQuery {
                namespace: Some("work".into()),
                tags: vec!["t1".into()],
                limit: 10,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    say(format!(
        "work t1: {:?}",
        filtered.memories.iter().map(|m| &m.key).collect::<Vec<_>>()
    ));
    say(format!(
        "namespaces: {:?}",
        s.namespaces("acme").await.unwrap()
    ));
    match s.delete("acme", "work", "desk", false).await.unwrap() {
        Deleted::Soft(m) => say(format!(
            "soft: {} deleted={}",
            m.key,
            m.deleted_at.is_some()
        )),
        Deleted::Hard(_) => unreachable!(),
    }
    let again = s.delete("acme", "work", "desk", false).await.unwrap_err();
    say(format!("soft again: {again}"));
    say(format!(
        "hard pet: {:?}",
        s.delete("acme", "default", "pet", true).await.unwrap()
    ));
    say(format!(
        "history after hard: {}",
        s.history("acme", "default", "pet", None, usize::MAX)
            .await
            .unwrap()
            .memories
            .len()
    ));
    let items = ["one", "two", "bad key!", "three", "four"]
        .into_iter()
        .enumerate()
        .map(|(index, key)| ImportItem {
            index,
            key: Some(key.into()),
            input: Ok(input("acme", "imported", key, &format!("{key} value"))),
        })
        .collect();
    let report = s.import("acme", items, Quota::memories(5)).await.unwrap();
    say(format!(
        "import: imported={} failed={} halted={:?} errors={:?}",
        report.imported,
        report.failed,
        report.halted,
        report
            .errors
            .iter()
            .map(|e| (e.index, &e.rejected.code))
            .collect::<Vec<_>>()
    ));
    s.put(
        input("acme", "dup", "first", "same words here"),
        Quota::memories(10),
    )
    .await
    .unwrap();
    s.put(
        input("acme", "dup", "second", "same words here"),
        Quota::memories(10),
    )
    .await
    .unwrap();
    let dedupe = s.dedupe("acme", Some("dup"), 0.9, false).await.unwrap();
    say(format!(
        "dedupe: scanned={} removed={} pairs={:?}",
        dedupe.scanned,
        dedupe.removed,
        dedupe.pairs.len()
    ));
    let exported: Vec<String> = s
        .export("acme")
        .await
        .unwrap()
        .into_iter()
        .map(|m| format!("{}/{}", m.namespace, m.key))
        .collect();
    say(format!("export: {exported:?}"));
    say(format!("counts: {:?}", s.live_counts().await.unwrap()));
    out
}

/// What `script` says of each backend: the embedded one (in a temporary dir), then
/// PostgreSQL (its database `name`). On PostgreSQL it runs twice: as configured, where
/// these small accounts are scanned exactly, and on a node that gives every account a graph
/// from its first memory and brings it up to date at every search, in the background while
/// the script goes on — which must say the same.
async fn on_both(
    name: &str,
    script: impl AsyncFn(&MemoryService) -> Vec<String>,
) -> (Vec<String>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let embedded = script(&embedded(&dir)).await;
    let pg = Postgres::start();
    let postgres = script(&service(node(&pg.database(name)).await)).await;
    let graphs = node(&pg.database(&format!("{name}_graphs"))).await;
    let graphed = script(&service(graphs.graph_past(0, 0))).await;
    assert_eq!(graphed, postgres, "the same script on accounts with graphs");
    (embedded, postgres)
}

#[tokio::test]
async fn every_operation_does_on_postgres_what_it_does_embedded() {
    let (expected, got) = on_both("memory", transcript).await;
    assert_eq!(got, expected);
}

#[tokio::test]
async fn scores_and_breakdowns_match_the_embedded_backend() {
    let texts = [
        "the cat sat on the mat",
        "a dog chased the cat around the garden",
        "coffee with oat milk every morning",
        "the garden needs water in summer",
        "running shoes for the marathon",
        "she runs every morning before coffee",
        "a quiet cat sleeping in the sun",
        "the marathon starts at nine",
    ];
    let dir = tempfile::tempdir().unwrap();
    let pg_server = Postgres::start();
    let backends = [
        embedded(&dir),
        service(node(&pg_server.database("scores")).await),
    ];
    for s in &backends {
        for (i, text) in texts.iter().enumerate() {
            s.put(
                input("acme", "default", &format!("note{i}"), text),
                Quota::memories(100),
            )
            .await
            .unwrap();
            // Another account's documents must move none of acme's scores.
            s.put(
                input("globex", "default", &format!("cat{i}"), "cat cat cat"),
                Quota::memories(100),
            )
            .await
            .unwrap();
        }
    }
    for text in [
        "cat",
        "running coffee",
        "the garden",
        "marathon morning cat",
    ] {
        for mode in [Mode::Keyword, Mode::Hybrid] {
            let mut found = Vec::new();
            for s in &backends {
                let hits = s.search("acme", query(text, mode)).await.unwrap();
                let by_key: HashMap<String, (f64, f64)> = hits
                    .into_iter()
                    .map(|h| (h.memory.key, (h.score, h.breakdown.keyword)))
                    .collect();
                found.push(by_key);
            }
            let (embedded, postgres) = (&found[0], &found[1]);
            assert!(!embedded.is_empty());
            let mut keys: Vec<_> = embedded.keys().collect();
            keys.sort();
            let mut pg_keys: Vec<_> = postgres.keys().collect();
            pg_keys.sort();
            assert_eq!(keys, pg_keys, "{text:?} {mode:?}");
            for key in keys {
                let (a, b) = (embedded[key], postgres[key]);
                assert!(
                    (a.0 - b.0).abs() < 1e-4 && (a.1 - b.1).abs() < 1e-4,
                    "{text:?} {mode:?} {key}: embedded {a:?}, postgres {b:?}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_write_on_one_node_is_read_on_another_and_the_quota_holds_across_nodes() {
    let pg = Postgres::start();
    let url = pg.database("nodes");
    let (a, b) = (service(node(&url).await), service(node(&url).await));
    a.put(
        input("acme", "default", "plan", "ship the postgres backend"),
        Quota::memories(100),
    )
    .await
    .unwrap();
    let hits = b
        .search("acme", query("postgres backend", Mode::Hybrid))
        .await
        .unwrap();
    assert_eq!(hits[0].memory.key, "plan");
    assert_eq!(
        b.get("acme", "default", "plan").await.unwrap().access_count,
        1
    );

    // Twenty puts at once through both nodes into a quota of 8 (one already used).
    let puts = (0..20).map(|i| {
        let node = if i % 2 == 0 { a.clone() } else { b.clone() };
        tokio::spawn(async move {
            node.put(
                input("acme", "n", &format!("k{i}"), &format!("v{i}")),
                Quota::memories(8),
            )
            .await
        })
    });
    let mut made = 0;
    for put in puts {
        match put.await.unwrap() {
            Ok(_) => made += 1,
            Err(MemoryError::QuotaExceeded { limit: 8, used: 8 }) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(made, 7);
    assert_eq!(a.live_counts().await.unwrap(), [("acme".into(), 8)]);
    assert_eq!(b.export("acme").await.unwrap().len(), 8);
}

/// The graph of account `account` in `db` and how many rows it has, or "none".
fn graph_rows(pg: &Postgres, db: &str, account: &str) -> String {
    let graph = pg.psql(
        db,
        &format!("SELECT graph FROM memory_accounts WHERE account_id = '{account}'"),
    );
    match graph.as_str() {
        "" => "none".into(),
        graph => pg.psql(db, &format!("SELECT count(*) FROM memory_graph_{graph}")),
    }
}

#[tokio::test]
async fn a_graph_finds_what_an_exact_scan_finds() {
    let pg = Postgres::start();
    let url = pg.database("vectors");
    let exact = service(node(&url).await);
    let graphed = node(&url).await.graph_past(0, 1_000);
    for account in ["acme", "globex"] {
        for chunk in 0..10 {
            let items = (0..100)
                .map(|i| {
                    let n = chunk * 100 + i;
                    let text = format!("note {n} about topic {} and {}", n % 37, n % 11);
                    ImportItem {
                        index: i,
                        key: None,
                        input: Ok(input(account, "default", &format!("k{n}"), &text)),
                    }
                })
                .collect();
            exact
                .import(account, items, Quota::memories(10_000))
                .await
                .unwrap();
        }
    }
    // Only an account given a graph has one, holding its rows alone.
    graphed.index_now("acme").await.unwrap();
    assert_eq!(graph_rows(&pg, "vectors", "acme"), "1000");
    assert_eq!(graph_rows(&pg, "vectors", "globex"), "none");
    // Rows written since are its tail, searched beside the graph.
    for n in 0..5 {
        let text = format!("a later note {n} on topic {n} and {n}");
        exact
            .put(
                input("acme", "default", &format!("late{n}"), &text),
                Quota::memories(10_000),
            )
            .await
            .unwrap();
    }
    assert_eq!(graph_rows(&pg, "vectors", "acme"), "1000");
    let graphed = service(graphed);
    let (mut found, mut wanted) = (0, 0);
    for topic in 0..20 {
        let q = SearchQuery {
            limit: 10,
            ..query(&format!("topic {topic} and {}", topic % 11), Mode::Semantic)
        };
        let keys = |hits: Vec<crate::memory::SearchHit>| -> Vec<String> {
            hits.into_iter().map(|h| h.memory.key).collect()
        };
        let truth = keys(exact.search("acme", q.clone()).await.unwrap());
        let got = keys(graphed.search("acme", q).await.unwrap());
        assert_eq!(got.len(), 10);
        wanted += truth.len();
        found += got.iter().filter(|k| truth.contains(k)).count();
    }
    let recall = found as f64 / wanted as f64;
    assert!(recall >= 0.95, "recall@10 of the graph path: {recall}");
    let late = SearchQuery {
        limit: 1,
        ..query("a later note 3 on topic 3 and 3", Mode::Semantic)
    };
    let hit = graphed.search("acme", late).await.unwrap();
    assert_eq!(hit[0].memory.key, "late3", "the tail is searched");

    // And the graph path walks the graph's HNSW index (counted for the transaction the
    // search ran in), the exact one no index of a graph.
    let backend = node(&url).await;
    let graph: i64 = pg
        .psql(
            "vectors",
            "SELECT graph FROM memory_accounts WHERE account_id = 'acme'",
        )
        .parse()
        .unwrap();
    let hnsw_scans = |account: &'static str| {
        let pool = backend.pool.clone();
        async move {
            let mut tx = pool.begin().await.unwrap();
            let found = sqlx::query(super::search::NEAREST)
                .bind(account)
                .bind(vec![0.125f32; DIMS])
                .bind(0i64)
                .bind(None::<String>)
                .bind(Vec::<String>::new())
                .bind(10i64)
                .bind(None::<i64>)
                .bind(Vec::<i64>::new())
                .fetch_all(&mut *tx)
                .await
                .unwrap();
            assert_eq!(found.len(), 10);
            sqlx::query_as::<_, (String, i64)>(
                "SELECT relname::text, pg_stat_get_xact_numscans(oid) FROM pg_class \
                 WHERE relkind = 'i' AND relname LIKE '%hnsw' \
                 AND pg_stat_get_xact_numscans(oid) > 0",
            )
            .fetch_all(&mut *tx)
            .await
            .unwrap()
        }
    };
    let hnsw = format!("memory_graph_{graph}_hnsw");
    assert_eq!(hnsw_scans("acme").await, [(hnsw, 1)]);
    assert_eq!(hnsw_scans("globex").await, []);
}

/// The plan of `sql` with the parameters `bind` gives, sequential scans forbidden: tables
/// this small are read whole whatever the query, and forbidding that shows its seeks.
async fn plan_without_seqscans(
    backend: &PgMemory,
    sql: &str,
    bind: impl for<'q> FnOnce(PgQuery<'q>) -> PgQuery<'q>,
) -> String {
    let mut tx = backend.pool.begin().await.unwrap();
    sqlx::query("SET LOCAL enable_seqscan = off")
        .execute(&mut *tx)
        .await
        .unwrap();
    let plan: Vec<String> = bind(sqlx::query(AssertSqlSafe(format!("EXPLAIN {sql}"))))
        .fetch_all(&mut *tx)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    plan.join("\n")
}

/// A query with its parameters still to bind.
type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// The keyword query seeks its terms' statistics by their whole key (account, field, term).
/// Without the field a btree cannot seek the term and reads every statistics row of the
/// account — one per distinct key term, about one per memory — which was most of a keyword
/// search's time in an account of 100,000 (BENCHMARKS.md).
#[tokio::test]
async fn keyword_search_seeks_its_terms_statistics() {
    let pg = Postgres::start();
    let backend = node(&pg.database("seek")).await;
    let plan = plan_without_seqscans(&backend, super::search::BM25, |q| {
        q.bind("acme")
            .bind(vec!["cat".to_string()])
            .bind(0i64)
            .bind(None::<String>)
            .bind(Vec::<String>::new())
            .bind(10i64)
            .bind(None::<i64>)
            .bind(None::<i64>)
    })
    .await;
    let scan = plan.split("on memory_term_stats").nth(1).expect(&plan);
    let condition = scan.lines().nth(1).unwrap_or_default();
    for column in ["account_id =", "field = ANY", "term = ANY"] {
        assert!(
            condition.contains("Index Cond") && condition.contains(column),
            "{column}: {plan}"
        );
    }
}

/// An unfiltered keyword search first checks only the best `2k` scored memories; when
/// memories expired since the account's last write (none reaped yet) crowd those out, it
/// checks them all.
#[tokio::test]
async fn expired_memories_crowding_the_best_scores_leave_the_live_ones_found() {
    let pg = Postgres::start();
    let url = pg.database("crowded");
    let writer = service(node(&url).await);
    for i in 0..75 {
        let old = PutInput {
            expires_in_days: Some(1.0),
            ..input("acme", "default", &format!("old{i:02}"), "cat cat cat")
        };
        writer.put(old, Quota::memories(1000)).await.unwrap();
    }
    for i in 0..10 {
        let text = format!("a cat among other words, number {i}");
        let new = input("acme", "default", &format!("new{i}"), &text);
        writer.put(new, Quota::memories(1000)).await.unwrap();
    }
    let reader = node(&url).await;
    let found = async |now: u64| -> Vec<String> {
        let q = CandidateQuery {
            account: "acme".into(),
            namespace: None,
            tags: Vec::new(),
            query: "cat".into(),
            keywords: true,
            vector: None,
            k: 40,
            now,
            as_of: None,
        };
        let found = reader.candidates(&q).await.unwrap();
        let mut keys: Vec<String> = found.into_iter().map(|(m, _)| m.key).collect();
        keys.sort();
        keys
    };
    // Now the short ones score best and fill the 40 places.
    let now = now_ms();
    let today = found(now).await;
    assert_eq!(today.len(), 40);
    assert!(today.iter().all(|k| k.starts_with("old")), "{today:?}");
    // Two days on, with no write since, only the ten live ones pass, half of them past the
    // best 80 scored.
    let later = found(now + 2 * 86_400_000).await;
    let live: Vec<String> = (0..10).map(|i| format!("new{i}")).collect();
    assert_eq!(later, live);
}

/// Waits until `sql` in `db` says `want`.
async fn until(pg: &Postgres, db: &str, sql: &str, want: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let got = pg.psql(db, sql);
        if got == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{sql}: {got}, not {want}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_account_past_the_exact_size_gets_a_graph_in_the_background() {
    let pg = Postgres::start();
    let url = pg.database("grow");
    let grown = service(node(&url).await.graph_past(40, 5));
    let scanned = service(node(&url).await);
    let put = async |key: &str, text: &str| {
        grown
            .put(input("acme", "default", key, text), Quota::memories(1_000))
            .await
            .unwrap();
    };
    for i in 0..50 {
        put(
            &format!("k{i}"),
            &format!("note {i} about topic {} and {}", i % 7, i % 5),
        )
        .await;
    }
    grown
        .put(
            input("small", "default", "k", "one note"),
            Quota::memories(1_000),
        )
        .await
        .unwrap();
    let graphs = "SELECT count(graph) FROM memory_accounts";
    assert_eq!(pg.psql("grow", graphs), "0", "puts make no graph");

    // The first search past the size is answered (by a scan) and starts the graph.
    let q = SearchQuery {
        limit: 5,
        ..query("topic 3 and 4", Mode::Semantic)
    };
    let keys = |hits: Vec<crate::memory::SearchHit>| -> Vec<String> {
        hits.into_iter().map(|h| h.memory.key).collect()
    };
    let truth = keys(scanned.search("acme", q.clone()).await.unwrap());
    assert_eq!(keys(grown.search("acme", q.clone()).await.unwrap()), truth);
    until(&pg, "grow", graphs, "1").await;
    assert_eq!(graph_rows(&pg, "grow", "acme"), "50", "every row of acme");
    assert_eq!(graph_rows(&pg, "grow", "small"), "none");

    // New rows are the tail until more than 5 were written since; then a search brings
    // the graph up to date. A deleted memory leaves the graph.
    for i in 0..4 {
        put(&format!("late{i}"), "note about topic 3 and 4").await;
    }
    let truth = keys(scanned.search("acme", q.clone()).await.unwrap());
    assert_eq!(keys(grown.search("acme", q.clone()).await.unwrap()), truth);
    assert_eq!(graph_rows(&pg, "grow", "acme"), "50");
    for i in 4..7 {
        put(&format!("late{i}"), "note about topic 3 and 4").await;
    }
    grown.delete("acme", "default", "k3", false).await.unwrap();
    grown.search("acme", q.clone()).await.unwrap();
    let mark = "SELECT ungraphed FROM memory_accounts WHERE account_id = 'acme'";
    until(&pg, "grow", mark, "0").await;
    assert_eq!(graph_rows(&pg, "grow", "acme"), "56");
    let scored = |hits: Vec<crate::memory::SearchHit>| -> Vec<(String, f64)> {
        hits.into_iter().map(|h| (h.memory.key, h.score)).collect()
    };
    let truth = scored(scanned.search("acme", q.clone()).await.unwrap());
    let got = scored(grown.search("acme", q).await.unwrap());
    let keys = |hits: &[(String, f64)]| -> Vec<String> {
        hits.iter().map(|(key, _)| key.clone()).collect()
    };
    assert_eq!(keys(&got), keys(&truth), "{got:?} {truth:?}");
}

/// Writes racing a graph's build and its catching up — new memories, new versions and
/// deletes — leave it holding exactly the account's counted memories once it is up to date.
#[tokio::test]
async fn writes_while_an_account_gets_its_graph_leave_it_exact() {
    let pg = Postgres::start();
    let url = pg.database("racing");
    let backend = Arc::new(node(&url).await);
    let deleter = service(node(&url).await);
    for i in 0..300 {
        let put = input("acme", "n", &format!("k{i}"), &format!("v{i}"));
        backend
            .put(put, vec![0.5; DIMS], Quota::memories(10_000), None)
            .await
            .unwrap();
    }
    let writes = (0..60).map(|i| {
        let (backend, deleter) = (backend.clone(), deleter.clone());
        tokio::spawn(async move {
            match i % 3 {
                0 => {
                    let put = input("acme", "during", &format!("k{i}"), &format!("v{i}"));
                    backend
                        .put(put, vec![0.25; DIMS], Quota::memories(10_000), None)
                        .await
                        .map(drop)
                }
                1 => {
                    let put = input("acme", "n", &format!("k{i}"), &format!("new v{i}"));
                    backend
                        .put(put, vec![0.75; DIMS], Quota::memories(10_000), None)
                        .await
                        .map(drop)
                }
                _ => deleter
                    .delete("acme", "n", &format!("k{i}"), false)
                    .await
                    .map(drop),
            }
        })
    });
    let writes: Vec<_> = writes.collect();
    backend.index_now("acme").await.unwrap();
    for write in writes {
        write.await.unwrap().unwrap();
    }
    backend.index_now("acme").await.unwrap();
    let graph = pg.psql(
        "racing",
        "SELECT graph FROM memory_accounts WHERE account_id = 'acme'",
    );
    let apart = format!(
        "SELECT count(*) FROM memory_graph_{graph} g \
         FULL JOIN (SELECT id FROM memories WHERE account_id = 'acme' AND counted) m USING (id) \
         WHERE g.id IS NULL OR m.id IS NULL"
    );
    assert_eq!(pg.psql("racing", &apart), "0");
    assert_eq!(graph_rows(&pg, "racing", "acme"), "300");
}

#[tokio::test]
async fn expired_memories_leave_counts_lists_and_the_live_key() {
    let pg = Postgres::start();
    let url = pg.database("expiry");
    let s = service(node(&url).await);
    let mut brief = input("acme", "default", "brief", "gone soon");
    brief.expires_in_days = Some(1.0);
    s.put(brief, Quota::memories(10)).await.unwrap();
    s.put(
        input("acme", "default", "stays", "here"),
        Quota::memories(10),
    )
    .await
    .unwrap();
    pg.psql(
        "expiry",
        "UPDATE memories SET expires_at = 1 WHERE key = 'brief'",
    );
    assert_eq!(s.live_counts().await.unwrap(), [("acme".into(), 2)]);
    let page = s
        .list(
            "acme",
            ListQuery {
                limit: 10,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(page.memories.len(), 1);
    assert_eq!(s.live_counts().await.unwrap(), [("acme".into(), 1)]);
    assert_eq!(s.namespaces("acme").await.unwrap(), [("default".into(), 1)]);
    // The key is free again: a put starts a new version after the expired one.
    let again = s
        .put(
            input("acme", "default", "brief", "back"),
            Quota::memories(10),
        )
        .await
        .unwrap();
    assert_eq!((again.memory.version, again.created), (2, true));
    let keyword = s
        .search("acme", query("gone soon", Mode::Keyword))
        .await
        .unwrap();
    assert!(keyword.is_empty(), "{keyword:?}");
}

#[tokio::test]
async fn consolidation_replaces_its_originals_in_one_transaction() {
    let pg = Postgres::start();
    let url = pg.database("consolidate");
    let backend = node(&url).await;
    let embedding = vec![0.125; DIMS];
    for key in ["a", "b", "c", "keep"] {
        backend
            .put(
                input("acme", "n", key, key),
                embedding.clone(),
                Quota::memories(4),
                None,
            )
            .await
            .unwrap();
    }
    let ids: HashMap<String, u64> = backend
        .live_in("acme", None)
        .await
        .unwrap()
        .into_iter()
        .map(|m| (m.key, m.id))
        .collect();
    let mut summary = input("acme", "n", "a", "a b c");
    summary.provenance = Provenance {
        replaced: vec!["stale".into()],
        ..Provenance::door(Door::Consolidation)
    };
    let merge = Merge {
        summary,
        embedding,
        originals: vec![ids["a"], ids["b"], ids["c"]],
    };
    // The quota of 4 is full, yet consolidation needs no room: three become one.
    let merged = backend.consolidate("acme", vec![merge]).await.unwrap();
    let written = &merged[0].summary;
    assert_eq!((written.key.as_str(), written.version), ("a", 2));
    assert_eq!(merged[0].replaced.len(), 3);
    let replaced: Vec<String> = merged[0]
        .replaced
        .iter()
        .map(|m| m.memory_id.clone())
        .collect();
    let provenance = written.provenance.clone().unwrap();
    assert_eq!(
        (provenance.door, provenance.replaced),
        (Door::Consolidation, replaced)
    );
    assert_eq!(written.source, Source::Consolidated);
    for key in ["a", "b", "c"] {
        let original = backend
            .history("acme", "n", key, None, usize::MAX)
            .await
            .unwrap()
            .memories
            .pop()
            .unwrap();
        assert!(original.deleted_at.is_some() && !original.is_latest);
        assert_eq!(
            original.consolidated_into.as_ref(),
            Some(&written.memory_id)
        );
    }
    let live: Vec<String> = backend
        .live_in("acme", None)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.key)
        .collect();
    assert_eq!(live, ["keep", "a"]);
    assert_eq!(backend.live_counts().await.unwrap(), [("acme".into(), 2)]);
}

#[tokio::test]
async fn a_failed_write_leaves_nothing_behind() {
    let pg = Postgres::start();
    let url = pg.database("atomic");
    let backend = node(&url).await;
    backend
        .put(
            input("acme", "n", "kept", "kept"),
            vec![0.5; DIMS],
            Quota::memories(10),
            None,
        )
        .await
        .unwrap();
    // A transaction that wrote and then failed (a vector of the wrong length) is rolled
    // back whole: the counter row, the terms and the rows are as before.
    let mut txn = Txn::begin(&backend.pool, "acme", now_ms()).await.unwrap();
    txn.put(&input("acme", "n", "one", "first"), &[0.5; DIMS], 10)
        .await
        .unwrap();
    assert!(
        txn.put(&input("acme", "n", "two", "second"), &[0.5; 3], 10)
            .await
            .is_err()
    );
    drop(txn);
    assert_eq!(backend.live_counts().await.unwrap(), [("acme".into(), 1)]);
    assert_eq!(
        pg.psql(
            "atomic",
            "SELECT count(*) FROM memory_terms WHERE term = 'first'"
        ),
        "0"
    );
}

#[tokio::test]
async fn a_group_of_puts_commits_together_and_a_failed_one_leaves_the_others_whole() {
    let pg = Postgres::start();
    let url = pg.database("group");
    let backend = Arc::new(node(&url).await);
    let put = |key: &str, value: &str, dims: usize| {
        Pending::new(
            input("acme", "n", key, value),
            vec![0.5; dims],
            Quota::memories(2),
            None,
        )
    };
    let (one, one_done) = put("one", "first", DIMS);
    // A vector of the wrong length: the database refuses the row after the put began.
    let (bad, bad_done) = put("two", "second", 3);
    let (three, three_done) = put("three", "third", DIMS);
    let (over, over_done) = put("four", "fourth", DIMS);
    group::commit(&backend.pool, "acme", vec![one, bad, three, over]).await;
    assert!(one_done.await.unwrap().unwrap().created);
    let refused = bad_done.await.unwrap();
    assert!(
        matches!(refused, Err(MemoryError::Database(_))),
        "{refused:?}"
    );
    assert!(three_done.await.unwrap().unwrap().created);
    let over = over_done.await.unwrap();
    assert!(
        matches!(over, Err(MemoryError::QuotaExceeded { limit: 2, used: 2 })),
        "the refused put took no place: {over:?}"
    );
    assert_eq!(backend.live_counts().await.unwrap(), [("acme".into(), 2)]);
    let stats = "SELECT string_agg(term || ':' || docs, ' ' ORDER BY term) \
        FROM memory_term_stats WHERE account_id = 'acme' AND field = 1 AND docs > 0";
    assert_eq!(
        pg.psql("group", stats),
        "first:1 third:1",
        "nothing of the failed put"
    );

    // Puts arriving while the account's transaction runs share the next one (the rows of
    // one transaction have its instant).
    let puts: Vec<_> = (0..24)
        .map(|i| {
            let backend = backend.clone();
            let put = input("acme", "many", &format!("k{i}"), &format!("v{i}"));
            tokio::spawn(async move {
                backend
                    .put(put, vec![0.5; DIMS], Quota::memories(100), None)
                    .await
            })
        })
        .collect();
    for put in puts {
        assert!(put.await.unwrap().unwrap().created);
    }
    let instants = "SELECT count(DISTINCT created_at) FROM memories WHERE namespace = 'many'";
    let transactions: usize = pg.psql("group", instants).parse().unwrap();
    assert!(transactions < 12, "24 puts in {transactions} transactions");
}

#[tokio::test]
async fn a_database_made_with_another_embedder_is_refused() {
    let pg = Postgres::start();
    let url = pg.database("identity");
    node(&url).await;
    let pool = connect(&StorageConfig {
        backend: Backend::Postgres,
        database_url: Some(url.as_str().into()),
        pool_size: 1,
    })
    .await
    .unwrap();
    let err = PgMemory::open(pool, "onnx:all-MiniLM-L6-v2-onnx-int8:384", 384)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains(IDENTITY) && err.contains("onnx:"), "{err}");
}

/// Versions past a key's quota are pruned alike on both backends: the newest kept, the
/// oldest kept unlinked, nothing live or counted changed; an import prunes the keys it wrote.
async fn pruned_versions(s: &MemoryService) -> Vec<String> {
    let quota = Quota {
        memories: 10,
        versions_per_key: 3,
    };
    let mut out = Vec::new();
    for n in 1..=5 {
        let value = format!("draft {n}");
        s.put(input("acme", "default", "doc", &value), quota)
            .await
            .unwrap();
    }
    s.put(input("acme", "default", "other", "one"), quota)
        .await
        .unwrap();
    s.put(input("globex", "default", "doc", "theirs 1"), quota)
        .await
        .unwrap();
    s.put(input("globex", "default", "doc", "theirs 2"), quota)
        .await
        .unwrap();
    let history = |account: &'static str, key: &'static str| async move {
        let versions = s.history(account, "default", key, None, 100).await.unwrap();
        versions
            .memories
            .iter()
            .map(|m| {
                (
                    m.version,
                    m.value.clone(),
                    m.is_latest,
                    m.previous.is_some(),
                )
            })
            .collect::<Vec<_>>()
    };
    out.push(format!("doc: {:?}", history("acme", "doc").await));
    out.push(format!("other: {:?}", history("acme", "other").await));
    out.push(format!("theirs: {:?}", history("globex", "doc").await));
    out.push(format!("live: {:?}", s.namespaces("acme").await.unwrap()));
    // A soft-deleted version is one of the kept; a new put after it prunes past it.
    s.delete("acme", "default", "doc", false).await.unwrap();
    s.put(input("acme", "default", "doc", "draft 6"), quota)
        .await
        .unwrap();
    out.push(format!("after delete: {:?}", history("acme", "doc").await));
    // An import writes versions as puts do, then prunes the keys it wrote.
    let items = (0..4)
        .map(|i| ImportItem {
            index: i,
            key: None,
            input: Ok(input("acme", "default", "other", &format!("two {i}"))),
        })
        .collect();
    let report = s.import("acme", items, quota).await.unwrap();
    out.push(format!("imported: {}", report.imported));
    out.push(format!(
        "other after import: {:?}",
        history("acme", "other").await
    ));
    let hits = s
        .search("acme", query("draft", Mode::Keyword))
        .await
        .unwrap();
    let found: Vec<&str> = hits.iter().map(|h| h.memory.value.as_str()).collect();
    out.push(format!("search: {found:?}"));
    out
}

#[tokio::test]
async fn old_versions_are_pruned_alike_on_both_backends() {
    let (embedded, postgres) = on_both("prune", pruned_versions).await;
    assert_eq!(embedded, postgres);
    let expected = [
        r#"doc: [(5, "draft 5", true, true), (4, "draft 4", false, true), (3, "draft 3", false, false)]"#,
        r#"other: [(1, "one", true, false)]"#,
        r#"theirs: [(2, "theirs 2", true, true), (1, "theirs 1", false, false)]"#,
        r#"live: [("default", 2)]"#,
        r#"after delete: [(6, "draft 6", true, true), (5, "draft 5", false, true), (4, "draft 4", false, false)]"#,
        "imported: 4",
        r#"other after import: [(5, "two 3", true, true), (4, "two 2", false, true), (3, "two 1", false, false)]"#,
        r#"search: ["draft 6"]"#,
    ];
    assert_eq!(embedded, expected);
}

/// Time travel on `s` around an update and a soft delete: get, list and search as of each
/// instant, an observed window, and the provenance each version was written with.
async fn travelled(s: &MemoryService) -> Vec<String> {
    let quota = Quota::memories(10);
    let mut pet = input("acme", "default", "pet", "a cat named Miso");
    pet.observed_at = Some(1_000);
    s.put(pet, quota).await.unwrap();
    let before = instant().await;
    s.put(input("acme", "default", "city", "lives in Lisbon"), quota)
        .await
        .unwrap();
    let first = instant().await;
    let mut moved = input("acme", "default", "city", "lives in Porto");
    moved.provenance = Provenance {
        agent_id: Some("agt_1".into()),
        step: Some(7),
        ..Provenance::door(Door::AgentTool)
    };
    s.put(moved, quota).await.unwrap();
    let updated = instant().await;
    s.delete("acme", "default", "city", false).await.unwrap();
    let deleted = instant().await;
    let mut out = Vec::new();
    for (name, at) in [
        ("before", before),
        ("first", first),
        ("updated", updated),
        ("deleted", deleted),
    ] {
        let time = TimeFilter {
            as_of: Some(at),
            ..TimeFilter::default()
        };
        let got = s.get_at("acme", "default", "city", at).await;
        let listed = s
            .list(
                "acme",
                ListQuery {
                    limit: 10,
                    time,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let values =
            |ms: &[Memory]| -> Vec<String> { ms.iter().map(|m| m.value.clone()).collect() };
        let mut found = Vec::new();
        for mode in [Mode::Keyword, Mode::Hybrid] {
            let q = SearchQuery {
                time,
                ..query("Lisbon Porto", mode)
            };
            let hits = s.search("acme", q).await.unwrap();
            found.push(values(
                &hits.into_iter().map(|h| h.memory).collect::<Vec<_>>(),
            ));
        }
        out.push(format!(
            "{name}: get={:?} list={:?} search={found:?}",
            got.map(|m| m.value).ok(),
            values(&listed.memories)
        ));
    }
    let old = ListQuery {
        limit: 10,
        time: TimeFilter {
            observed_before: Some(2_000),
            ..TimeFilter::default()
        },
        ..Default::default()
    };
    let old = s.list("acme", old).await.unwrap().memories;
    out.push(format!(
        "observed before 2000: {:?}",
        old.iter()
            .map(|m| (&m.key, m.observed()))
            .collect::<Vec<_>>()
    ));
    let history = s
        .history("acme", "default", "city", None, 10)
        .await
        .unwrap();
    for m in history.memories {
        out.push(format!("v{} by {:?}", m.version, m.provenance));
    }
    out
}

#[tokio::test]
async fn time_travel_and_provenance_read_alike_on_both_backends() {
    let (embedded, postgres) = on_both("travel", travelled).await;
    let expected = [
        r#"before: get=None list=["a cat named Miso"] search=[[], ["a cat named Miso"]]"#,
        r#"first: get=Some("lives in Lisbon") list=["lives in Lisbon", "a cat named Miso"] search=[["lives in Lisbon"], ["lives in Lisbon", "a cat named Miso"]]"#,
        r#"updated: get=Some("lives in Porto") list=["lives in Porto", "a cat named Miso"] search=[["lives in Porto"], ["lives in Porto", "a cat named Miso"]]"#,
        r#"deleted: get=None list=["a cat named Miso"] search=[[], ["a cat named Miso"]]"#,
        r#"observed before 2000: [("pet", 1000)]"#,
        r#"v2 by Some(Provenance { door: AgentTool, key_id: None, agent_id: Some("agt_1"), step: Some(7), replaced: [] })"#,
        r#"v1 by Some(Provenance { door: Rest, key_id: None, agent_id: None, step: None, replaced: [] })"#,
    ];
    assert_eq!(embedded, expected);
    assert_eq!(postgres, expected);
}

/// An agent's journaled write on `s` made again at its step after others wrote the key,
/// as a run resumed after a crash that lost the write's journal entry makes it, then the
/// same agent's write at another step and another value at the same step.
async fn written_again(s: &MemoryService) -> Vec<String> {
    let quota = Quota::memories(10);
    let agent = |value: &str, step: u64| PutInput {
        provenance: Provenance {
            agent_id: Some("agt_1".into()),
            step: Some(step),
            ..Provenance::door(Door::AgentTool)
        },
        ..input("acme", "default", "city", value)
    };
    let first = s.put(agent("lives in Porto", 4), quota).await.unwrap();
    s.put(input("acme", "default", "city", "lives in Faro"), quota)
        .await
        .unwrap();
    let mut out = Vec::new();
    for (value, step) in [
        ("lives in Porto", 4),
        ("lives in Porto", 9),
        ("lives in Braga", 4),
    ] {
        let again = s.put(agent(value, step), quota).await.unwrap();
        let same = again.memory.memory_id == first.memory.memory_id;
        let history = s
            .history("acme", "default", "city", None, 10)
            .await
            .unwrap()
            .memories;
        let values: Vec<&str> = history.iter().map(|m| m.value.as_str()).collect();
        out.push(format!(
            "{value} at {step}: first write={same} created={} versions={values:?}",
            again.created
        ));
    }
    out
}

#[tokio::test]
async fn an_agents_write_made_again_at_its_step_is_applied_once_on_both_backends() {
    let (embedded, postgres) = on_both("again", written_again).await;
    let expected = [
        r#"lives in Porto at 4: first write=true created=false versions=["lives in Faro", "lives in Porto"]"#,
        r#"lives in Porto at 9: first write=false created=true versions=["lives in Porto", "lives in Faro", "lives in Porto"]"#,
        r#"lives in Braga at 4: first write=false created=true versions=["lives in Braga", "lives in Porto", "lives in Faro", "lives in Porto"]"#,
    ];
    assert_eq!(embedded, expected);
    assert_eq!(postgres, expected);
}

/// An agent's journaled delete made again at its step, as a run resumed after a crash that
/// lost the delete's journal entry makes it; then a delete at another step, and a delete
/// of a memory someone else deleted.
async fn deleted_again(s: &MemoryService) -> Vec<String> {
    let quota = Quota::memories(10);
    let agent = |step: u64| Provenance {
        agent_id: Some("agt_1".into()),
        step: Some(step),
        ..Provenance::door(Door::AgentTool)
    };
    for key in ["city", "pet"] {
        s.put(input("acme", "default", key, "a value"), quota)
            .await
            .unwrap();
    }
    let first = s
        .delete_by("acme", "default", "city", &agent(5), None)
        .await;
    s.delete("acme", "default", "pet", false).await.unwrap();
    let mut out = vec![format!("first: deleted {}", first.is_ok())];
    for (key, step) in [("city", 5), ("city", 6), ("pet", 5)] {
        let again = s
            .delete_by("acme", "default", key, &agent(step), None)
            .await;
        out.push(match again {
            Ok(m) => format!(
                "{key} at {step}: the same delete={}",
                m.id == first.as_ref().unwrap().id
            ),
            Err(MemoryError::NotFound { .. }) => format!("{key} at {step}: not found"),
            Err(e) => format!("{key} at {step}: {e}"),
        });
    }
    out
}

#[tokio::test]
async fn an_agents_delete_made_again_at_its_step_answers_as_it_did_on_both_backends() {
    let (embedded, postgres) = on_both("deleted_again", deleted_again).await;
    let expected = [
        "first: deleted true",
        "city at 5: the same delete=true",
        "city at 6: not found",
        "pet at 5: not found",
    ];
    assert_eq!(embedded, expected);
    assert_eq!(postgres, expected);
}

/// An import of several writer pieces (the embedded backend writes 32 items a
/// transaction): an invalid item in one piece, the quota reached in a later one.
async fn large_import(s: &MemoryService) -> Vec<String> {
    let items = (0..100)
        .map(|index| {
            let key = match index {
                40 => "bad key!".to_string(),
                _ => format!("item_{index}"),
            };
            ImportItem {
                index,
                key: Some(key.clone()),
                input: Ok(input("acme", "bulk", &key, &format!("value {index}"))),
            }
        })
        .collect();
    let report = s.import("acme", items, Quota::memories(70)).await.unwrap();
    let errors: Vec<_> = report.errors.iter().map(|e| e.index).collect();
    let live = s.namespaces("acme").await.unwrap();
    vec![
        format!("imported={} failed={}", report.imported, report.failed),
        format!("halted={:?} errors={errors:?}", report.halted),
        format!("live={live:?}"),
    ]
}

#[tokio::test]
async fn an_import_of_many_pieces_halts_alike_on_both_backends() {
    let (embedded, postgres) = on_both("large_import", large_import).await;
    let expected = [
        "imported=70 failed=1",
        "halted=Some((70, 70)) errors=[40]",
        r#"live=[("bulk", 70)]"#,
    ];
    assert_eq!(embedded, expected);
    assert_eq!(postgres, expected);
}

/// An `as_of` search on postgres takes the live memories written by then from the search
/// indexes and the versions of the past from `memories_past`; it finds what a scan of
/// every version finds, through updates, pruning, deletes and an expiry.
#[tokio::test]
async fn an_as_of_search_finds_from_the_indexes_what_a_scan_finds() {
    let pg = Postgres::start();
    let s = service(node(&pg.database("past")).await);
    travel_through_versions(&s).await;
    let s = service(node(&pg.database("past_graphs")).await.graph_past(0, 0));
    travel_through_versions(&s).await;
}

/// An account whose past was retired before versions' ends and the past's postings were
/// kept (a database from before migration 0018, made here by clearing both) is searched
/// `as_of` as before — every version live then read and ranked in Rust — while its past is
/// filled in in the background; the ends and postings filled in are those the writes
/// record, and the searches find the same throughout.
#[tokio::test]
async fn a_past_from_before_its_ends_were_kept_is_filled_in() {
    let pg = Postgres::start();
    let db = "past_fill";
    let s = service(node(&pg.database(db)).await);
    let instants = travel_through_versions(&s).await;
    let recorded = || {
        let ends = pg.psql(
            db,
            "SELECT string_agg(id || ':' || ended_at, ',' ORDER BY id) FROM memories \
             WHERE NOT counted",
        );
        let postings = pg.psql(
            db,
            "SELECT md5(string_agg(concat_ws(':', account_id, field, term, id, tf, norm), ',' \
             ORDER BY account_id, field, term, id)) FROM memory_past_terms",
        );
        (ends, postings)
    };
    let written = recorded();
    let mut found = Vec::new();
    for &at in &instants {
        found.push(found_at(&s, at, false).await);
    }
    pg.psql(
        db,
        "UPDATE memories SET ended_at = NULL WHERE NOT counted; DELETE FROM memory_past_terms",
    );
    for (&at, before) in instants.iter().zip(&found) {
        assert_eq!(&found_at(&s, at, false).await, before, "as of {at}");
    }
    until(
        &pg,
        db,
        "SELECT count(*) FROM memories WHERE NOT counted AND ended_at IS NULL",
        "0",
    )
    .await;
    assert_eq!(recorded(), written);
    for (&at, before) in instants.iter().zip(&found) {
        assert_eq!(&found_at(&s, at, false).await, before, "as of {at}");
    }
}

/// The past is read through its own indexes: an `as_of` search costs what the account's
/// past holds, not a visit to every row of the account — ranked in the database through
/// `memories_ended`, or (an account with versions retired before their ends were kept)
/// read whole through `memories_past` or `memories_ended`, both of the versions no longer
/// counted.
#[tokio::test]
async fn the_past_is_read_through_its_index() {
    let pg = Postgres::start();
    let backend = node(&pg.database("past_plan")).await;
    let best = plan_without_seqscans(&backend, super::search::PAST_BEST, |q| {
        q.bind("acme")
            .bind(0i64)
            .bind(None::<Vec<f32>>)
            .bind(None::<String>)
            .bind(Vec::<String>::new())
            .bind(10i64)
            .bind(vec!["word".to_string()])
    })
    .await;
    assert!(best.contains("memories_ended"), "{best}");
    let whole = plan_without_seqscans(&backend, super::search::PAST, |q| {
        q.bind("acme")
            .bind(0i64)
            .bind(None::<Vec<f32>>)
            .bind(None::<String>)
            .bind(Vec::<String>::new())
    })
    .await;
    let outer = whole
        .lines()
        .find(|l| l.contains(" on memories m"))
        .unwrap_or("");
    assert!(
        outer.contains("memories_past") || outer.contains("memories_ended"),
        "{whole}"
    );
}
