use super::KeywordIndex;
use crate::memory::index::{IndexDoc, IndexOp, LATEST, SearchFilter};

const NOW: u64 = 1_000_000;

fn doc(id: u64, account: &str, namespace: &str, value: &str, tags: &[&str]) -> IndexDoc {
    IndexDoc {
        id,
        account: account.into(),
        namespace: namespace.into(),
        key: format!("key-{id}"),
        value: value.into(),
        tags: tags.iter().map(|t| t.to_string()).collect(),
        expires_at: None,
        written_at: id,
        embedding: Vec::new(),
    }
}

fn upserts(docs: Vec<IndexDoc>) -> Vec<IndexOp> {
    docs.into_iter().map(IndexOp::Upsert).collect()
}

fn in_account(account: &str) -> SearchFilter<'_> {
    SearchFilter {
        account,
        namespace: None,
        tags: &[],
        now_ms: NOW,
        written_by: LATEST,
    }
}

fn ids(idx: &KeywordIndex, filter: &SearchFilter, query: &str) -> Vec<u64> {
    let mut ids: Vec<u64> = idx
        .search(filter, query, 100)
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    ids.sort_unstable();
    ids
}

/// Upserts of account `a`'s docs 1–3 (two match "apple", two "cherry", one both) and `and`.
fn orchard(and: IndexDoc) -> Vec<IndexOp> {
    upserts(vec![
        doc(1, "a", "n", "apple cherry pie", &[]),
        doc(2, "a", "n", "an apple a day keeps the doctor away", &[]),
        doc(3, "a", "n", "cherry blossom in spring", &[]),
        and,
    ])
}

fn open() -> (tempfile::TempDir, KeywordIndex) {
    let dir = tempfile::tempdir().unwrap();
    let idx = KeywordIndex::open(dir.path()).unwrap();
    (dir, idx)
}

#[test]
fn accounts_are_isolated() {
    let (_dir, idx) = open();
    let ops = upserts(vec![
        doc(1, "alice", "n", "the blue whale sings", &[]),
        doc(2, "bob", "n", "the blue whale sings", &[]),
        doc(3, "alice", "n", "a red fox", &[]),
    ]);
    idx.apply(&ops, 1).unwrap();
    assert_eq!(ids(&idx, &in_account("alice"), "blue whale"), [1]);
    assert_eq!(ids(&idx, &in_account("bob"), "blue whale"), [2]);
    assert!(ids(&idx, &in_account("carol"), "blue whale").is_empty());
    // Account-scoped terms must not be confusable: ("a", "bxyz") vs ("ab", "xyz").
    let ops = upserts(vec![
        doc(4, "a", "n", "bxyz", &[]),
        doc(5, "ab", "n", "xyz", &[]),
    ]);
    idx.apply(&ops, 2).unwrap();
    assert_eq!(ids(&idx, &in_account("ab"), "xyz bxyz"), [5]);
    assert_eq!(ids(&idx, &in_account("a"), "xyz bxyz"), [4]);
}

#[test]
fn namespace_and_tags_must_all_match() {
    let (_dir, idx) = open();
    let ops = upserts(vec![
        doc(1, "a", "work", "meeting notes", &["x", "y"]),
        doc(2, "a", "work", "meeting notes", &["x"]),
        doc(3, "a", "home", "meeting notes", &["x", "y"]),
    ]);
    idx.apply(&ops, 1).unwrap();
    let tags = ["x".to_string(), "y".to_string()];
    let mut f = in_account("a");
    f.namespace = Some("work");
    assert_eq!(ids(&idx, &f, "meeting"), [1, 2]);
    f.tags = &tags;
    assert_eq!(ids(&idx, &f, "meeting"), [1]);
    f.namespace = None;
    assert_eq!(ids(&idx, &f, "meeting"), [1, 3]);
    f.tags = &tags[..1];
    assert_eq!(ids(&idx, &f, "meeting"), [1, 2, 3]);
}

#[test]
fn expired_docs_are_excluded() {
    let (_dir, idx) = open();
    let mut expired = doc(1, "a", "n", "old news", &[]);
    expired.expires_at = Some(NOW);
    let mut later = doc(2, "a", "n", "old news", &[]);
    later.expires_at = Some(NOW + 1);
    idx.apply(
        &upserts(vec![expired, later, doc(3, "a", "n", "old news", &[])]),
        1,
    )
    .unwrap();
    assert_eq!(ids(&idx, &in_account("a"), "news"), [2, 3]);
}

#[test]
fn upsert_replaces_and_remove_removes() {
    let (_dir, idx) = open();
    idx.apply(&upserts(vec![doc(7, "a", "n", "apples", &[])]), 1)
        .unwrap();
    idx.apply(&upserts(vec![doc(7, "a", "n", "pears", &[])]), 2)
        .unwrap();
    assert!(ids(&idx, &in_account("a"), "apples").is_empty());
    assert_eq!(ids(&idx, &in_account("a"), "pears"), [7]);
    let remove = IndexOp::Remove {
        id: 7,
        account: "a".into(),
    };
    idx.apply(&[remove], 3).unwrap();
    assert!(ids(&idx, &in_account("a"), "pears").is_empty());
}

#[test]
fn watermark_survives_reopen_and_clear_resets_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let idx = KeywordIndex::open(dir.path()).unwrap();
        assert_eq!(idx.watermark(), 0);
        idx.apply(&upserts(vec![doc(1, "a", "n", "kept", &[])]), 42)
            .unwrap();
        idx.apply(&[], 41).unwrap();
        assert_eq!(idx.watermark(), 0, "durable only after a checkpoint");
        idx.checkpoint().unwrap();
        assert_eq!(idx.watermark(), 42, "watermark never moves backwards");
    }
    let idx = KeywordIndex::open(dir.path()).unwrap();
    assert_eq!(idx.watermark(), 42);
    assert_eq!(ids(&idx, &in_account("a"), "kept"), [1]);
    idx.clear().unwrap();
    assert_eq!(idx.watermark(), 0);
    assert!(ids(&idx, &in_account("a"), "kept").is_empty());
    drop(idx);
    assert_eq!(KeywordIndex::open(dir.path()).unwrap().watermark(), 0);
}

#[test]
fn query_syntax_is_never_parsed() {
    let (_dir, idx) = open();
    idx.apply(&upserts(vec![doc(1, "a", "n", "foo and bar", &[])]), 1)
        .unwrap();
    let f = in_account("a");
    assert_eq!(ids(&idx, &f, "\"foo AND (bar:"), [1]);
    for q in [
        "",
        "   ",
        "(((",
        "\"",
        "a:b:c",
        "*",
        "the and of",
        "-+!^~[]{}",
    ] {
        assert!(idx.search(&f, q, 5).unwrap().is_empty(), "{q:?}");
    }
    assert!(idx.search(&f, "foo", 0).unwrap().is_empty());
}

#[test]
fn stemming_matches_inflections_and_ranks_by_bm25() {
    let (_dir, idx) = open();
    let ops = upserts(vec![
        doc(1, "a", "n", "she runs every morning", &[]),
        doc(2, "a", "n", "running running running shoes", &[]),
        doc(3, "a", "n", "completely unrelated", &[]),
    ]);
    idx.apply(&ops, 1).unwrap();
    let hits = idx.search(&in_account("a"), "Running", 10).unwrap();
    let got: Vec<u64> = hits.iter().map(|h| h.0).collect();
    assert_eq!(got, [2, 1], "more occurrences rank first");
    assert!(hits[0].1 > hits[1].1 && hits[1].1 > 0.0);
    // The key field is searched too: "key-3" is the terms "key" (every doc) and "3".
    assert_eq!(idx.search(&in_account("a"), "key-3", 10).unwrap()[0].0, 3);
}

#[test]
fn filters_hold_on_both_the_pruned_union_and_the_rare_filter_paths() {
    let (_dir, idx) = open();
    // 11k docs in "x" tagged "t" (too common to lead the query), 11k in "y";
    // 10 docs of "x" also tagged "rare"; every 7th doc expired.
    let ops: Vec<IndexOp> = (0..22_000u64)
        .map(|id| {
            let mut tags = vec!["t"];
            if id % 2 == 0 && id % 1000 == 0 {
                tags.push("rare");
            }
            let ns = if id % 2 == 0 { "x" } else { "y" };
            let mut d = doc(id, "a", ns, "common words here", &tags);
            d.expires_at = (id % 7 == 0).then_some(NOW);
            IndexOp::Upsert(d)
        })
        .collect();
    idx.apply(&ops, 1).unwrap();
    let t = ["t".to_string()];
    let mut f = in_account("a");
    f.namespace = Some("x");
    f.tags = &t;
    let hits = idx.search(&f, "common", 500).unwrap();
    assert_eq!(hits.len(), 500);
    assert!(
        hits.iter().all(|(id, _)| id % 2 == 0 && id % 7 != 0),
        "{hits:?}"
    );
    let rare = ["rare".to_string(), "t".to_string()];
    f.tags = &rare;
    let want: Vec<u64> = (0..22_000)
        .filter(|id| id % 1000 == 0 && id % 7 != 0)
        .collect();
    assert_eq!(ids(&idx, &f, "common"), want);
}

/// BM25's document count and average length are the account's own: another tenant's
/// writes (here 60 long memories full of the query's terms) leave this account's scores,
/// and so its keyword breakdown, exactly as they were.
#[test]
fn another_accounts_writes_leave_scores_unchanged() {
    let (_dir, idx) = open();
    let mine = orchard(doc(4, "a", "n", "a quiet walk by the river", &[]));
    idx.apply(&mine, 1).unwrap();
    let before = idx.search(&in_account("a"), "apple cherry", 10).unwrap();
    assert_eq!(before.len(), 3);
    for round in 0..3u64 {
        let theirs = (0..20)
            .map(|i| {
                let id = 100 + round * 20 + i;
                let value = format!("apple {id} and more apple words than anyone needs, {i}");
                doc(id, "b", "n", &value, &[])
            })
            .collect();
        idx.apply(&upserts(theirs), 2 + round).unwrap();
    }
    let after = idx.search(&in_account("a"), "apple cherry", 10).unwrap();
    assert_eq!(before, after);
}

/// Commits are not synced, so a power loss can tear the files of recent segments; such an
/// index is recreated empty (watermark 0) for the caller to rebuild from the store.
#[test]
fn a_torn_index_is_recreated_empty_for_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    {
        let idx = KeywordIndex::open(dir.path()).unwrap();
        idx.apply(&upserts(vec![doc(1, "a", "n", "torn pages", &[])]), 7)
            .unwrap();
        idx.checkpoint().unwrap();
        assert_eq!(idx.watermark(), 7);
    }
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "idx") {
            let len = std::fs::metadata(&path).unwrap().len();
            let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            file.set_len(len / 2).unwrap();
        }
    }
    let idx = KeywordIndex::open(dir.path()).unwrap();
    assert_eq!(idx.watermark(), 0);
    assert!(ids(&idx, &in_account("a"), "torn pages").is_empty());
}

/// Writes wait in `Recent` until a commit. A search meanwhile scores them exactly as tantivy
/// will once they are committed, hides the committed versions they replace or remove, finds
/// a namespace no commit holds yet, and ranks both sides together.
#[test]
fn writes_before_their_commit_score_as_after_it() {
    let (_dir, idx) = open();
    idx.apply(&orchard(doc(5, "b", "n", "apple", &[])), 1)
        .unwrap();
    idx.checkpoint().unwrap();
    let ops = vec![
        IndexOp::Upsert(doc(4, "a", "n", "apple apple crumble with cherry", &[])),
        IndexOp::Upsert(doc(2, "a", "n", "cherry jam", &[])),
        IndexOp::Remove {
            id: 3,
            account: "a".into(),
        },
        IndexOp::Upsert(doc(6, "a", "fresh", "apple tart", &["new"])),
    ];
    idx.apply(&ops, 2).unwrap();
    let query = "apple cherry";
    let before = idx.search(&in_account("a"), query, 10).unwrap();
    let tags = ["new".to_string()];
    let fresh = SearchFilter {
        namespace: Some("fresh"),
        tags: &tags,
        ..in_account("a")
    };
    assert_eq!(ids(&idx, &fresh, "apple"), [6]);
    idx.checkpoint().unwrap();
    let after = idx.search(&in_account("a"), query, 10).unwrap();
    let order = |hits: &[(u64, f32)]| hits.iter().map(|h| h.0).collect::<Vec<_>>();
    assert_eq!(order(&before), order(&after));
    let mut sorted = order(&after);
    sorted.sort_unstable();
    assert_eq!(sorted, [1, 2, 4, 6], "doc 3 removed, doc 2 once");
    for (b, a) in before.iter().zip(&after) {
        assert!((b.1 - a.1).abs() <= 1e-5 * a.1, "{before:?} vs {after:?}");
    }
}

/// What `commit` leaves after tantivy refused a commit: the writer rolled back.
fn refuse_commit(idx: &KeywordIndex) {
    let mut staging = idx.staging.lock();
    staging.writer.rollback().unwrap();
    staging.rolled_back = true;
}

/// A failed commit rolls tantivy's writer back; the writes it discarded are still in
/// `Recent` (searchable) and are staged again before the next write or commit, a
/// checkpoint's included, so no commit's watermark claims writes it lacks.
#[test]
fn writes_a_failed_commit_discarded_are_staged_again() {
    let dir = tempfile::tempdir().unwrap();
    {
        let idx = KeywordIndex::open(dir.path()).unwrap();
        idx.apply(&upserts(vec![doc(1, "a", "n", "first batch", &[])]), 1)
            .unwrap();
        refuse_commit(&idx);
        assert_eq!(ids(&idx, &in_account("a"), "batch"), [1]);
        idx.apply(&upserts(vec![doc(2, "a", "n", "second batch", &[])]), 2)
            .unwrap();
        idx.checkpoint().unwrap();
        assert_eq!(idx.watermark(), 2);
        // A checkpoint, with no write in between, stages them again too.
        idx.apply(&upserts(vec![doc(3, "a", "n", "third batch", &[])]), 3)
            .unwrap();
        refuse_commit(&idx);
        idx.checkpoint().unwrap();
        assert_eq!(idx.watermark(), 3);
    }
    let idx = KeywordIndex::open(dir.path()).unwrap();
    assert_eq!(ids(&idx, &in_account("a"), "batch"), [1, 2, 3]);
}
