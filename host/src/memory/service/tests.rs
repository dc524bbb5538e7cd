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
