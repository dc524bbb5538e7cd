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

fn put(account: &str, key: &str, value: &str) -> PutInput {
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
                time: Default::default(),
            };
            assert!(!service.search("acme", query).await.unwrap().is_empty());
        }
    });
    let searches = |mode| {
        got.histogram(names::SEARCH_DURATION, &[("mode", mode)])
            .map(|samples| samples.len())
    };
    assert_eq!(searches("hybrid"), Some(1));
    assert_eq!(searches("semantic"), Some(1));
    assert_eq!(searches("keyword"), Some(2));
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
