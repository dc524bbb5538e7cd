use std::collections::BTreeMap;

use redb::Database;

use super::*;
use crate::memory::{
    MemoryError,
    backend::{ListPage, Merge},
    derived::Changes,
    index::IndexOp,
    input::PutInput,
    record::{Door, Provenance, Source},
};

/// A page size that takes every version.
const ALL: usize = usize::MAX;

fn db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("db")).unwrap();
    init(&db).unwrap();
    (dir, db)
}

fn input(account: &str, ns: &str, key: &str, value: &str) -> PutInput {
    PutInput {
        account: account.into(),
        key: key.into(),
        value: value.into(),
        namespace: ns.into(),
        tags: vec![],
        importance: 5.0,
        expires_in_days: None,
        observed_at: None,
        provenance: Provenance::door(Door::Rest),
    }
}

/// Runs `f` in one committed batch at `now`.
fn batch<T>(db: &Database, now: u64, f: impl FnOnce(&mut Batch) -> T) -> (T, Changes) {
    let txn = db.begin_write().unwrap();
    let mut b = Batch::open(&txn, now).unwrap();
    let out = f(&mut b);
    let (ops, _) = b.finish().unwrap();
    txn.commit().unwrap();
    (out, ops)
}

#[test]
fn versioning_idempotency_and_history() {
    let (_d, db) = db();
    let (first, ops) = batch(&db, 10, |b| {
        b.put(&input("a", "default", "k", "v1"), &[1.0], 10)
    });
    let first = first.unwrap();
    assert!(first.created && first.memory.version == 1);
    assert_eq!(ops.live.len(), 1);
    assert!(
        ops.past.is_empty(),
        "a first version without expiry has no past"
    );
    let (same, ops) = batch(&db, 20, |b| {
        b.put(&input("a", "default", "k", "v1"), &[1.0], 10)
    });
    let same = same.unwrap();
    assert!(!same.created);
    assert_eq!(same.memory.memory_id, first.memory.memory_id);
    assert!(ops.is_empty());
    let (second, ops) = batch(&db, 30, |b| {
        b.put(&input("a", "default", "k", "v2"), &[1.0], 10)
    });
    let second = second.unwrap().memory;
    assert_eq!(
        (second.version, second.created_at, second.updated_at),
        (2, 10, 30)
    );
    assert_eq!(
        ops.live.len(),
        2,
        "old version removed from the live indexes, new one added"
    );
    assert!(
        matches!(&ops.past[..], [IndexOp::Upsert(d)]
            if d.id == first.memory.id && d.written_at == 10 && d.expires_at == Some(30)),
        "the old version enters the past, live from 10 until 30: {:?}",
        ops.past
    );
    let r = Reader::new(&db).unwrap();
    let history = r.history("a", "default", "k", None, ALL).unwrap().memories;
    assert_eq!(history.len(), 2);
    assert!(history[0].is_latest && !history[1].is_latest);
    assert_eq!(history[1].deleted_at, None);
    assert_eq!(r.namespaces("a").unwrap(), vec![("default".to_string(), 1)]);
}

#[test]
fn soft_and_hard_delete() {
    let (_d, db) = db();
    batch(&db, 1, |b| {
        b.put(&input("a", "n", "k", "v1"), &[1.0], 10).unwrap()
    });
    batch(&db, 2, |b| {
        b.put(&input("a", "n", "k", "v2"), &[1.0], 10).unwrap()
    });
    let (gone, _) = batch(&db, 3, |b| b.soft_delete("a", "n", "k", None));
    assert_eq!(gone.unwrap().deleted_at, Some(3));
    let r = Reader::new(&db).unwrap();
    assert!(r.live("a", "n", "k", 4).unwrap().is_none());
    assert!(r.namespaces("a").unwrap().is_empty());
    let h = r.history("a", "n", "k", None, ALL).unwrap().memories;
    // Paged: the newest, then the one below it, then no more; a cursor of another memory
    // reads nothing.
    let first = r.history("a", "n", "k", None, 1).unwrap();
    assert_eq!(first.memories[0].id, h[0].id);
    assert_eq!(first.next_before, Some(h[0].id));
    let rest = r.history("a", "n", "k", first.next_before, 1).unwrap();
    assert_eq!(
        rest.memories.iter().map(|m| m.id).collect::<Vec<_>>(),
        [h[1].id]
    );
    assert_eq!(rest.next_before, None, "the last page");
    let foreign = r.history("a", "n", "other", first.next_before, 10).unwrap();
    assert!(foreign.memories.is_empty());
    assert!(h.iter().all(|m| !m.is_latest));
    drop(r);
    let (again, _) = batch(&db, 4, |b| b.soft_delete("a", "n", "k", None));
    assert!(matches!(again, Err(MemoryError::NotFound { .. })));
    let (removed, _) = batch(&db, 5, |b| b.hard_delete("a", "n", "k"));
    assert_eq!(removed.unwrap(), 2);
    let r = Reader::new(&db).unwrap();
    assert!(
        r.history("a", "n", "k", None, ALL)
            .unwrap()
            .memories
            .is_empty()
    );
    assert!(r.memory(1).unwrap().is_none() && r.embedding(1).unwrap().is_none());
}

#[test]
fn quota_counts_live_memories_across_namespaces() {
    let (_d, db) = db();
    batch(&db, 1, |b| {
        b.put(&input("a", "x", "k1", "v"), &[1.0], 2).unwrap();
        b.put(&input("a", "y", "k2", "v"), &[1.0], 2).unwrap();
        // A new version of a live key doesn't need room.
        b.put(&input("a", "y", "k2", "v2"), &[1.0], 2).unwrap();
        let err = b.put(&input("a", "x", "k3", "v"), &[1.0], 2).unwrap_err();
        assert!(matches!(
            err,
            MemoryError::QuotaExceeded { limit: 2, used: 2 }
        ));
        // Another account has its own pool.
        b.put(&input("b", "x", "k3", "v"), &[1.0], 2).unwrap();
        b.soft_delete("a", "x", "k1", None).unwrap();
        b.put(&input("a", "x", "k3", "v"), &[1.0], 2).unwrap();
    });
}

#[test]
fn expiry_reaps_on_the_next_write() {
    let (_d, db) = db();
    let mut i = input("a", "n", "k", "v");
    i.expires_in_days = Some(1.0 / 86_400.0); // one second
    batch(&db, 1_000, |b| b.put(&i, &[1.0], 1).unwrap());
    let r = Reader::new(&db).unwrap();
    assert!(r.live("a", "n", "k", 1_999).unwrap().is_some());
    assert!(r.live("a", "n", "k", 2_000).unwrap().is_none());
    assert!(r.has_due_expiries("a", 2_000).unwrap());
    drop(r);
    // Quota 1 is free again once the expired memory is reaped by the write.
    let (out, ops) = batch(&db, 2_000, |b| {
        b.put(&input("a", "n", "other", "v"), &[1.0], 1)
    });
    out.unwrap();
    assert!(matches!(ops.live[0], IndexOp::Remove { id: 1, .. }));
    assert!(
        !ops.past
            .iter()
            .any(|op| matches!(op, IndexOp::Remove { id: 1, .. })),
        "the expired version stays in the past, where its write put it"
    );
    let r = Reader::new(&db).unwrap();
    assert!(!r.has_due_expiries("a", 2_000).unwrap());
    assert_eq!(r.namespaces("a").unwrap(), vec![("n".to_string(), 1)]);
}

#[test]
fn list_pages_newest_first_with_filters() {
    let (_d, db) = db();
    batch(&db, 1, |b| {
        for n in 0..5 {
            let ns = if n % 2 == 0 { "even" } else { "odd" };
            b.put(&input("a", ns, &format!("k{n}"), "v"), &[1.0], 100)
                .unwrap();
        }
        b.put(&input("b", "even", "k9", "v"), &[1.0], 100).unwrap();
    });
    let r = Reader::new(&db).unwrap();
    let keys = |p: &ListPage| p.memories.iter().map(|m| m.key.clone()).collect::<Vec<_>>();
    let p1 = r.list("a", None, 2, 5, |_| true).unwrap();
    assert_eq!(keys(&p1), ["k4", "k3"]);
    let p2 = r.list("a", p1.next_before, 2, 5, |_| true).unwrap();
    assert_eq!(keys(&p2), ["k2", "k1"]);
    let p3 = r.list("a", p2.next_before, 2, 5, |_| true).unwrap();
    assert_eq!((keys(&p3), p3.next_before), (vec!["k0".to_string()], None));
    let even = r.list("a", None, 10, 5, |m| m.namespace == "even").unwrap();
    assert_eq!(keys(&even), ["k4", "k2", "k0"]);
    assert_eq!(r.all_live("a", 5, |_| true).unwrap().len(), 5);
}

#[test]
fn oplog_replay_and_truncation() {
    let (_d, db) = db();
    batch(&db, 1, |b| {
        b.put(&input("a", "n", "k", "v1"), &[1.0], 10).unwrap();
        b.put(&input("a", "n", "k", "v2"), &[1.0], 10).unwrap();
    });
    let r = Reader::new(&db).unwrap();
    let (ids, last) = r.oplog_after(0).unwrap().unwrap();
    assert_eq!(last, 3);
    assert_eq!(ids, vec![(1, "a".to_string()), (2, "a".to_string())]);
    drop(r);
    batch(&db, 2, |b| b.truncate_oplog(2).unwrap());
    let r = Reader::new(&db).unwrap();
    assert!(
        r.oplog_after(1).unwrap().is_none(),
        "truncated history needs a rebuild"
    );
    assert_eq!(
        r.oplog_after(2).unwrap().unwrap().0,
        vec![(2, "a".to_string())]
    );
    assert_eq!(r.all_counted_ids().unwrap(), vec![2]);
}

fn merge(summary: PutInput, originals: &[u64]) -> Merge {
    Merge {
        summary,
        embedding: vec![1.0],
        originals: originals.to_vec(),
    }
}

#[test]
fn consolidation_supersedes_and_links_in_one_batch() {
    let (_d, db) = db();
    let ((), _) = batch(&db, 1, |b| {
        for k in ["a", "b", "c", "keep"] {
            b.put(&input("acct", "n", k, k), &[1.0], 4).unwrap();
        }
    });
    let mut summary = input("acct", "n", "abc_summary", "a b c");
    summary.provenance = Provenance {
        replaced: vec!["stale".into()],
        ..Provenance::door(Door::Consolidation)
    };
    // Quota 4 is full, yet the batch needs no room: it replaces three with one.
    let (merged, ops) = batch(&db, 2, |b| {
        b.consolidate("acct", &[merge(summary.clone(), &[1, 2, 3])])
    });
    let merged = merged.unwrap();
    assert_eq!(merged.len(), 1);
    let written = &merged[0].summary;
    assert_eq!(
        (written.key.as_str(), written.source),
        ("abc_summary", Source::Consolidated)
    );
    assert_eq!(merged[0].replaced.len(), 3);
    let replaced: Vec<String> = merged[0]
        .replaced
        .iter()
        .map(|m| m.memory_id.clone())
        .collect();
    assert_eq!(written.provenance.as_ref().unwrap().replaced, replaced);
    assert_eq!(
        ops.live.len(),
        4,
        "three removed from the live indexes, one added"
    );
    assert_eq!(ops.past.len(), 3, "the three originals enter the past");
    let r = Reader::new(&db).unwrap();
    for id in 1..=3 {
        let original = r.memory(id).unwrap().unwrap();
        assert!(!original.is_latest && original.deleted_at == Some(2));
        assert_eq!(
            original.consolidated_into.as_ref(),
            Some(&written.memory_id)
        );
    }
    let live: Vec<String> = r
        .all_live("acct", 3, |_| true)
        .unwrap()
        .into_iter()
        .map(|m| m.key)
        .collect();
    assert_eq!(live, ["keep", "abc_summary"]);
    assert_eq!(r.namespaces("acct").unwrap(), vec![("n".to_string(), 2)]);
}

#[test]
fn consolidation_keys_follow_versioning() {
    let (_d, db) = db();
    batch(&db, 1, |b| {
        for k in ["a", "b", "c", "d", "e", "topic"] {
            b.put(&input("acct", "n", k, k), &[1.0], 10).unwrap();
        }
    });
    // One summary reuses an original's key, the other a live key outside its cluster.
    let (merged, _) = batch(&db, 2, |b| {
        b.consolidate(
            "acct",
            &[
                merge(input("acct", "n", "a", "a and b"), &[1, 2]),
                merge(input("acct", "n", "topic", "c d e"), &[3, 4, 5]),
            ],
        )
    });
    let merged = merged.unwrap();
    assert_eq!(
        (merged[0].summary.version, merged[0].summary.created_at),
        (2, 2)
    );
    assert_eq!(
        merged[1].summary.version, 2,
        "a new version of the live key"
    );
    assert_eq!(
        merged[1].summary.created_at, 1,
        "created_at kept across versions"
    );
    let r = Reader::new(&db).unwrap();
    let history = r.history("acct", "n", "a", None, ALL).unwrap().memories;
    assert_eq!(history.len(), 2);
    assert_eq!(
        history[1].consolidated_into.as_ref(),
        Some(&history[0].memory_id)
    );
    let live: BTreeMap<String, String> = r
        .all_live("acct", 3, |_| true)
        .unwrap()
        .into_iter()
        .map(|m| (m.key, m.value))
        .collect();
    assert_eq!(
        live,
        BTreeMap::from([
            ("a".to_string(), "a and b".to_string()),
            ("topic".to_string(), "c d e".to_string()),
        ])
    );
}

#[test]
fn an_invalid_summary_changes_nothing() {
    let (_d, db) = db();
    batch(&db, 1, |b| {
        b.put(&input("acct", "n", "a", "a"), &[1.0], 10).unwrap();
        b.put(&input("acct", "n", "b", "b"), &[1.0], 10).unwrap();
    });
    let (out, ops) = batch(&db, 2, |b| {
        b.consolidate(
            "acct",
            &[
                merge(input("acct", "n", "fine", "v"), &[1]),
                merge(input("acct", "n", "Not-Snake", "v"), &[2]),
            ],
        )
    });
    assert!(matches!(
        out,
        Err(MemoryError::Invalid { field: "key", .. })
    ));
    assert!(ops.is_empty());
    let r = Reader::new(&db).unwrap();
    assert_eq!(r.all_live("acct", 3, |_| true).unwrap().len(), 2);
}

/// Random operations against a reference model of the live set.
#[test]
fn matches_a_reference_model() {
    let (_d, db) = db();
    let mut model: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    const LIMIT: u64 = 12;
    for step in 0..600u64 {
        let ns = format!("ns{}", rand(3));
        let key = format!("k{}", rand(8));
        let value = format!("v{}", rand(3));
        let now = 100 + step;
        let op = rand(11);
        // A consolidation folds up to three live keys of `ns` into `key`.
        let originals: Vec<(String, String)> = model
            .keys()
            .filter(|(n, _)| *n == ns)
            .take(3)
            .cloned()
            .collect();
        let (result, _) = batch(&db, now, |b| match op {
            0..=5 => b
                .put(&input("acct", &ns, &key, &value), &[1.0, 0.0], LIMIT)
                .map(|_| ()),
            6 | 7 => b.soft_delete("acct", &ns, &key, None).map(|_| ()),
            8 => b.hard_delete("acct", &ns, &key).map(|_| ()),
            9 => b.touch("acct", &ns, &key).map(|_| ()),
            _ => {
                let r = Reader::new(&db).unwrap();
                let ids = originals
                    .iter()
                    .map(|(n, k)| r.live("acct", n, k, now).unwrap().unwrap().id)
                    .collect::<Vec<_>>();
                let summary = input("acct", &ns, &key, &value);
                b.consolidate("acct", &[merge(summary, &ids)]).map(|_| ())
            }
        });
        let k = (ns.clone(), key.clone());
        if op == 10 {
            assert!(result.is_ok(), "consolidation at step {step}: {result:?}");
            for original in &originals {
                model.remove(original);
            }
            model.insert(k.clone(), value.clone());
        }
        match op {
            10 => {}
            0..=5 => {
                let fits = model.contains_key(&k) || (model.len() as u64) < LIMIT;
                assert_eq!(result.is_ok(), fits, "put at step {step}");
                if fits {
                    model.insert(k, value);
                }
            }
            8 => {
                model.remove(&k);
            }
            _ => assert_eq!(result.is_ok(), model.contains_key(&k), "step {step}"),
        }
        if op == 6 || op == 7 {
            model.remove(&(ns, key));
        }
        let r = Reader::new(&db).unwrap();
        let live: BTreeMap<_, _> = r
            .all_live("acct", now, |_| true)
            .unwrap()
            .into_iter()
            .map(|m| ((m.namespace, m.key), m.value))
            .collect();
        assert_eq!(live, model, "step {step}");
        let counted: u64 = r.namespaces("acct").unwrap().iter().map(|(_, c)| c).sum();
        assert_eq!(counted, model.len() as u64);
    }
}
