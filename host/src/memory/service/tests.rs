//! The service's own metrics, on a real store with the hash embedder.

use std::sync::Arc;

use super::MemoryService;
use crate::{
    memory::{
        Door, Mode, Provenance, PutInput, Quota, SearchQuery,
        embed::{EmbedService, HashEmbedder},
    },
    metrics::{names, testing::capture_async},
};

pub(crate) fn put(account: &str, key: &str, value: &str) -> PutInput {
    PutInput {
        account: account.into(),
        key: key.into(),
        value: value.into(),
        namespace: "default".into(),
        tags: Vec::new(),
        importance: 5.0,
        expires_in_days: None,
        observed_at: None,
        provenance: Provenance::door(Door::Rest),
    }
}

#[test]
fn searches_are_timed_by_mode_and_live_memories_counted_per_account() {
    let dir = tempfile::tempdir().unwrap();
    let ((), got) = capture_async(async {
        let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
        let embed = EmbedService::new(Arc::new(HashEmbedder::new(64)), &Default::default());
        let service =
            MemoryService::open(db, &dir.path().join("index"), embed, &Default::default()).unwrap();
        for (account, key) in [("acme", "food"), ("acme", "drink"), ("globex", "food")] {
            let value = format!("{account} likes {key}");
            service
                .put(put(account, key, &value), Quota::memories(10))
                .await
                .unwrap();
        }
        let mut counts = service.live_counts().await.unwrap();
        counts.sort();
        assert_eq!(counts, [("acme".into(), 2), ("globex".into(), 1)]);
        for mode in [Mode::Hybrid, Mode::Semantic, Mode::Keyword, Mode::Keyword] {
            let query = SearchQuery {
                query: "what does acme like".into(),
                namespace: None,
                tags: Vec::new(),
                limit: 5,
                mode,
                min_score: 0.0,
                rerank: false,
                time: Default::default(),
            };
            assert!(!service.search("acme", query).await.unwrap().is_empty());
        }
    });
    let searches = |mode| {
        got.histogram(
            names::SEARCH_DURATION,
            &[("mode", mode), ("rerank", "false")],
        )
        .map(|samples| samples.len())
    };
    assert_eq!(searches("hybrid"), Some(1));
    assert_eq!(searches("semantic"), Some(1));
    assert_eq!(searches("keyword"), Some(2));
}

#[tokio::test]
async fn a_reranked_search_is_ordered_and_scored_by_the_cross_encoder() {
    use crate::memory::{
        MemoryError,
        embed::{EmbedError, locate_reranker},
    };

    let dir = tempfile::tempdir().unwrap();
    let open = |name: &str, reranker| {
        let db = Arc::new(redb::Database::create(dir.path().join(name)).unwrap());
        let embedder = Arc::new(HashEmbedder::new(64));
        let embed = EmbedService::with_reranker(embedder, &Default::default(), reranker);
        MemoryService::open(
            db,
            &dir.path().join(name).with_extension("index"),
            embed,
            &Default::default(),
        )
        .unwrap()
    };
    let files = locate_reranker(&Default::default()).expect("run scripts/setup");
    let service = open("with", Some(files));
    let without = open("without", None);
    let memories = [
        (
            "population",
            "Berlin has a population of 3,520,031 registered inhabitants.",
        ),
        (
            "festival",
            "Berlin hosts the Berlinale, a film festival, every February.",
        ),
        (
            "museum",
            "New York City is famous for the Metropolitan Museum of Art.",
        ),
        (
            "lakes",
            "How many lakes are there around Berlin? Nobody I asked knew.",
        ),
    ];
    for s in [&service, &without] {
        for (key, value) in memories {
            s.put(put("acme", key, value), Quota::memories(10))
                .await
                .unwrap();
        }
    }
    let query = |rerank, min_score, limit| SearchQuery {
        query: "How many people live in Berlin?".into(),
        namespace: None,
        tags: Vec::new(),
        limit,
        mode: Mode::Hybrid,
        min_score,
        rerank,
        time: Default::default(),
    };
    let hits = service.search("acme", query(true, 0.0, 10)).await.unwrap();
    let keys: Vec<&str> = hits.iter().map(|h| h.memory.key.as_str()).collect();
    assert_eq!(keys.len(), 4, "{keys:?}");
    assert_eq!(keys[0], "population", "{keys:?}");
    assert_eq!(keys[3], "museum", "{keys:?}");
    for pair in hits.windows(2) {
        assert!(pair[0].score >= pair[1].score);
    }
    for hit in &hits {
        assert_eq!(hit.breakdown.rerank, Some(hit.score));
        assert!(hit.score > 0.0 && hit.score < 1.0, "{}", hit.score);
        // The first ranking's parts stay, to explain how the candidate was found.
        assert!((hit.breakdown.importance - 0.5).abs() < 1e-9);
    }
    assert!(hits[0].score > 0.9 && hits[3].score < 0.1, "{hits:?}");
    // `min_score` and `limit` apply to the reranked scores.
    let sure = service.search("acme", query(true, 0.5, 10)).await.unwrap();
    assert!(sure.iter().all(|h| h.score >= 0.5) && sure[0].memory.key == "population");
    assert!(sure.len() < 4, "{sure:?}");
    assert_eq!(
        service
            .search("acme", query(true, 0.0, 2))
            .await
            .unwrap()
            .len(),
        2
    );
    // Without `rerank` nothing is reranked.
    let plain = service.search("acme", query(false, 0.0, 10)).await.unwrap();
    assert!(plain.iter().all(|h| h.breakdown.rerank.is_none()));
    // Another account's search finds nothing to rerank.
    assert!(
        service
            .search("globex", query(true, 0.0, 10))
            .await
            .unwrap()
            .is_empty()
    );
    // A service started without the cross-encoder says so.
    match without.search("acme", query(true, 0.0, 10)).await {
        Err(MemoryError::Embed(EmbedError::Load(message))) => {
            assert!(message.contains("without a cross-encoder"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_consolidation_s_fields_are_checked_by_the_domain_and_default_when_absent() {
    use super::ConsolidateQuery;
    use crate::memory::{MemoryError, consolidate::DEFAULT_MIN_CLUSTER_SIZE};

    let q = ConsolidateQuery::new(None, None, None, None).unwrap();
    assert_eq!(
        (q.namespace, q.min_cluster_size, q.dry_run),
        (None, DEFAULT_MIN_CLUSTER_SIZE, false)
    );
    let q = ConsolidateQuery::new(Some("user_1".into()), Some(0.5), Some(2.0), Some(true)).unwrap();
    assert_eq!((q.threshold, q.min_cluster_size, q.dry_run), (0.5, 2, true));
    let field = |r: Result<ConsolidateQuery, MemoryError>| match r {
        Err(MemoryError::Invalid { field, .. }) => field,
        other => panic!("not refused: {other:?}"),
    };
    assert_eq!(
        field(ConsolidateQuery::new(Some(String::new()), None, None, None)),
        "namespace"
    );
    assert_eq!(
        field(ConsolidateQuery::new(None, Some(1.5), None, None)),
        "threshold"
    );
    for size in [1.0, 2.5, -3.0] {
        assert_eq!(
            field(ConsolidateQuery::new(None, None, Some(size), None)),
            "min_cluster_size"
        );
    }
}

/// Keys and values of a search as of `at`, sorted: from the indexes (live and past), or
/// from a scan of every version (an observation window that keeps all sends it there).
pub(crate) async fn found_at(
    service: &MemoryService,
    at: u64,
    scanned: bool,
) -> Vec<(String, String)> {
    let time = crate::memory::TimeFilter {
        as_of: Some(at),
        observed_after: scanned.then_some(0),
        observed_before: None,
    };
    let mut found = Vec::new();
    for mode in [Mode::Hybrid, Mode::Keyword, Mode::Semantic] {
        let query = SearchQuery {
            query: "lives in city".into(),
            namespace: None,
            tags: Vec::new(),
            limit: 50,
            mode,
            min_score: 0.0,
            rerank: false,
            time,
        };
        let hits = service.search("acme", query).await.unwrap();
        found.extend(hits.into_iter().map(|h| (h.memory.key, h.memory.value)));
    }
    found.sort();
    found.dedup();
    found
}

/// An instant strictly between two writes.
pub(crate) async fn instant() -> u64 {
    tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    let at = crate::clock::now_ms();
    tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    at
}

/// Writes a past into `service`'s account `acme` — updates, a pruned version, a soft and a
/// hard delete, an expiry — and checks at instants between the writes that an `as_of`
/// search from the indexes finds what a scan finds, and the values it should. The
/// instants, for the caller's further checks.
pub(crate) async fn travel_through_versions(service: &MemoryService) -> Vec<u64> {
    let quota = Quota {
        versions_per_key: 2,
        ..Quota::memories(10)
    };
    let write = async |key: &str, value: &str| {
        service.put(put("acme", key, value), quota).await.unwrap();
        instant().await
    };
    let mut instants = vec![instant().await];
    instants.push(write("city", "lives in Lisbon").await);
    instants.push(write("pet", "a cat that lives in the city").await);
    instants.push(write("city", "lives in Porto").await);
    instants.push(write("city", "lives in Faro").await); // Lisbon is pruned
    service
        .delete("acme", "default", "pet", false)
        .await
        .unwrap();
    instants.push(instant().await);
    let mut brief = put("acme", "visit", "lives in a hotel this week");
    brief.expires_in_days = Some(0.05 / 86_400.0); // 50 ms
    service.put(brief, quota).await.unwrap();
    instants.push(instant().await);
    tokio::time::sleep(std::time::Duration::from_millis(60)).await;
    instants.push(write("gone", "lives in the city for now").await);
    service
        .delete("acme", "default", "gone", true)
        .await
        .unwrap();
    instants.push(instant().await);

    for &at in &instants {
        let indexed = found_at(service, at, false).await;
        assert_eq!(indexed, found_at(service, at, true).await, "as of {at}");
    }
    let values = |found: Vec<(String, String)>| -> Vec<String> {
        found.into_iter().map(|(_, v)| v).collect()
    };
    assert_eq!(
        values(found_at(service, instants[3], false).await),
        ["lives in Porto", "a cat that lives in the city"]
    );
    assert_eq!(
        values(found_at(service, instants[6], false).await),
        ["lives in Faro", "lives in a hotel this week"],
        "the pet was deleted; the visit had not yet expired"
    );
    assert_eq!(
        values(found_at(service, instants[7], false).await),
        ["lives in Faro"],
        "the visit had expired; a hard delete forgets every version"
    );
    assert_eq!(
        values(found_at(service, instants[1], false).await),
        Vec::<String>::new(),
        "Lisbon's version was pruned, and the past forgot it"
    );
    instants
}

#[test]
fn an_as_of_search_from_the_indexes_finds_what_a_scan_finds_also_after_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
        let embed = EmbedService::new(Arc::new(HashEmbedder::new(64)), &Default::default());
        let index = dir.path().join("index");
        let service = MemoryService::open(db.clone(), &index, embed, &Default::default());
        (service.unwrap(), db)
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (instants, service, db) = runtime.block_on(async {
        let (service, db) = open();
        let instants = travel_through_versions(&service).await;
        (instants, service, db)
    });
    // The oplog is truncated, so the index of the past, lost, is rebuilt from rows.
    service.checkpoint().unwrap();
    drop(service);
    while Arc::strong_count(&db) > 1 {
        std::thread::sleep(std::time::Duration::from_millis(5)); // the writer letting go
    }
    drop(db);
    std::fs::remove_dir_all(dir.path().join("index").join("past")).unwrap();
    runtime.block_on(async {
        let (service, _db) = open();
        for &at in &instants {
            let indexed = found_at(&service, at, false).await;
            assert_eq!(indexed, found_at(&service, at, true).await, "as of {at}");
        }
        assert_eq!(found_at(&service, instants[4], false).await.len(), 2);
    });
}
