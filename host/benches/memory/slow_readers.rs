//! Slow readers (issue 41): 10,000 connections from one address (127.0.0.1; or as many as
//! the fd limit fits), each asking for the documentation's 1.45 MB bundle (no key needed)
//! with a receive buffer of 4 KiB and then reading it a byte a second, against the server's
//! listener with its default `[http]`. Each reader's MSS is an Ethernet path's (1,460
//! bytes): with loopback's 64 KiB the server's kernel would take the whole bundle into its
//! send buffer at once, as it never does across a network, and no write would wait.
//! Meanwhile tenant B reads from another address (127.0.0.2), as in `strangers`; target:
//! its p99 ≤ 2 × its idle p99 + 5 ms.
//!
//! Measured beside it: how many readers the server took in (its per-address cap,
//! `max_connections_per_address`) and how many it answered 429 at once, how soon it cut
//! the ones it took in (its write timeout, `write_idle_timeout_secs`: a byte a second into
//! a window of a few KiB frees nothing the kernel would wake the server's write for), and
//! the bench process's RSS (the bundle is sent from the binary, not copied per reader).
//!
//! As in `strangers`, the readers are this process's own thread at nice 19.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wasmind::memory::embed::EmbedderKind;

use super::bench_dir;
use super::bystander::{self, Bystander};
use super::harness::{self, Server, lower_priority};
use super::report::{Table, percentile_ms};
use super::strangers::raise_nofile;

const SECTION: &str =
    "slow readers: 10,000 connections from one address reading the 1.45 MB bundle at 1 byte/s";
const READERS: usize = 10_000;
/// The reader's request: the largest answer anyone may ask for.
const ASK: &[u8] = b"GET /api/v1/docs/swagger-ui-bundle.js HTTP/1.1\r\nhost: x\r\n\r\n";
/// The readers' receive buffer (the kernel doubles it).
const WINDOW: usize = 4096;
/// The readers' MSS: an Ethernet path's.
const MSS: u32 = 1460;
/// Longest a reader waits for the server to end its answer.
const PATIENCE: Duration = Duration::from_secs(120);

pub fn run(table: &mut Table) {
    println!("\n== {SECTION} == ({})", harness::loadavg());
    let fit = raise_nofile(table, SECTION, READERS);
    let path = bench_dir("slow-readers");
    let _ = std::fs::remove_dir_all(&path);
    let opened = harness::open(&path, harness::config(EmbedderKind::Hash, 0));
    let http = opened.state.config.http.clone();
    let key = opened.key("acct-b");
    let server = Server::start(opened);
    let b = Bystander::new(&server.base(), &key, Some([127, 0, 0, 2].into()));
    let idle = b.idle();

    let (rss_before, _) = harness::rss_mib(std::process::id());
    let addr = server.addr;
    let (busy, flood) = b.meanwhile(move || readers(addr, fit));
    let (_, peak) = harness::rss_mib(std::process::id());
    table.value(
        SECTION,
        "readers taken in, and answered 429 at once",
        format!(
            "{} of {fit} taken in, {} answered 429 connection_limit_reached, {} failed to connect",
            flood.cut.len() + flood.open,
            flood.refused,
            flood.failed
        ),
        &format!(
            "taken in ≤ max_connections_per_address ({})",
            http.max_connections_per_address
        ),
        Some(flood.cut.len() + flood.open <= http.max_connections_per_address as usize),
    );
    let secs = |q: f64| percentile_ms(&flood.cut, q) / 1000.0;
    let limit = http.write_idle_timeout_secs + 2.0;
    table.value(
        SECTION,
        "a reader taken in: from its request to the server's cut",
        format!(
            "p50 {:.1} s, p99 {:.1} s, max {:.1} s; {} still open after {} s",
            secs(0.5),
            secs(0.99),
            secs(1.0),
            flood.open,
            PATIENCE.as_secs()
        ),
        &format!(
            "all cut, ≤ write timeout ({:.0} s) + 2 s",
            http.write_idle_timeout_secs
        ),
        Some(flood.open == 0 && secs(1.0) <= limit),
    );
    table.value(
        SECTION,
        "bench process RSS (server and readers): before → peak",
        format!("{rss_before:.0} → {peak:.0} MiB (peak of the whole run)"),
        "",
        None,
    );
    // Where B's time goes: the readers' connects (and the 429s) come in a burst at the
    // start; after it, the server holds the readers it took in until it cuts them.
    let held = busy.from(flood.answered);
    let rows = [
        ("meanwhile", &busy),
        ("meanwhile, after the connects", &held),
    ];
    bystander::report(table, SECTION, &idle, &rows, 5.0);
    server.stop().close();
    let _ = std::fs::remove_dir_all(&path);
}

/// What the readers saw.
struct Flood {
    /// When the last reader was answered (a 429, or its answer's start).
    answered: Instant,
    failed: usize,
    refused: usize,
    /// Each reader taken in: its time from its request to the server ending the answer.
    cut: Vec<Duration>,
    /// Readers taken in whose answer had not ended after [`PATIENCE`].
    open: usize,
}

/// How one reader ended, and when it was answered.
enum Outcome {
    Failed,
    Refused(Instant),
    Cut(Instant, Duration),
    Open(Instant),
}

/// Opens `n` readers to `addr` at once, each as [`reader`] does.
fn readers(addr: SocketAddr, n: usize) -> Flood {
    lower_priority("the slow readers");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let tasks: Vec<_> = (0..n).map(|_| tokio::spawn(reader(addr))).collect();
        let mut flood = Flood {
            answered: Instant::now(),
            failed: 0,
            refused: 0,
            cut: Vec::new(),
            open: 0,
        };
        for task in tasks {
            let answered = match task.await.expect("reader") {
                Outcome::Failed => {
                    flood.failed += 1;
                    None
                }
                Outcome::Refused(at) => {
                    flood.refused += 1;
                    Some(at)
                }
                Outcome::Cut(at, took) => {
                    flood.cut.push(took);
                    Some(at)
                }
                Outcome::Open(at) => {
                    flood.open += 1;
                    Some(at)
                }
            };
            flood.answered = flood.answered.max(answered.unwrap_or(flood.answered));
        }
        flood
    })
}

/// One reader: connects with a small receive buffer, asks for the bundle, and reads the
/// answer's first bytes (a 429 is read whole and ends it), then a byte a second until the
/// server ends the answer or [`PATIENCE`] runs out.
async fn reader(addr: SocketAddr) -> Outcome {
    let connected = async {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
        socket.set_recv_buffer_size(WINDOW)?;
        socket.set_tcp_mss(MSS)?;
        socket.set_nonblocking(true)?;
        let socket = tokio::net::TcpSocket::from_std_stream(socket.into());
        let mut stream = socket.connect(addr).await?;
        stream.write_all(ASK).await?;
        std::io::Result::Ok(stream)
    };
    let Ok(mut stream) = connected.await else {
        return Outcome::Failed;
    };
    let asked = Instant::now();
    let mut start = [0u8; 12];
    if stream.read_exact(&mut start).await.is_err() {
        return Outcome::Failed;
    }
    let answered = Instant::now();
    if &start == b"HTTP/1.1 429" {
        return Outcome::Refused(answered);
    }
    let mut byte = [0u8; 1];
    while asked.elapsed() < PATIENCE {
        tokio::time::sleep(Duration::from_secs(1)).await;
        // The server resets a connection it cuts; the bytes already buffered here would
        // come first at a byte a second, so the reset is looked for apart.
        if !matches!(stream.take_error(), Ok(None)) {
            return Outcome::Cut(answered, asked.elapsed());
        }
        match stream.read(&mut byte).await {
            Ok(1..) => {}
            Ok(0) | Err(_) => return Outcome::Cut(answered, asked.elapsed()),
        }
    }
    Outcome::Open(answered)
}
