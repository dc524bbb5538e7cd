use super::*;

fn store() -> InMemoryMemory {
    InMemoryMemory::new()
}

fn put(m: &InMemoryMemory, key: &str, value: &str) -> Result<PutResult, MemoryError> {
    m.put(&PutRequest::new(key, value))
}

fn invalid_text(r: Result<impl std::fmt::Debug, MemoryError>) -> String {
    match r {
        Err(MemoryError::Invalid(text)) => text,
        other => panic!("expected invalid, got {other:?}"),
    }
}

#[test]
fn keys_follow_the_host_rules() {
    let m = store();
    for good in ["a", "user_name", "x9_", &"k".repeat(128)] {
        put(&m, good, "v").unwrap();
    }
    for bad in [
        "",
        "User",
        "9lives",
        "_x",
        "a-b",
        "a b",
        "é",
        &"k".repeat(129),
    ] {
        let text = invalid_text(put(&m, bad, "v"));
        assert!(text.contains("key"), "{bad}: {text}");
    }
    assert!(invalid_text(m.get("Bad", None)).contains("snake_case"));
    assert!(invalid_text(m.delete("Bad", None)).contains("snake_case"));
}

#[test]
fn bounds_follow_the_host_rules() {
    let m = store();
    put(&m, "k", &"x".repeat(5_000)).unwrap();
    assert_eq!(
        invalid_text(put(&m, "k", &"x".repeat(5_001))),
        "value is 5001 characters; the limit is 5000"
    );
    assert_eq!(invalid_text(put(&m, "k", "  ")), "value must not be empty");
    let tags = |n: usize, len: usize| PutRequest::new("k", "v").tags(vec!["t".repeat(len); n]);
    m.put(&tags(20, 50)).unwrap();
    assert_eq!(
        invalid_text(m.put(&tags(21, 1))),
        "21 tags given; the limit is 20"
    );
    assert!(
        invalid_text(m.put(&tags(1, 51))).starts_with("tags: each tag must be 1 to 50 characters")
    );
    for bad in [0.0, 10.5, f64::NAN] {
        let text = invalid_text(m.put(&PutRequest::new("k", "v").importance(bad)));
        assert!(
            text.starts_with("importance must be a number from 1 to 10"),
            "{text}"
        );
    }
    let text = invalid_text(m.put(&PutRequest::new("k", "v").expires_in_days(0.0)));
    assert_eq!(text, "expires_in_days must be a positive number of days");
    let text = invalid_text(m.put(&PutRequest::new("k", "v").namespace("")));
    assert!(
        text.starts_with("namespace must be 1 to 128 characters"),
        "{text}"
    );
}

#[test]
fn defaults_are_the_specs() {
    let m = store();
    let put = put(&m, "k", "v").unwrap();
    assert_eq!(put.namespace, "default");
    let record = m.peek("default", "k").unwrap();
    assert_eq!((record.importance, record.access_count), (5.0, 0));
    assert!(record.tags.is_empty());
}

#[test]
fn identical_puts_change_nothing_and_new_values_are_versions() {
    let m = store();
    let first = put(&m, "k", "one").unwrap();
    assert_eq!(put(&m, "k", "one").unwrap(), first);
    assert_eq!(m.version_count("default", "k"), 1);

    m.get("k", None).unwrap();
    let created = m.peek("default", "k").unwrap().created_at;
    m.advance_time(Duration::from_secs(60));
    let second = put(&m, "k", "two").unwrap();
    assert_ne!(second.memory_id, first.memory_id);
    assert_eq!(m.version_count("default", "k"), 2);
    let record = m.peek("default", "k").unwrap();
    assert_eq!(record.value, "two");
    assert_eq!(
        record.created_at, created,
        "a version keeps the creation time"
    );
    assert!(record.updated_at >= created + 60_000);
    assert_eq!(record.access_count, 1, "a version keeps the access count");
    assert_eq!(m.len(), 1);
}

#[test]
fn namespaces_separate_keys() {
    let m = store();
    m.put(&PutRequest::new("k", "a").namespace("one")).unwrap();
    m.put(&PutRequest::new("k", "b").namespace("two")).unwrap();
    assert_eq!(m.get("k", Some("one")).unwrap().unwrap().value, "a");
    assert_eq!(m.get("k", Some("two")).unwrap().unwrap().value, "b");
    assert_eq!(m.get("k", None).unwrap(), None);
    assert_eq!(m.len(), 2);
}

#[test]
fn get_counts_accesses() {
    let m = store();
    put(&m, "k", "v").unwrap();
    assert_eq!(m.get("k", None).unwrap().unwrap().access_count, 1);
    assert_eq!(m.get("k", None).unwrap().unwrap().access_count, 2);
    assert_eq!(
        m.peek("default", "k").unwrap().access_count,
        2,
        "peek does not count"
    );
}

#[test]
fn the_quota_counts_live_memories() {
    let m = store().with_quota(2);
    put(&m, "a", "1").unwrap();
    put(&m, "b", "2").unwrap();
    let Err(MemoryError::QuotaExceeded(text)) = put(&m, "c", "3") else {
        panic!("expected the quota to be exceeded");
    };
    assert_eq!(
        text,
        "memory quota exceeded: 2 of 2 live memories in use; run POST /api/v1/memory/dedupe \
         first, otherwise delete memories or upgrade the plan"
    );
    put(&m, "a", "1 again").unwrap();
    m.delete("b", None).unwrap();
    put(&m, "c", "3").unwrap();
}

#[test]
fn delete_is_soft_and_a_later_put_starts_afresh() {
    let m = store();
    put(&m, "k", "v").unwrap();
    m.get("k", None).unwrap();
    m.delete("k", None).unwrap();
    assert_eq!(m.get("k", None).unwrap(), None);
    assert!(m.list(&ListRequest::new()).unwrap().is_empty());
    assert!(m.search(&SearchRequest::new("v k")).unwrap().is_empty());
    assert!(matches!(m.delete("k", None), Err(MemoryError::NotFound(_))));

    put(&m, "k", "v").unwrap();
    assert_eq!(m.version_count("default", "k"), 2);
    assert_eq!(m.peek("default", "k").unwrap().access_count, 0);
}

#[test]
fn expired_memories_are_gone() {
    let m = store();
    m.put(&PutRequest::new("k", "soon gone").expires_in_days(1.0))
        .unwrap();
    put(&m, "stays", "here").unwrap();
    m.advance_time(Duration::from_secs(86_400 + 1));
    assert_eq!(m.get("k", None).unwrap(), None);
    assert!(m.search(&SearchRequest::new("gone")).unwrap().is_empty());
    assert_eq!(m.len(), 1);
}

#[test]
fn list_is_newest_first_filtered_and_bounded() {
    let m = store();
    for i in 0..210 {
        let request = PutRequest::new(format!("k{i}"), "v").tags(if i % 2 == 0 {
            vec!["even"]
        } else {
            vec![]
        });
        m.put(&request).unwrap();
    }
    m.put(&PutRequest::new("elsewhere", "v").namespace("other"))
        .unwrap();
    put(&m, "k0", "updated").unwrap();

    let keys = |r: ListRequest| -> Vec<String> {
        m.list(&r).unwrap().into_iter().map(|x| x.key).collect()
    };
    let all = keys(ListRequest::new());
    assert_eq!(all.len(), 50);
    assert_eq!(
        &all[..3],
        ["k0", "elsewhere", "k209"],
        "an update is the newest"
    );
    assert_eq!(keys(ListRequest::new().limit(500)).len(), 200);
    assert_eq!(keys(ListRequest::new().namespace("other")), ["elsewhere"]);
    let even = keys(ListRequest::new().tags(["even"]).limit(3));
    assert_eq!(
        even,
        ["k208", "k206", "k204"],
        "k0 lost its tag in the update"
    );
    assert_eq!(
        invalid_text(m.list(&ListRequest::new().limit(0))),
        "limit must be a whole number from 1 to 200"
    );
}

#[test]
fn search_finds_shared_words_and_ranks_them() {
    let m = store();
    m.put(&PutRequest::new("food", "Pizza with mushrooms").tags(["pref"]))
        .unwrap();
    m.put(&PutRequest::new("food_again", "pizza margherita").importance(9.0))
        .unwrap();
    m.put(&PutRequest::new("pet", "a cat").namespace("home"))
        .unwrap();

    let hits = m.search(&SearchRequest::new("PIZZA mushrooms?")).unwrap();
    let keys: Vec<&str> = hits.iter().map(|h| h.key.as_str()).collect();
    assert_eq!(keys, ["food", "food_again"]);
    assert_eq!(hits[0].breakdown.keyword, 1.0);
    assert_eq!(hits[1].breakdown.keyword, 0.5);
    for hit in &hits {
        assert!((0.0..=1.0).contains(&hit.score));
        assert!(hit.breakdown.time_decay > 0.99);
    }
    assert_eq!(hits[1].breakdown.importance, 0.9);

    let only = |r: SearchRequest| {
        m.search(&r)
            .unwrap()
            .into_iter()
            .map(|h| h.key)
            .collect::<Vec<_>>()
    };
    assert_eq!(only(SearchRequest::new("pizza").tags(["pref"])), ["food"]);
    assert_eq!(only(SearchRequest::new("pizza").limit(1)).len(), 1);
    assert_eq!(only(SearchRequest::new("cat").namespace("home")), ["pet"]);
    assert!(only(SearchRequest::new("cat").namespace("default")).is_empty());
    assert!(
        only(SearchRequest::new("the of")).is_empty(),
        "stop words match nothing"
    );
    assert_eq!(
        only(SearchRequest::new("pet")),
        ["pet"],
        "keys are searched"
    );

    let keyword = m
        .search(&SearchRequest::new("pizza mushrooms").mode("keyword"))
        .unwrap();
    assert!(
        (keyword[0].score - (0.8 + 0.1 * 0.5 + 0.1 * keyword[0].breakdown.time_decay)).abs() < 1e-9
    );
}

#[test]
fn search_rejects_what_the_host_rejects() {
    let m = store();
    assert_eq!(
        invalid_text(m.search(&SearchRequest::new("  "))),
        "query must not be empty"
    );
    assert_eq!(
        invalid_text(m.search(&SearchRequest::new("q").mode("fuzzy"))),
        r#"mode "fuzzy" is unknown: use hybrid, semantic or keyword"#
    );
    assert_eq!(
        invalid_text(m.search(&SearchRequest::new("q").limit(0))),
        "limit must be a whole number from 1 to 50"
    );
}

#[test]
fn a_requested_stop_fails_every_operation() {
    let m = store();
    let stop = StopFlag::default();
    m.attach_stop(stop.clone());
    put(&m, "k", "v").unwrap();
    stop.request();
    assert_eq!(put(&m, "j", "v"), Err(MemoryError::Stopped));
    assert_eq!(m.get("k", None), Err(MemoryError::Stopped));
    assert_eq!(m.list(&ListRequest::new()), Err(MemoryError::Stopped));
    assert_eq!(m.delete("k", None), Err(MemoryError::Stopped));
    assert_eq!(
        m.search(&SearchRequest::new("v")),
        Err(MemoryError::Stopped)
    );
}
