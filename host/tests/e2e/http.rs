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

/// The head of a put (`POST /api/v1/memory`) with `key`, announcing a body of `length`
/// bytes.
pub(crate) fn put_head(key: &str, length: usize) -> String {
    format!(
        "POST /api/v1/memory HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {key}\r\n\
         content-type: application/json\r\ncontent-length: {length}\r\n\r\n"
    )
}

/// Asserts that `stream` gets no answer within `wait` (`what` says what was waited for).
#[track_caller]
pub(crate) fn assert_unanswered(stream: &mut TcpStream, wait: Duration, what: &str) {
    stream.set_read_timeout(Some(wait)).unwrap();
    let early = stream.read(&mut [0u8; 64]);
    assert!(
        early
            .as_ref()
            .is_err_and(|e| matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)),
        "{what}: {early:?}"
    );
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
    let head = put_head(&keys[0], 10) + "{\"k";
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
    assert_unanswered(
        &mut waiting,
        Duration::from_millis(300),
        "answered past the cap",
    );
    for holder in &mut holders {
        let (sent, _) = read_to_close(holder, opened);
        assert!(sent.is_empty(), "{sent:?}");
    }
    let (sent, _) = read_to_close(&mut waiting, opened);
    assert!(sent.starts_with("HTTP/1.1 200"), "{sent}");
}

/// A connection from `source` (every 127/8 address is this host's loopback) with a receive
/// buffer of a few KiB, that sends `ask` and will read nothing until told. Its MSS is an
/// Ethernet path's (1,460 bytes), not loopback's 64 KiB, so the server's kernel buffers
/// for it what it would across a network (tens of KiB), not a whole 1.45 MB answer.
fn slow_reader(base: &str, source: &str, ask: &str) -> TcpStream {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.set_tcp_mss(1460).unwrap();
    let from: std::net::SocketAddr = format!("{source}:0").parse().unwrap();
    socket.bind(&from.into()).unwrap();
    let to: std::net::SocketAddr = addr(base).parse().unwrap();
    socket.connect(&to.into()).unwrap();
    let mut stream = TcpStream::from(socket);
    stream.write_all(ask.as_bytes()).unwrap();
    stream
}

/// The readers' request: the largest answer anyone may ask for (no key needed).
const ASK_BUNDLE: &str = "GET /api/v1/docs/swagger-ui-bundle.js HTTP/1.1\r\nhost: x\r\n\r\n";

/// A server whose one address may hold 20 of its 21 places.
const ONE_ADDRESS_20_OF_21: &str =
    "[http]\nmax_connections = 21\nmax_connections_per_address = 20\n";

/// The lock-out of issue 41 in small: readers of the 1.45 MB Swagger bundle (no key
/// needed) that read nothing fill their address's places, not the server's.
#[test]
fn slow_readers_hold_only_their_addresss_places_and_another_address_is_served() {
    let options = Options {
        config: Some(ONE_ADDRESS_20_OF_21.into()),
        ..Options::hash_embedder()
    };
    let (_tmp, server, _keys) = server_with_keys(&[], &options);
    let _readers: Vec<_> = (0..20)
        .map(|_| slow_reader(&server.base, "127.0.0.1", ASK_BUNDLE))
        .collect();
    let refused_at_the_cap = || {
        let mut over = slow_reader(&server.base, "127.0.0.1", ASK_BUNDLE);
        let (sent, _) = read_to_close(&mut over, Instant::now());
        let start: String = sent.chars().take(300).collect();
        assert!(sent.starts_with("HTTP/1.1 429 "), "{start}");
        assert!(sent.contains("retry-after: 1\r\n"), "{sent}");
        assert!(sent.contains("\"connection_limit_reached\""), "{sent}");
    };
    // The 21st from their address is answered at once and closed…
    refused_at_the_cap();
    // …and a client from another address gets the last place and the whole bundle (and
    // gives the place back: it keeps no connection).
    let other = reqwest::blocking::Client::builder()
        .local_address("127.0.0.2".parse::<std::net::IpAddr>().unwrap())
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let served = other
        .get(format!("{}/api/v1/docs/swagger-ui-bundle.js", server.base))
        .send()
        .unwrap();
    assert_eq!(served.status(), 200);
    let whole = served.bytes().unwrap().len();
    assert!(whole > 1_000_000, "{whole} bytes");
    // The readers still hold their places.
    refused_at_the_cap();
}

/// Writes fail once the client took nothing for 2 s; the head timeout (the keep-alive
/// idle time) is longer, so it is not what closes a connection here.
const STALLED_WRITES: &str =
    "[http]\nheader_read_timeout_secs = 10.0\nwrite_idle_timeout_secs = 2.0\n";

/// Readers of the bundle that take nothing of it are cut at the write timeout, while one
/// that reads gets all of it.
#[test]
fn an_answer_the_client_takes_nothing_of_is_cut_at_the_write_timeout() {
    let options = Options {
        config: Some(STALLED_WRITES.into()),
        ..Options::hash_embedder()
    };
    let (_tmp, server, _keys) = server_with_keys(&[], &options);
    let mut readers: Vec<_> = (0..3)
        .map(|_| slow_reader(&server.base, "127.0.0.1", ASK_BUNDLE))
        .collect();
    let ask_and_close = ASK_BUNDLE.replace("\r\n\r\n", "\r\nconnection: close\r\n\r\n");
    let mut reading = slow_reader(&server.base, "127.0.0.1", &ask_and_close);
    let (whole, _) = read_to_close(&mut reading, Instant::now());
    assert!(whole.len() > 1_000_000, "{} bytes", whole.len());

    std::thread::sleep(Duration::from_secs(4));
    for reader in &mut readers {
        // What the kernel had buffered, then the reset.
        let (sent, _) = read_to_close(reader, Instant::now());
        let start: String = sent.chars().take(200).collect();
        assert!(sent.starts_with("HTTP/1.1 200 "), "{start}");
        assert!(
            sent.len() < whole.len(),
            "sent it all: {} bytes",
            sent.len()
        );
    }
}

/// A body the server leaves unread (past its size limit, 413) is answered with
/// `connection: close`: the server closes that connection after the answer, and a client
/// told so sends its next request on another, where one not told would lose it.
#[test]
fn an_answer_to_a_body_left_unread_says_the_connection_closes() {
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &Options::hash_embedder());
    let c = server.client(&keys[0]);
    let too_large = json!({ "key": "k", "value": "x".repeat(1_100_000) });
    let r = c
        .request(reqwest::Method::POST, "/api/v1/memory")
        .bearer_auth(&keys[0])
        .json(&too_large)
        .send()
        .unwrap();
    assert_eq!(r.status(), 413);
    assert_eq!(r.headers()["connection"], "close");
    // A body read to its end keeps its connection.
    let r = c
        .request(reqwest::Method::POST, "/api/v1/memory")
        .bearer_auth(&keys[0])
        .json(&json!({ "key": "k", "value": "v" }))
        .send()
        .unwrap();
    assert_eq!(r.status(), 201);
    assert!(r.headers().get("connection").is_none(), "{:?}", r.headers());
}

/// A body may idle for 1 s, and must average 64 bytes/s from then on.
const TRICKLE: &str = "[http]\nheader_read_timeout_secs = 1.0\nbody_idle_timeout_secs = 1.0\n\
    body_min_bytes_per_sec = 64\n";

/// A byte every 29/30 of the idle time (a byte per 29 s against the default 30 s, scaled
/// down) never lets the body idle for the timeout, and is still closed: by the minimum rate.
#[test]
fn a_body_trickled_a_byte_at_a_time_is_closed_though_never_idle() {
    let options = Options {
        config: Some(TRICKLE.into()),
        ..Options::hash_embedder()
    };
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let opened = Instant::now();
    let mut stream = connect(&server.base, put_head(&keys[0], 1000).as_bytes());
    let mut writer = stream.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        let mut sent = 0;
        while sent < 1000 && writer.write_all(b" ").is_ok() {
            sent += 1;
            std::thread::sleep(Duration::from_millis(967));
        }
        sent
    });
    let (answer, after) = read_to_close(&mut stream, opened);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("invalid_body"), "{answer}");
    assert!(answer.contains("slower than 64 bytes/s"), "{answer}");
    assert!(after >= Duration::from_secs(1), "closed at {after:?}");
    let sent = trickle.join().unwrap();
    assert!(sent < 1000, "the whole body went through");
}

/// Empty lines before a request line are skipped (RFC 9112 §2.2), so they are no head: the
/// connection waits at the door and is closed at the header timeout, unanswered.
#[test]
fn an_empty_line_is_no_head_and_waits_at_the_door_until_the_header_timeout() {
    let options = Options {
        config: Some(HTTP.into()),
        ..Options::hash_embedder()
    };
    let (_tmp, server, _keys) = server_with_keys(&[], &options);
    for opening in ["\r\n\r\n", "\n\n", "\r\n\r\n\r\n\r\n\r\n\r\n"] {
        let opened = Instant::now();
        let mut blank = connect(&server.base, opening.as_bytes());
        let (sent, after) = read_to_close(&mut blank, opened);
        assert!(sent.is_empty(), "{opening:?} was answered: {sent:?}");
        assert!(
            after >= Duration::from_millis(900),
            "{opening:?} closed before the header timeout ({after:?})"
        );
    }
    let mut late = connect(
        &server.base,
        b"\r\n\r\nGET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    let (sent, _) = read_to_close(&mut late, Instant::now());
    assert!(sent.starts_with("HTTP/1.1 200"), "{sent}");
}

/// The free plan's accounts may have two requests in flight; a body may idle for 30 s (so
/// a stalled one holds its place through the test) and a write for 1 s.
const TWO_IN_FLIGHT: &str = "[http]\nwrite_idle_timeout_secs = 1.0\n\
    [plans.free]\nspawns_per_minute = 5\nspawns_per_hour = 30\nconcurrent_agents = 2\n\
    memories = 1000\nagent_hours_per_month = 10.0\nrequests_in_flight = 2\n";

/// An account's requests in flight are one count across REST, `/mcp` (its event stream
/// included, for as long as it is open, quiet or not) and the console; past the plan's
/// bound each answers 429 `request_limit_reached`, while another account is served.
#[test]
fn an_accounts_requests_in_flight_are_capped_across_rest_mcp_and_the_console() {
    let options = Options {
        config: Some(TWO_IN_FLIGHT.into()),
        ..Options::hash_embedder()
    };
    let (tmp, server, keys) = server_with_keys(&[("acme", "free"), ("globex", "free")], &options);
    let (acme, globex) = (server.client(&keys[0]), server.client(&keys[1]));
    let (_, token) = crate::console::login(&tmp.path().join("data"), "acme", None);
    let console = Client::new(&server.base, Some(&token));
    let read = "/api/v1/memory?key=k";
    assert_eq!(acme.get(read).status, 404);

    // One place: an MCP session's event stream, open and quiet past the write timeout.
    let http = reqwest::blocking::Client::new();
    let mcp = |session: Option<&str>, body: &serde_json::Value| {
        let mut request = http
            .post(format!("{}/mcp", server.base))
            .bearer_auth(&keys[0])
            .header("accept", "application/json, text/event-stream")
            .json(body);
        if let Some(id) = session {
            request = request.header("mcp-session-id", id);
        }
        request.send().unwrap()
    };
    let opened = mcp(
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "e2e", "version": "1"}}}),
    );
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    drop(opened.text());
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(mcp(Some(&session), &initialized).status(), 202);
    let stream = http
        .get(format!("{}/mcp", server.base))
        .bearer_auth(&keys[0])
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .send()
        .unwrap();
    assert_eq!(stream.status(), 200);
    // The other: a body announced and stalled, admitted (it is not answered) and waiting.
    let mut stalled = connect(&server.base, (put_head(&keys[0], 100) + "{\"k").as_bytes());
    assert_unanswered(
        &mut stalled,
        Duration::from_millis(1500),
        "the stalled body was answered",
    );

    let r = acme.get(read);
    r.assert_error(429, "request_limit_reached");
    assert_eq!(r.retry_after.as_deref(), Some("1"));
    assert_eq!(
        r.body["error"]["details"],
        json!({ "plan": "free", "currentRequests": 2, "maxRequests": 2 })
    );
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let refused = mcp(Some(&session), &list);
    assert_eq!(refused.status(), 429);
    let body: serde_json::Value = refused.json().unwrap();
    assert_eq!(body["error"]["code"], "request_limit_reached", "{body}");
    console
        .get("/api/v1/console/me")
        .assert_error(429, "request_limit_reached");
    assert_eq!(globex.get(read).status, 404, "another account is served");

    // A stream closed by its client gives its place back.
    drop(stream);
    crate::common::poll_until(
        Duration::from_secs(10),
        "the closed stream gives its place back",
        || match acme.get(read) {
            r if r.status == 404 => Ok(()),
            r => Err(format!("{}: {}", r.status, r.body)),
        },
    );
    drop(stalled);
}
