//! The slow readers' process (of the `slow-readers` phase): this bench binary run again
//! with `WASMIND_BENCH_SLOW_READERS=<address>,<count>`, which opens the readers, waits for
//! them all, prints what they saw as one line of JSON and exits.
//!
//! A process of their own, because one process holding both ends of each connection needs
//! two descriptors a reader, and this machine's hard open-file limit (20,000) fits 9,500;
//! apart, the server's process needs one a reader and so does theirs. The process runs at
//! nice 19 (as other machines' clients would not be on the server's cores at all), so that
//! what tenant B waits for is the server's work on the readers, not the readers' own.

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::harness::lower_priority;
use super::nofile::Nofile;

/// Where the bench binary, run again, finds its readers' address and count.
const ASKED: &str = "WASMIND_BENCH_SLOW_READERS";
/// The reader's request: the largest answer anyone may ask for.
const ASK: &[u8] = b"GET /api/v1/docs/swagger-ui-bundle.js HTTP/1.1\r\nhost: x\r\n\r\n";
/// The readers' receive buffer (the kernel doubles it).
const WINDOW: usize = 4096;
/// The readers' MSS: an Ethernet path's.
const MSS: u32 = 1460;
/// Longest a reader waits for the server to end its answer.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// What the readers saw, as their process reports it.
#[derive(Serialize, Deserialize)]
pub struct Flood {
    /// The readers' process's open-file limit; it opened `nofile.fit` readers.
    pub nofile: Nofile,
    /// When the last reader was answered (a 429, or its answer's start), on the monotonic
    /// clock the two processes share.
    answered: Duration,
    pub failed: usize,
    pub refused: usize,
    /// Each reader taken in: its time from its request to the server ending the answer.
    pub cut: Vec<Duration>,
    /// Readers taken in whose answer had not ended after [`PATIENCE`].
    pub open: usize,
}

impl Flood {
    /// When the last reader was answered, on this process's clock.
    pub fn answered(&self) -> Instant {
        let ago = monotonic().saturating_sub(self.answered);
        Instant::now().checked_sub(ago).unwrap_or_else(Instant::now)
    }
}

/// The monotonic clock (`CLOCK_MONOTONIC`, one for the whole machine), as a duration
/// since its start.
fn monotonic() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Runs this binary again as `n` readers of `addr`, and returns what they saw.
pub fn run(addr: SocketAddr, n: usize) -> Flood {
    let exe = std::env::current_exe().expect("the bench binary's path");
    let out = Command::new(exe)
        .env(ASKED, format!("{addr},{n}"))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("start the readers' process");
    assert!(out.status.success(), "the readers' process: {}", out.status);
    serde_json::from_slice(&out.stdout).expect("the readers' report")
}

/// In the readers' process (when [`ASKED`] is set): opens the readers, prints what they saw
/// and returns true. Elsewhere returns false at once.
pub fn serve_if_asked() -> bool {
    let Ok(asked) = std::env::var(ASKED) else {
        return false;
    };
    let (addr, n) = asked
        .split_once(',')
        .and_then(|(addr, n)| Some((addr.parse().ok()?, n.parse().ok()?)))
        .unwrap_or_else(|| panic!("{ASKED}={asked:?}: want <address>,<count>"));
    // Before the runtime: the threads it may start take this thread's priority.
    lower_priority("the slow readers");
    let flood = readers(addr, Nofile::raise(n, 1));
    println!(
        "{}",
        serde_json::to_string(&flood).expect("the readers' report")
    );
    true
}

/// How one reader ended, and when it was answered.
enum Outcome {
    Failed,
    Refused(Duration),
    Cut(Duration, Duration),
    Open(Duration),
}

/// Opens as many readers to `addr` at once as `nofile` fits, each as [`reader`] does.
fn readers(addr: SocketAddr, nofile: Nofile) -> Flood {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let tasks: Vec<_> = (0..nofile.fit)
            .map(|_| tokio::spawn(reader(addr)))
            .collect();
        let mut flood = Flood {
            nofile,
            answered: monotonic(),
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
    let answered = monotonic();
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
