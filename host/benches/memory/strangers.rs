//! Strangers holding connections: 10,000 connections that send half a request line and then
//! nothing, against the server's listener (`server::serve_http`, as `wasmind serve` runs
//! it). Measured: how long the server takes to close each of them (the header-read timeout,
//! 10 s by default, is the target), and tenant B's reads meanwhile, on its kept-alive
//! connection and on a new connection per request (those wait behind the connection cap
//! while the strangers hold it).
//!
//! Strangers come from other machines; here they are this process's own thread, on the
//! server's two cores. That thread runs at the lowest CPU priority (nice 19), so what B
//! waits for is the server's work on the strangers (accepting, timing out and closing
//! them), not the strangers' own connects and reads.
//!
//! `WASMIND_BENCH_STRANGERS_AT=sink` is the control: the strangers connect to a bare
//! listener of their own instead (accepting at nice 19, closing each after the header
//! timeout), while B still reads from the server. What B waits for then is the box's
//! share alone — the kernel's handshakes and closes and the strangers' client — which no
//! server on these two cores can avoid.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wasmind::memory::embed::EmbedderKind;

use super::bench_dir;
use super::bystander::{self, Bystander};
use super::harness::{self, Server, lower_priority};
use super::nofile::Nofile;
use super::report::{Table, percentile_ms};

const SECTION: &str = "strangers: half-open connections (10,000, or as many as the fd limit fits)";
const STRANGERS: usize = 10_000;
/// A stranger's opening: half of a request line, never finished.
const HALF_LINE: &[u8] = b"GET /api/v1/mem";

pub fn run(table: &mut Table) {
    println!("\n== {SECTION} == ({})", harness::loadavg());
    // The server and the strangers share this process: two descriptors a connection.
    let nofile = Nofile::raise(STRANGERS, 2);
    nofile.note(table, SECTION, "the bench process");
    let strangers_fit = nofile.fit;
    let path = bench_dir("strangers");
    let _ = std::fs::remove_dir_all(&path);
    let opened = harness::open(&path, harness::config(EmbedderKind::Hash, 0));
    let timeout = Duration::from_secs_f64(opened.state.config.http.header_read_timeout_secs);
    let key = opened.key("acct-b");
    let server = Server::start(opened);
    let b = Bystander::new(&server.base(), &key, None);
    let idle = b.idle();

    let addr = match std::env::var("WASMIND_BENCH_STRANGERS_AT").as_deref() {
        Ok("sink") => sink(timeout),
        Ok(other) => panic!("WASMIND_BENCH_STRANGERS_AT={other}: only `sink` is known"),
        Err(_) => server.addr,
    };
    let (busy, flood) = b.meanwhile(move || strangers(addr, strangers_fit));
    table.value(
        SECTION,
        "strangers connected, and closed by the server",
        format!(
            "{} of {strangers_fit} connected, {} closed by the server, {} refused or reset",
            flood.connected,
            flood.closed.len(),
            flood.failed
        ),
        "all closed",
        Some(flood.closed.len() == flood.connected),
    );
    let secs = |q: f64| percentile_ms(&flood.closed, q) / 1000.0;
    table.value(
        SECTION,
        "a stranger's time from its half line to the server's close",
        format!(
            "p50 {:.1} s, p99 {:.1} s, max {:.1} s",
            secs(0.5),
            secs(0.99),
            secs(1.0)
        ),
        &format!("≤ header timeout ({:.0} s) + 1 s", timeout.as_secs_f64()),
        Some(secs(1.0) <= timeout.as_secs_f64() + 1.0),
    );
    bystander::report(table, SECTION, &idle, &[("meanwhile", &busy)], 0.0);
    server.stop().close();
    let _ = std::fs::remove_dir_all(&path);
}

/// What the strangers saw.
struct Flood {
    connected: usize,
    failed: usize,
    /// Each connected stranger's time from its half line to the server closing it.
    closed: Vec<Duration>,
}

/// A bare listener for the control run: on a thread of its own at nice 19, it accepts every
/// connection and closes each `timeout` after accepting it, reading nothing.
fn sink(timeout: Duration) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("sink listener");
    let addr = listener.local_addr().expect("sink address");
    listener.set_nonblocking(true).expect("sink nonblocking");
    std::thread::spawn(move || {
        lower_priority("the sink");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("sink listener");
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    tokio::time::sleep(timeout).await;
                    drop(stream);
                });
            }
        });
    });
    addr
}

/// Opens `n` connections to `addr` at once, each sending [`HALF_LINE`] and then waiting for
/// the server to close it (or two minutes).
fn strangers(addr: SocketAddr, n: usize) -> Flood {
    lower_priority("the strangers");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let tasks: Vec<_> = (0..n)
            .map(|_| tokio::spawn(async move { stranger(addr).await }))
            .collect();
        let mut flood = Flood {
            connected: 0,
            failed: 0,
            closed: Vec::new(),
        };
        for task in tasks {
            match task.await.expect("stranger") {
                Some(Some(took)) => {
                    flood.connected += 1;
                    flood.closed.push(took);
                }
                Some(None) => flood.connected += 1,
                None => flood.failed += 1,
            }
        }
        flood
    })
}

/// One stranger: `None` if it could not connect and send, else the time until the server
/// closed it (`None` inside when it did not within two minutes).
async fn stranger(addr: SocketAddr) -> Option<Option<Duration>> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream.write_all(HALF_LINE).await.ok()?;
    let sent = Instant::now();
    let mut buf = [0u8; 1024];
    let closed = tokio::time::timeout(Duration::from_secs(120), async {
        // The server answers nothing or a 408 before closing; either way the stream ends.
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
    Some(closed.ok().map(|()| sent.elapsed()))
}
