use super::*;

/// The field and message of a broken rule.
fn fault(checked: Checked) -> (&'static str, String) {
    let e = checked.expect_err("the rule should be broken");
    (e.field, e.message)
}

fn write<'a>(key: &'a str, value: &'a str, tags: &'a [String]) -> Write<'a> {
    Write {
        key,
        value,
        namespace: "default",
        tags,
        importance: 5.0,
        expires_in_days: None,
    }
}

#[test]
fn keys_are_snake_case_up_to_128_characters() {
    for good in ["a", "user_name", "x9_", &"k".repeat(128)] {
        assert_eq!(validate_key(good), Ok(()), "{good}");
    }
    let snake = |k: &str| {
        format!(
            "key {k:?} must be snake_case: a lowercase letter, then lowercase letters, digits or underscores"
        )
    };
    let cases = [
        ("", "key is required".to_string()),
        ("User", snake("User")),
        ("9lives", snake("9lives")),
        ("_x", snake("_x")),
        ("a-b", snake("a-b")),
        ("a b", snake("a b")),
        ("é", snake("é")),
        (
            &"k".repeat(129),
            "key is 129 characters; the limit is 128".into(),
        ),
    ];
    for (bad, message) in cases {
        assert_eq!(fault(validate_key(bad)), ("key", message), "{bad}");
    }
}

#[test]
fn values_are_at_most_5000_characters_and_not_blank() {
    assert_eq!(validate_value(&"é".repeat(5_000)), Ok(()));
    assert_eq!(
        fault(validate_value(&"x".repeat(5_001))),
        (
            "value",
            "value is 5001 characters; the limit is 5000".into()
        )
    );
    for blank in ["", " \n\t"] {
        assert_eq!(
            fault(validate_value(blank)),
            ("value", "value must not be empty".into())
        );
    }
}

#[test]
fn namespaces_are_1_to_128_characters_without_control_characters() {
    assert_eq!(validate_namespace(&"n".repeat(128)), Ok(()));
    assert_eq!(validate_namespace("with space/ünïcode"), Ok(()));
    let message = "namespace must be 1 to 128 characters without control characters";
    for bad in ["", &"n".repeat(129), "a\nb", "\u{7f}"] {
        assert_eq!(
            fault(validate_namespace(bad)),
            ("namespace", message.into()),
            "{bad:?}"
        );
    }
}

#[test]
fn at_most_20_tags_of_1_to_50_characters() {
    let tags = |n: usize, len: usize| vec!["t".repeat(len); n];
    assert_eq!(validate_tags(&tags(20, 50)), Ok(()));
    assert_eq!(
        fault(validate_tags(&tags(21, 1))),
        ("tags", "21 tags given; the limit is 20".into())
    );
    assert_eq!(
        fault(validate_tags(&tags(1, 51))).1,
        format!(
            "tags: each tag must be 1 to 50 characters; {:?} is 51",
            "t".repeat(51)
        )
    );
    assert_eq!(
        fault(validate_tags(&tags(1, 0))),
        (
            "tags",
            r#"tags: each tag must be 1 to 50 characters; "" is 0"#.into()
        )
    );
}

#[test]
fn importance_is_1_to_10_and_expiry_positive() {
    for good in [1.0, 5.5, 10.0] {
        assert_eq!(validate_importance(good), Ok(()));
    }
    for bad in [0.0, 0.99, 10.5, f64::NAN] {
        assert_eq!(
            fault(validate_importance(bad)),
            (
                "importance",
                format!("importance must be a number from 1 to 10, got {bad}")
            )
        );
    }
    for good in [None, Some(0.001), Some(3650.0)] {
        assert_eq!(validate_expires_in_days(good), Ok(()));
    }
    for bad in [0.0, -1.0, f64::INFINITY, f64::NAN] {
        assert_eq!(
            fault(validate_expires_in_days(Some(bad))),
            (
                "expires_in_days",
                "expires_in_days must be a positive number of days".into()
            )
        );
    }
}

#[test]
fn a_write_reports_its_first_fault() {
    let no_tags: &[String] = &[];
    assert_eq!(write("k", "v", no_tags).validate(), Ok(()));
    assert_eq!(fault(write("Bad", "", no_tags).validate()).0, "key");
    assert_eq!(fault(write("k", "", no_tags).validate()).0, "value");
    let long = vec!["t".repeat(51)];
    assert_eq!(fault(write("k", "v", &long).validate()).0, "tags");
    let mut w = write("k", "v", no_tags);
    w.namespace = "";
    w.importance = 0.0;
    assert_eq!(fault(w.validate()).0, "namespace");
    w.namespace = "n";
    assert_eq!(fault(w.validate()).0, "importance");
    w.importance = 1.0;
    w.expires_in_days = Some(0.0);
    assert_eq!(fault(w.validate()).0, "expires_in_days");
}

#[test]
fn addresses_and_filters() {
    assert_eq!(validate_address("k", "n"), Ok(()));
    assert_eq!(fault(validate_address("Bad", "")).0, "key");
    assert_eq!(fault(validate_address("k", "")).0, "namespace");
    assert_eq!(validate_filters(None, &[]), Ok(()));
    assert_eq!(fault(validate_filters(Some(""), &[])).0, "namespace");
    assert_eq!(fault(validate_filters(None, &[String::new()])).0, "tags");
}

#[test]
fn queries_modes_and_limits() {
    assert_eq!(validate_query("q"), Ok(()));
    assert_eq!(
        fault(validate_query(" \t")),
        ("query", "query must not be empty".into())
    );
    let mode = unknown_mode("fuzzy");
    assert_eq!(
        (mode.field, mode.to_string()),
        (
            "mode",
            r#"mode "fuzzy" is unknown: use hybrid, semantic or keyword"#.into()
        )
    );
    assert_eq!(
        (
            search_limit(None),
            search_limit(Some(1)),
            search_limit(Some(51))
        ),
        (Ok(10), Ok(1), Ok(50))
    );
    assert_eq!(
        (
            list_limit(None),
            list_limit(Some(200)),
            list_limit(Some(u32::MAX))
        ),
        (Ok(50), Ok(200), Ok(200))
    );
    let zero = |r: Result<u32, RuleError>| r.map_err(|e| (e.field, e.message));
    assert_eq!(
        zero(search_limit(Some(0))),
        Err(("limit", "limit must be a whole number from 1 to 50".into()))
    );
    assert_eq!(
        zero(list_limit(Some(0))),
        Err(("limit", "limit must be a whole number from 1 to 200".into()))
    );
}
