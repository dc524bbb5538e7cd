use std::sync::Arc;

use super::VectorIndex;
use crate::memory::index::test_support::{Rng, doc, normalize};
use crate::memory::index::{IndexError, IndexOp, LATEST, SearchFilter};

const DIMS: usize = 16;
const NOW: u64 = 1_000;

fn in_account(account: &str) -> SearchFilter<'_> {
    SearchFilter {
        account,
        namespace: None,
        tags: &[],
        now_ms: NOW,
        written_by: LATEST,
    }
}

fn open(dir: &tempfile::TempDir) -> VectorIndex {
    VectorIndex::open(dir.path(), DIMS).unwrap()
}

fn ids(hits: &[(u64, f32)]) -> Vec<u64> {
    let mut ids: Vec<u64> = hits.iter().map(|h| h.0).collect();
    ids.sort_unstable();
    ids
}

/// `n` random docs with ids `first..first + n` in one account/namespace.
fn random_docs(rng: &mut Rng, first: u64, n: u64, account: &str, ns: &str) -> Vec<IndexOp> {
    (first..first + n)
        .map(|id| IndexOp::Upsert(doc(id, account, ns, rng.unit_vector(DIMS))))
        .collect()
}

fn embedding(ops: &[IndexOp], id: u64) -> Vec<f32> {
    ops.iter()
        .find_map(|op| match op {
            IndexOp::Upsert(d) if d.id == id => Some(d.embedding.clone()),
            _ => None,
        })
        .unwrap()
}

#[test]
fn nearest_is_the_identical_vector() {
    let dir = tempfile::tempdir().unwrap();
    let idx = open(&dir);
    let mut rng = Rng::new(1);
    let small = random_docs(&mut rng, 1, 200, "small", "n");
    let big = random_docs(&mut rng, 1_000, 3_000, "big", "n");
    idx.apply(&small, 1).unwrap();
    idx.apply(&big, 2).unwrap();
    for (account, ops) in [("small", &small), ("big", &big)] {
        for op in ops.iter().step_by(97) {
            let IndexOp::Upsert(d) = op else {
                unreachable!()
            };
            let hits = idx.search(&in_account(account), &d.embedding, 5).unwrap();
            assert_eq!(hits.len(), 5);
            assert_eq!(hits[0].0, d.id, "{account}");
            assert!((hits[0].1 - 1.0).abs() < 1e-2, "{}", hits[0].1);
            assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1), "best first");
        }
    }
}

#[test]
fn accounts_are_isolated() {
    let dir = tempfile::tempdir().unwrap();
    let idx = open(&dir);
    let v = Rng::new(2).unit_vector(DIMS);
    let ops = [
        IndexOp::Upsert(doc(1, "alice", "n", v.clone())),
        IndexOp::Upsert(doc(2, "bob", "n", v.clone())),
    ];
    idx.apply(&ops, 1).unwrap();
    assert_eq!(ids(&idx.search(&in_account("alice"), &v, 10).unwrap()), [1]);
    assert_eq!(ids(&idx.search(&in_account("bob"), &v, 10).unwrap()), [2]);
    assert!(idx.search(&in_account("carol"), &v, 10).unwrap().is_empty());
    assert!(idx.vector("bob", 1).is_none());
    assert!(idx.vector("alice", 1).is_some());
}

/// Docs 0..n in account "a": namespace "x" for even ids, tag "t" for ids divisible by 3,
/// expired for ids divisible by 5. All vectors are near one another.
fn filtered_fixture(idx: &VectorIndex, n: u64) -> Vec<f32> {
    let mut rng = Rng::new(3);
    let center = rng.unit_vector(DIMS);
    let ops: Vec<IndexOp> = (0..n)
        .map(|id| {
            let mut v: Vec<f32> = center.iter().map(|c| c + 0.3 * rng.signed_unit()).collect();
            normalize(&mut v);
            let mut d = doc(id, "a", if id % 2 == 0 { "x" } else { "y" }, v);
            if id % 3 == 0 {
                d.tags = vec!["t".into(), "u".into()];
            }
            d.expires_at = (id % 5 == 0).then_some(NOW);
            IndexOp::Upsert(d)
        })
        .collect();
    idx.apply(&ops, 1).unwrap();
    center
}

fn check_filters(n: u64, k: usize) {
    let dir = tempfile::tempdir().unwrap();
    let idx = open(&dir);
    let center = filtered_fixture(&idx, n);
    let tags = ["t".to_string()];
    let mut f = in_account("a");
    f.namespace = Some("x");
    f.tags = &tags;
    let hits = idx.search(&f, &center, k).unwrap();
    assert_eq!(hits.len(), k.min((n as usize).div_ceil(6) * 4 / 5));
    assert!(
        hits.iter().all(|(id, _)| id % 6 == 0 && id % 5 != 0),
        "{hits:?}"
    );
    // Expired docs reappear when "now" is before their expiry.
    f.now_ms = NOW - 1;
    let hits = idx.search(&f, &center, 1_000).unwrap();
    assert!(hits.iter().any(|(id, _)| id % 5 == 0));
    // Unknown names match nothing rather than failing.
    f.namespace = Some("nope");
    assert!(idx.search(&f, &center, k).unwrap().is_empty());
    let unknown = ["t".to_string(), "zzz".to_string()];
    f.namespace = None;
    f.tags = &unknown;
    assert!(idx.search(&f, &center, k).unwrap().is_empty());
}

#[test]
fn namespace_tag_and_expiry_filters_on_the_scan_path() {
    // 300 docs: the rarest filter ("t") admits 100, a selective filter: exact scan.
    check_filters(300, 1_000);
}

#[test]
fn namespace_tag_and_expiry_filters_on_the_graph_path() {
    // 12k docs: the rarest filter admits 4k, above the exact-scan limit: HNSW predicate.
    check_filters(12_000, 20);
}

#[test]
fn remove_and_upsert_replace() {
    let dir = tempfile::tempdir().unwrap();
    let idx = open(&dir);
    let mut rng = Rng::new(4);
    let (v1, v2) = (rng.unit_vector(DIMS), rng.unit_vector(DIMS));
    idx.apply(&[IndexOp::Upsert(doc(1, "a", "n", v1.clone()))], 1)
        .unwrap();
    idx.apply(&[IndexOp::Upsert(doc(1, "a", "m", v2.clone()))], 2)
        .unwrap();
    let hits = idx.search(&in_account("a"), &v2, 5).unwrap();
    assert_eq!(ids(&hits), [1]);
    assert!(hits[0].1 > 0.99);
    let mut f = in_account("a");
    f.namespace = Some("n");
    assert!(
        idx.search(&f, &v1, 5).unwrap().is_empty(),
        "old namespace gone"
    );
    let remove = |id| IndexOp::Remove {
        id,
        account: "a".into(),
    };
    idx.apply(&[remove(1), remove(99)], 3).unwrap();
    assert!(idx.search(&in_account("a"), &v2, 5).unwrap().is_empty());
    assert!(idx.vector("a", 1).is_none());
    let other_account = IndexOp::Remove {
        id: 1,
        account: "nobody".into(),
    };
    idx.apply(&[other_account], 4).unwrap();
}

#[test]
fn checkpoint_then_reopen_restores_docs_metadata_and_watermark() {
    let dir = tempfile::tempdir().unwrap();
    let center = {
        let idx = open(&dir);
        assert_eq!(idx.watermark(), 0);
        let center = filtered_fixture(&idx, 300);
        idx.apply(&[], 17).unwrap();
        assert_eq!(idx.watermark(), 0, "not durable before checkpoint");
        idx.checkpoint().unwrap();
        assert_eq!(idx.watermark(), 17);
        center
    };
    let idx = open(&dir);
    assert_eq!(idx.watermark(), 17);
    let tags = ["t".to_string()];
    let mut f = in_account("a");
    f.namespace = Some("x");
    f.tags = &tags;
    let hits = idx.search(&f, &center, 1_000).unwrap();
    assert_eq!(hits.len(), 40);
    assert!(hits.iter().all(|(id, _)| id % 6 == 0 && id % 5 != 0));
    let v = idx.vector("a", 7).unwrap();
    assert_eq!(idx.search(&in_account("a"), &v, 1).unwrap()[0].0, 7);
    // A reloaded graph keeps accepting writes beyond its loaded capacity.
    let mut rng = Rng::new(5);
    idx.apply(&random_docs(&mut rng, 1_000, 500, "a", "x"), 18)
        .unwrap();
}

#[test]
fn apply_without_checkpoint_is_lost_on_reopen_with_the_old_watermark() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(6);
    let first = random_docs(&mut rng, 1, 10, "a", "n");
    let second = random_docs(&mut rng, 11, 10, "a", "n");
    {
        let idx = open(&dir);
        idx.apply(&first, 5).unwrap();
        idx.checkpoint().unwrap();
        idx.apply(&second, 6).unwrap();
        assert_eq!(
            idx.search(&in_account("a"), &embedding(&second, 11), 1)
                .unwrap()[0]
                .0,
            11
        );
    }
    let idx = open(&dir);
    assert_eq!(idx.watermark(), 5, "replay starts after 5");
    let hits = idx
        .search(&in_account("a"), &embedding(&second, 11), 100)
        .unwrap();
    assert_eq!(ids(&hits), (1..=10).collect::<Vec<_>>());
    idx.apply(&second, 6).unwrap();
    idx.checkpoint().unwrap();
    drop(idx);
    let idx = open(&dir);
    assert_eq!(idx.watermark(), 6);
    assert_eq!(
        idx.search(&in_account("a"), &embedding(&second, 11), 100)
            .unwrap()
            .len(),
        20
    );
}

#[test]
fn neighbours_respect_min_similarity_and_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let idx = open(&dir);
    let mut rng = Rng::new(7);
    let v = rng.unit_vector(DIMS);
    let mut close: Vec<f32> = v.iter().map(|x| x + 0.05 * rng.signed_unit()).collect();
    normalize(&mut close);
    let far: Vec<f32> = v.iter().map(|x| -x).collect();
    let ops = [
        IndexOp::Upsert(doc(1, "a", "n", v.clone())),
        IndexOp::Upsert(doc(2, "a", "n", close)),
        IndexOp::Upsert(doc(3, "a", "n", far)),
        IndexOp::Upsert(doc(4, "a", "other", v.clone())),
        IndexOp::Upsert(doc(5, "b", "n", v)),
    ];
    idx.apply(&ops, 1).unwrap();
    let hits = idx.neighbours("a", 1, 10, 0.9).unwrap();
    assert_eq!(ids(&hits), [2]);
    assert!(hits[0].1 >= 0.9);
    // f16 storage may put the exact opposite a hair below -1.
    assert_eq!(ids(&idx.neighbours("a", 1, 10, -2.0).unwrap()), [2, 3]);
    assert_eq!(idx.neighbours("a", 1, 1, -2.0).unwrap()[0].0, 2);
    assert!(idx.neighbours("a", 42, 10, 0.0).unwrap().is_empty());
    assert!(idx.neighbours("zz", 1, 10, 0.0).unwrap().is_empty());
}

#[test]
fn many_small_accounts() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(8);
    let accounts: Vec<String> = (0..200).map(|a| format!("acct/{a} ü \u{0}")).collect();
    let mut all = Vec::new();
    {
        let idx = open(&dir);
        for (a, account) in accounts.iter().enumerate() {
            let ops = random_docs(&mut rng, a as u64 * 100, 50, account, "n");
            idx.apply(&ops, a as u64 + 1).unwrap();
            all.push(ops);
        }
        idx.checkpoint().unwrap();
    }
    let idx = open(&dir);
    assert_eq!(idx.watermark(), 200);
    for (a, account) in accounts.iter().enumerate() {
        let probe = a as u64 * 100 + 7;
        let hits = idx
            .search(&in_account(account), &embedding(&all[a], probe), 100)
            .unwrap();
        assert_eq!(hits.len(), 50);
        assert_eq!(hits[0].0, probe);
        assert!(hits.iter().all(|(id, _)| id / 100 == a as u64));
    }
}

#[test]
fn wrong_dimensions_are_rejected_and_reopening_with_new_dims_starts_over() {
    let dir = tempfile::tempdir().unwrap();
    {
        let idx = open(&dir);
        let bad = IndexOp::Upsert(doc(1, "a", "n", vec![1.0; DIMS + 1]));
        let good = IndexOp::Upsert(doc(2, "a", "n", Rng::new(9).unit_vector(DIMS)));
        let err = idx.apply(&[good, bad], 1).unwrap_err();
        assert!(matches!(
            err,
            IndexError::Dimensions {
                expected: DIMS,
                got: 17
            }
        ));
        assert!(
            idx.vector("a", 2).is_none(),
            "nothing of a rejected batch is applied"
        );
        assert!(idx.search(&in_account("a"), &[1.0], 1).is_err());
        let good = IndexOp::Upsert(doc(2, "a", "n", Rng::new(9).unit_vector(DIMS)));
        idx.apply(&[good], 3).unwrap();
        idx.checkpoint().unwrap();
    }
    let idx = VectorIndex::open(dir.path(), DIMS * 2).unwrap();
    assert_eq!(idx.watermark(), 0);
    assert!(idx.vector("a", 2).is_none());
}

#[test]
fn clear_removes_everything_durably() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(10);
    let ops = random_docs(&mut rng, 1, 20, "a", "n");
    {
        let idx = open(&dir);
        idx.apply(&ops, 9).unwrap();
        idx.checkpoint().unwrap();
        idx.clear().unwrap();
        assert_eq!(idx.watermark(), 0);
        assert!(
            idx.search(&in_account("a"), &embedding(&ops, 1), 5)
                .unwrap()
                .is_empty()
        );
    }
    let idx = open(&dir);
    assert_eq!(idx.watermark(), 0);
    assert!(idx.vector("a", 1).is_none());
}

#[test]
fn concurrent_searches_while_writing() {
    let dir = tempfile::tempdir().unwrap();
    let idx = Arc::new(open(&dir));
    let mut rng = Rng::new(11);
    let ops = random_docs(&mut rng, 1, 3_000, "a", "n");
    idx.apply(&ops[..1_500], 1).unwrap();
    let readers: Vec<_> = (0..6)
        .map(|t| {
            let idx = Arc::clone(&idx);
            std::thread::spawn(move || {
                let mut rng = Rng::new(100 + t);
                for _ in 0..300 {
                    let hits = idx
                        .search(&in_account("a"), &rng.unit_vector(DIMS), 10)
                        .unwrap();
                    assert_eq!(hits.len(), 10);
                }
            })
        })
        .collect();
    for (i, chunk) in ops[1_500..].chunks(100).enumerate() {
        idx.apply(chunk, i as u64 + 2).unwrap();
        if i % 5 == 0 {
            idx.checkpoint().unwrap();
        }
    }
    for r in readers {
        r.join().unwrap();
    }
}
