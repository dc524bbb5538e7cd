//! HTTP hygiene: strangers cannot hold connections open. A slow head, a stalled body and
//! an idle kept-alive connection are closed after the `[http]` timeouts, while other
//! clients are served; at the connection cap, a new client waits until a place frees.

use std::{
    io::{ErrorKind, Read, Write},
    net::TcpStream,
    time::{Duration, Instant},
};

use serde_json::json;

use crate::common::{Client, Options, server_with_keys};

/// Short timeouts, so the test waits a second, not the defaults' ten.
const HTTP: &str =
    "[http]\nheader_read_timeout_secs = 1.0\nbody_idle_timeout_secs = 1.0\nmax_connections = 4\n";

/// The server's `host:port`.
fn addr(base: &str) -> &str {
    base.trim_start_matches("http://")
}

/// A raw connection to `base` that has sent `bytes`.
fn connect(base: &str, bytes: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(addr(base)).unwrap();
    stream.write_all(bytes).unwrap();
    stream
}

/// Reads until the server closes the connection (within 20 s, or the test fails);
/// returns what it sent and how long after `since` it closed.
fn read_to_close(stream: &mut TcpStream, since: Instant) -> (String, Duration) {
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the server held the connection: {e}"),
        }
    }
    (String::from_utf8_lossy(&got).into_owned(), since.elapsed())
}

#[test]
fn slow_heads_stalled_bodies_and_idle_connections_are_closed_while_others_are_served() {
    let options = Options {
        config: Some(HTTP.into()),
        ..Options::hash_embedder()
    };
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);

    // Half a request line, then nothing.
    let opened = Instant::now();
    let mut slow = connect(&server.base, b"GET /healthz HT");
    // Another client is served meanwhile.
    assert_eq!(Client::new(&server.base, None).get("/healthz").status, 200);
    let (sent, after) = read_to_close(&mut slow, opened);
    assert!(sent.is_empty(), "no answer to half a head: {sent:?}");
    assert!(
        after >= Duration::from_millis(900),
        "closed after the header timeout, not before ({after:?})"
    );

    // A body announced and stalled after three of its ten bytes.
    let head = format!(
        "POST /api/v1/memory HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {}\r\n\
         content-type: application/json\r\ncontent-length: 10\r\n\r\n{{\"k",
        keys[0]
    );
    let opened = Instant::now();
    let mut stalled = connect(&server.base, head.as_bytes());
    let (sent, after) = read_to_close(&mut stalled, opened);
    assert!(sent.starts_with("HTTP/1.1 400"), "{sent}");
    assert!(sent.contains("invalid_body"), "{sent}");
    assert!(after >= Duration::from_millis(900), "{after:?}");

    // A kept-alive connection, idle after its answer.
    let mut idle = connect(&server.base, b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n");
    let (sent, _) = read_to_close(&mut idle, Instant::now());
    assert!(sent.starts_with("HTTP/1.1 200"), "{sent}");

    let r = c.post("/api/v1/memory", &json!({ "key": "k", "value": "v" }));
    assert_eq!(r.status, 201, "{:#}", r.body);
}

#[test]
fn at_the_connection_cap_a_client_waits_for_a_place() {
    let options = Options {
        config: Some(HTTP.into()),
        ..Options::hash_embedder()
    };
    let (_tmp, server, _keys) = server_with_keys(&[("acme", "free")], &options);
    // The cap's four places, held by silent connections.
    let opened = Instant::now();
    let mut holders: Vec<_> = (0..4).map(|_| connect(&server.base, b"")).collect();
    // Accepted by the kernel, answered only once a holder is closed.
    let mut waiting = connect(
        &server.base,
        b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    waiting
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let early = waiting.read(&mut [0u8; 64]);
    assert!(
        early
            .as_ref()
            .is_err_and(|e| matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)),
        "answered past the cap: {early:?}"
    );
    for holder in &mut holders {
        let (sent, _) = read_to_close(holder, opened);
        assert!(sent.is_empty(), "{sent:?}");
    }
    let (sent, _) = read_to_close(&mut waiting, opened);
    assert!(sent.starts_with("HTTP/1.1 200"), "{sent}");
}
