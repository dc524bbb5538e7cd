//! A re-embedding on a real store (redb, tantivy, usearch) from the hash embedder to its
//! mirror, searched all along, stopped midway and resumed.

use std::path::Path;
use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};
use std::time::Duration;

use super::*;
use crate::memory::store::Reader;
use crate::memory::{
    Mode, Quota, SearchQuery,
    embed::{self, EmbedError, Embedder, EmbedderKind, HashEmbedder, Recorded, Role},
    service::{MemoryService, tests::put},
};

const DIMS: usize = 64;

/// The hash embedder's vectors reversed, under another name, each call slowed a little
/// (so a walk can be stopped midway): as unlike the hash's as another model's.
struct Mirror(HashEmbedder);

impl Embedder for Mirror {
    fn name(&self) -> &str {
        "mirror"
    }
    fn dims(&self) -> usize {
        DIMS
    }
    fn embed(&self, role: Role, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, EmbedError> {
        std::thread::sleep(Duration::from_millis(5));
        let mut vectors = self.0.embed(role, texts)?;
        vectors.iter_mut().for_each(|v| v.reverse());
        Ok(vectors)
    }
}

fn hash() -> Arc<dyn Embedder> {
    Arc::new(HashEmbedder::new(DIMS))
}

fn mirror() -> Arc<dyn Embedder> {
    Arc::new(Mirror(HashEmbedder::new(DIMS)))
}

/// The service on `dir` with `embedder` configured, re-embedding when `upgrade` asks.
fn open(
    dir: &Path,
    embedder: Arc<dyn Embedder>,
    upgrade: bool,
) -> (MemoryService, Arc<redb::Database>) {
    let db = Arc::new(redb::Database::create(dir.join("db")).unwrap());
    let recorded = embed::check_identity(&db, EmbedderKind::Hash, &*embedder, upgrade).unwrap();
    let cfg = Default::default();
    let (serving, upgrade) = match recorded {
        Recorded::Same { .. } => (embedder, None),
        Recorded::Upgrading { recorded, fresh } => {
            let to = embed::identity(EmbedderKind::Hash, &*embedder);
            let upgrade = Upgrade {
                target: EmbedService::new(embedder, &cfg),
                fresh,
                progress: Arc::new(Progress::new(recorded, to)),
            };
            (hash(), Some(upgrade))
        }
    };
    let embed = EmbedService::new(serving, &cfg);
    let index = dir.join("index");
    let service =
        MemoryService::open_upgrading(db.clone(), &index, embed, &Default::default(), upgrade);
    (service.unwrap(), db)
}

/// Drops the service and waits for its writer to let go of the database.
fn close((service, db): (MemoryService, Arc<redb::Database>)) {
    drop(service);
    while Arc::strong_count(&db) > 1 {
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn value(n: usize) -> String {
    format!(
        "note {n}: the {} deploy of service {} ran at {} am",
        n * 7,
        n % 13,
        n % 12
    )
}

/// The top hit of a semantic search for `text`, which is stored word for word: its
/// cosine is 1 when query and vectors are of one model, far below when mixed.
async fn top_cosine(service: &MemoryService, text: &str) -> (String, f64) {
    let query = SearchQuery {
        query: text.into(),
        namespace: None,
        tags: Vec::new(),
        limit: 1,
        mode: Mode::Semantic,
        min_score: 0.0,
        rerank: false,
        time: Default::default(),
    };
    let hits = service
        .search("acme", query)
        .await
        .expect("a search failed");
    let hit = hits.first().expect("no hit");
    (hit.memory.value.clone(), hit.breakdown.semantic)
}

/// Searches `service` for live texts (those of the first 200 puts not replaced) until
/// `stop`; each must find its text with one model's cosine. Returns how many ran.
async fn search_until(service: MemoryService, stop: Arc<AtomicBool>) -> usize {
    let mut searches = 0;
    while !stop.load(Ordering::Acquire) {
        let text = value(50 + searches * 17 % 150);
        let (found, cosine) = top_cosine(&service, &text).await;
        assert_eq!(
            (found.as_str(), cosine > 0.98),
            (text.as_str(), true),
            "{cosine}"
        );
        searches += 1;
        tokio::task::yield_now().await;
    }
    searches
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_is_reembedded_while_searched_stopped_midway_and_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let stored = 200;
    let quota = Quota::memories(10_000);
    let (service, db) = open(dir.path(), hash(), false);
    for n in 0..stored {
        let key = format!("k{}", n % 150); // some keys get a second version
        service
            .put(put("acme", &key, &value(n)), quota)
            .await
            .unwrap();
    }
    close((service, db));
    let db = redb::Database::create(dir.path().join("db")).unwrap();
    let refused = embed::check_identity(&db, EmbedderKind::Hash, &*mirror(), false);
    assert!(
        matches!(refused, Err(EmbedError::Mismatch { .. })),
        "{refused:?}"
    );
    drop(db);

    // Asked for: the hash serves while the mirror walks; stopped after a batch or two.
    let (service, db) = open(dir.path(), mirror(), true);
    let stop = Arc::new(AtomicBool::new(false));
    let searcher = tokio::spawn(search_until(service.clone(), stop.clone()));
    let walking = tokio::spawn({
        let service = service.clone();
        async move { service.reembed().await }
    });
    while service.reembedding().unwrap().done < BATCH as u64 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    walking.abort();
    let _ = walking.await;
    let report = service.reembedding().unwrap();
    assert_eq!(report.state, ReembedState::Running);
    assert!(report.done < report.total, "{report:?}");
    stop.store(true, Ordering::Release);
    assert!(searcher.await.unwrap() > 0);
    close((service, db));

    // A restart goes on from the committed position, without the ask; puts meanwhile are
    // walked too; every search finds one model's vectors throughout.
    let (service, db) = open(dir.path(), mirror(), false);
    let resumed = service.reembedding().unwrap();
    assert_eq!(resumed.state, ReembedState::Pending);
    assert!(resumed.done >= BATCH as u64, "{resumed:?}");
    let stop = Arc::new(AtomicBool::new(false));
    let searcher = tokio::spawn(search_until(service.clone(), stop.clone()));
    let walking = tokio::spawn({
        let service = service.clone();
        async move { service.reembed().await }
    });
    for n in stored..stored + 20 {
        service
            .put(put("acme", &format!("new{n}"), &value(n)), quota)
            .await
            .unwrap();
    }
    let identity = walking.await.unwrap().unwrap();
    stop.store(true, Ordering::Release);
    assert!(searcher.await.unwrap() > 0);
    assert_eq!(identity.as_deref(), Some("hash:mirror:64"));
    let report = service.reembedding().unwrap();
    assert_eq!(
        (report.state, report.done),
        (ReembedState::Done, report.total)
    );
    for n in [150, 57, stored + 19] {
        let (found, cosine) = top_cosine(&service, &value(n)).await;
        assert_eq!((found, cosine > 0.98), (value(n), true));
    }
    assert_eq!(service.reembed().await.unwrap(), None, "done already");
    close((service, db));

    // The mirror is recorded: it starts without an ask, the hash no more, and the rebuilt
    // vector indexes answer as before.
    let (service, db) = open(dir.path(), mirror(), false);
    assert!(service.reembedding().is_none());
    let (found, cosine) = top_cosine(&service, &value(stored + 3)).await;
    assert_eq!((found, cosine > 0.98), (value(stored + 3), true));
    close((service, db));
    let db = redb::Database::create(dir.path().join("db")).unwrap();
    assert!(embed::check_identity(&db, EmbedderKind::Hash, &*hash(), false).is_err());
}

/// Going back to the recorded embedder abandons a re-embedding (its side vectors dropped);
/// asked again, it starts over and completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn going_back_abandons_a_reembedding_and_asking_again_starts_over() {
    let dir = tempfile::tempdir().unwrap();
    let (service, db) = open(dir.path(), hash(), false);
    for n in 0..3 * BATCH {
        let input = put("acme", &format!("k{n}"), &value(n));
        service.put(input, Quota::memories(1_000)).await.unwrap();
    }
    close((service, db));
    let (service, db) = open(dir.path(), mirror(), true);
    let walking = tokio::spawn({
        let service = service.clone();
        async move { service.reembed().await }
    });
    while service.reembedding().unwrap().done == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    walking.abort();
    let _ = walking.await;
    close((service, db));

    let (service, db) = open(dir.path(), hash(), false);
    assert!(service.reembedding().is_none());
    let (_, cosine) = top_cosine(&service, &value(5)).await;
    assert!(cosine > 0.98, "the hash serves on: {cosine}");
    close((service, db));
    let standing = Reader::new(&redb::Database::create(dir.path().join("db")).unwrap())
        .unwrap()
        .standing()
        .unwrap();
    assert_eq!((standing.position, standing.done), (0, 0), "{standing:?}");

    let (service, db) = open(dir.path(), mirror(), true);
    assert_eq!(service.reembedding().unwrap().done, 0);
    let identity = service.reembed().await.unwrap();
    assert_eq!(identity.as_deref(), Some("hash:mirror:64"));
    assert_eq!(service.reembedding().unwrap().done, 3 * BATCH as u64);
    close((service, db));
}
