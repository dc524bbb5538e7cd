//! The shared endpoint against the scripted local server: failure classification,
//! `Retry-After`, timeouts, URL validation.

use std::time::Duration;

use serde_json::{Value, json};

use super::{
    fake::{Reply, closed_base_url, ok, serve, status},
    *,
};

/// One send of an empty object, as `Value`.
async fn send(endpoint: &Endpoint) -> Result<Value, Failure> {
    endpoint.send(endpoint.post(&json!({}))).await
}

#[tokio::test]
async fn failures_are_classified() {
    let (cfg, fake) = serve(
        "openai",
        "things",
        vec![
            status(500),
            status(503),
            status(529),
            Reply::Http(429, Some("7"), String::new()),
            status(408),
            status(400),
            Reply::Http(401, None, "plain refusal".into()),
            Reply::Http(200, None, "<html>gateway</html>".into()),
            ok(&json!({"fine": true})),
        ],
    )
    .await;
    let endpoint = Endpoint::new(cfg.base_url(), "things", 4).unwrap();
    let mut outcomes = Vec::new();
    for _ in 0..8 {
        outcomes.push(send(&endpoint).await.unwrap_err());
    }
    assert_eq!(send(&endpoint).await.unwrap(), json!({"fine": true}));
    assert_eq!(fake.bodies().len(), 9);

    let transient = |f: &Failure| matches!(f, Failure::Transient { .. });
    let kinds: Vec<bool> = outcomes.iter().map(transient).collect();
    assert_eq!(kinds, [true, true, true, true, true, false, false, true]);
    let Failure::Transient {
        message,
        retry_after,
    } = &outcomes[3]
    else {
        unreachable!()
    };
    assert_eq!(*retry_after, Some(Duration::from_secs(7)));
    assert!(message.contains("429"), "{message}");
    let Failure::Transient { message, .. } = &outcomes[2] else {
        unreachable!()
    };
    assert!(
        message.contains("529") && message.contains("fake 529"),
        "{message}"
    );
    let Failure::Refused(message) = &outcomes[5] else {
        unreachable!()
    };
    assert!(
        message.contains("400") && message.contains("fake 400") && message.contains("/v1/things"),
        "{message}"
    );
    let Failure::Refused(message) = &outcomes[6] else {
        unreachable!()
    };
    assert!(message.contains("plain refusal"), "{message}");
    let Failure::Transient { message, .. } = &outcomes[7] else {
        unreachable!()
    };
    assert!(
        message.contains("unreadable reply") && message.contains("gateway"),
        "{message}"
    );
}

#[tokio::test]
async fn connect_errors_and_timeouts_are_transient() {
    let endpoint = Endpoint::new(&closed_base_url(), "things", 4).unwrap();
    let failure = send(&endpoint).await.unwrap_err();
    assert!(
        matches!(&failure, Failure::Transient { message, .. } if message.contains("could not connect")),
        "{failure:?}"
    );

    let (cfg, _fake) = serve(
        "openai",
        "things",
        vec![Reply::Late(Duration::from_secs(5))],
    )
    .await;
    let endpoint = Endpoint::with_timeouts(
        cfg.base_url(),
        "things",
        4,
        CONNECT_TIMEOUT,
        Duration::from_millis(200),
    )
    .unwrap();
    let failure = send(&endpoint).await.unwrap_err();
    assert!(
        matches!(&failure, Failure::Transient { message, .. } if message.contains("timed out")),
        "{failure:?}"
    );
}

#[test]
fn retry_after_is_read_in_seconds() {
    let parse = |value: &str| {
        let mut headers = HeaderMap::new();
        headers.insert(reqwest::header::RETRY_AFTER, value.parse().unwrap());
        retry_after(&headers)
    };
    assert_eq!(parse("3"), Some(Duration::from_secs(3)));
    assert_eq!(parse(" 1.5 "), Some(Duration::from_millis(1500)));
    assert_eq!(parse("-1"), None);
    assert_eq!(parse("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    assert_eq!(retry_after(&HeaderMap::new()), None);
}

#[test]
fn bad_base_urls_are_refused_at_start() {
    for url in ["", "localhost:11434", "ftp://example.com"] {
        assert!(Endpoint::new(url, "things", 4).is_err(), "{url:?}");
    }
}
