//! The door: a new connection waits on a thread of its own until its first request head is
//! whole, and only then is handed to the runtime that serves requests — what FreeBSD's
//! `accf_http` accept filter does in the kernel.
//!
//! Why: on the serving runtime, thousands of strangers that connect and send half a head
//! (or nothing) are thousands of tasks — accepted, read, timed, closed — queued with the
//! clients' own, and tokio runs a ready task only after those ahead of it. Here they queue
//! behind each other on another thread, which the kernel schedules beside the serving
//! workers like any other (BENCHMARKS.md, "Fair memory work, fifth pass"). A stranger that
//! never completes a head never reaches the serving runtime at all; it is closed here once
//! the header timeout passes.
//!
//! The door only finds where the head ends (an empty line); hyper still parses it, and
//! everything read with it (the body's start, a pipelined request) is read again first.

use std::{io, sync::Arc, thread::JoinHandle, time::Duration};

use tokio::{
    io::AsyncReadExt,
    net::{TcpListener, TcpStream},
    sync::{OwnedSemaphorePermit, Semaphore, mpsc},
};
use tokio_util::bytes::{Buf, BytesMut};
use tokio_util::sync::CancellationToken;

use super::{
    http::HttpConfig,
    per_address::{self, Client},
    tcp::TcpOptions,
};
use crate::places::{Place, Places};

/// Past this many bytes with no end of head the connection is handed on as it is: hyper's
/// own limit on a head (and its 431) applies from there. hyper's buffer is this size too
/// (`max_buf_size`, whose least is 8 KiB), so what the door would not hold, hyper does not
/// either.
pub(super) const MOST_HELD: usize = 16 * 1024;
const _: () = assert!(MOST_HELD >= 8192, "hyper's max_buf_size panics below 8 KiB");

/// A connection whose first head has arrived whole.
pub(super) struct Entrant {
    pub(super) stream: std::net::TcpStream,
    /// What was read from it so far: the head, and whatever followed it in the same reads.
    pub(super) read: BytesMut,
    /// Its places under the caps, held until it closes.
    pub(super) place: Held,
}

/// A connection's places: under the cap on open connections, and under its address's.
pub(super) struct Held {
    _open: OwnedSemaphorePermit,
    _address: Place<Client>,
}

/// The door's thread, accepting on `listener` until `stop` is cancelled.
pub(super) struct Door {
    pub(super) entrants: mpsc::UnboundedReceiver<Entrant>,
    thread: JoinHandle<()>,
}

/// What the door enforces, from `[http]`.
struct Rules {
    header_timeout: Duration,
    max_connections: usize,
    per_address: u32,
    /// The answer past an address's cap.
    refusal: Vec<u8>,
    tcp: TcpOptions,
}

impl Door {
    /// Opens the door on a thread of its own: it accepts while fewer than `max_connections`
    /// are open (counting those served), answers 429 to and closes a connection whose
    /// address has `max_connections_per_address` open, and closes a connection whose head
    /// is not whole `header_read_timeout_secs` after it was accepted.
    pub(super) fn open(
        listener: TcpListener,
        config: &HttpConfig,
        stop: CancellationToken,
    ) -> io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        // Moved to the door's runtime: its readiness is the door's to wait for.
        let listener = {
            let _door = runtime.enter();
            TcpListener::from_std(listener.into_std()?)?
        };
        let rules = Rules {
            header_timeout: config.header_read_timeout(),
            max_connections: config.max_connections,
            per_address: config.max_connections_per_address,
            refusal: per_address::refusal(config.max_connections_per_address),
            tcp: TcpOptions {
                keepalive: config.tcp_keepalive(),
                user_timeout: config.tcp_user_timeout(),
            },
        };
        let (send, entrants) = mpsc::unbounded_channel();
        let thread = std::thread::Builder::new()
            .name("http-door".into())
            .spawn(move || {
                runtime.block_on(admit(listener, rules, send, stop));
                // Dropping the runtime closes the connections still waiting at the door.
            })?;
        Ok(Self { entrants, thread })
    }

    /// Waits for the door's thread to end (once its `stop` is cancelled): the listener is
    /// closed and the connections still at the door with it.
    pub(super) async fn closed(self) {
        drop(self.entrants);
        let _ = tokio::task::spawn_blocking(move || self.thread.join()).await;
    }
}

async fn admit(
    listener: TcpListener,
    rules: Rules,
    send: mpsc::UnboundedSender<Entrant>,
    stop: CancellationToken,
) {
    let open = Arc::new(Semaphore::new(rules.max_connections));
    let addresses = Places::<Client>::default();
    let header_timeout = rules.header_timeout;
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = accept(&listener, &open) => accepted,
        };
        let Some((mut stream, peer, open)) = accepted else {
            continue;
        };
        let Ok(address) = addresses.take(Client::from(peer.ip()), rules.per_address) else {
            per_address::refuse(stream, &rules.refusal);
            continue;
        };
        if let Err(e) = rules.tcp.apply(&stream) {
            tracing::debug!(error = %e, "setting keepalive on a connection failed");
        }
        let place = Held {
            _open: open,
            _address: address,
        };
        let send = send.clone();
        tokio::spawn(async move {
            let head = tokio::time::timeout(header_timeout, read_head(&mut stream)).await;
            let Ok(Ok(read)) = head else {
                return; // Timed out, closed by the client or failed: dropped, so closed.
            };
            // Only now: a stranger never sent a byte it would hurry.
            let _ = stream.set_nodelay(true);
            match stream.into_std() {
                Ok(stream) => {
                    let _ = send.send(Entrant {
                        stream,
                        read,
                        place,
                    });
                }
                Err(e) => tracing::debug!(error = %e, "handing a connection on failed"),
            }
        });
    }
}

/// The next connection and its peer, with its place under the cap (waited for first);
/// `None` after an accept error (logged, and after a pause when it is not the client's:
/// out of files).
async fn accept(
    listener: &TcpListener,
    open: &Arc<Semaphore>,
) -> Option<(TcpStream, std::net::SocketAddr, OwnedSemaphorePermit)> {
    let place = open.clone().acquire_owned().await.expect("never closed");
    match listener.accept().await {
        Ok((stream, peer)) => Some((stream, peer, place)),
        Err(e) if is_connection_error(&e) => None,
        Err(e) => {
            tracing::error!(error = %e, "accepting a connection failed");
            tokio::time::sleep(Duration::from_secs(1)).await;
            None
        }
    }
}

/// An error of the one connection being accepted, not of the listener.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Reads until what was read holds a whole head (or [`MOST_HELD`] bytes); an error when
/// the client closes first. Empty lines before the request line are read and dropped
/// (RFC 9112 §2.2 lets a server ignore them), so they neither end a head nor count
/// towards [`MOST_HELD`]: a client that sends only those waits here until the timeout.
async fn read_head(stream: &mut TcpStream) -> io::Result<BytesMut> {
    let mut read = BytesMut::new();
    let mut searched: usize = 0;
    let mut begun = false;
    loop {
        // Room for a whole read each time: a full `BytesMut` would grow 64 bytes a read.
        read.reserve(4096);
        if stream.read_buf(&mut read).await? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if !begun {
            read.advance(empty_lines(&read));
            // A lone `\r` may still be the start of an empty line.
            begun = !read.is_empty() && read[..] != *b"\r";
            if !begun {
                continue;
            }
        }
        if head_ends(&read[searched.saturating_sub(2)..]) || read.len() >= MOST_HELD {
            return Ok(read);
        }
        searched = read.len();
    }
}

/// How many bytes at the start of `bytes` are whole empty lines (`\r\n` or a bare `\n`,
/// as hyper's parser skips them too); a `\r` whose `\n` has not arrived is not counted.
fn empty_lines(bytes: &[u8]) -> usize {
    let mut at = 0;
    loop {
        match &bytes[at..] {
            [b'\n', ..] => at += 1,
            [b'\r', b'\n', ..] => at += 2,
            _ => return at,
        }
    }
}

/// Whether `bytes` (from the request line on) hold the empty line that ends a head: a
/// line end followed by another, each `\r\n` or a bare `\n` (which hyper accepts too).
fn head_ends(bytes: &[u8]) -> bool {
    bytes
        .windows(2)
        .enumerate()
        .any(|(i, w)| w == b"\n\n" || (w == b"\n\r" && bytes.get(i + 2) == Some(&b'\n')))
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use tokio::io::AsyncWriteExt;

    use super::*;

    #[test]
    fn a_head_ends_at_an_empty_line_of_either_kind() {
        assert!(head_ends(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"));
        assert!(head_ends(b"GET / HTTP/1.1\nhost: x\n\n"));
        assert!(head_ends(b"GET / HTTP/1.1\r\n\r\n{\"body\""));
        assert!(!head_ends(b"GET / HTTP/1.1\r\nhost: x\r\n"));
        assert!(!head_ends(b"GET /api/v1/mem"));
        assert!(!head_ends(b"\r\n\r"));
    }

    #[test]
    fn empty_lines_before_the_request_line_are_counted_whole() {
        assert_eq!(empty_lines(b"\r\n\r\nGET / HTTP/1.1\r\n"), 4);
        assert_eq!(empty_lines(b"\n\nGET"), 2);
        assert_eq!(empty_lines(b"\r\n\r"), 2, "a lone \\r waits for its \\n");
        assert_eq!(empty_lines(b"\rGET"), 0);
        assert_eq!(empty_lines(b"GET / HTTP/1.1\r\n\r\n"), 0);
    }

    /// A door on a loopback port with a header timeout of `timeout`, four places, and two
    /// per address.
    async fn door(timeout: Duration) -> (Door, std::net::SocketAddr, CancellationToken) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let config = HttpConfig {
            header_read_timeout_secs: timeout.as_secs_f64(),
            max_connections: 4,
            max_connections_per_address: 2,
            ..HttpConfig::default()
        };
        let door = Door::open(listener, &config, stop.clone()).unwrap();
        (door, addr, stop)
    }

    /// A connection to `addr` from `source` (any 127/8 address is this host's loopback).
    async fn connect_from(source: &str, addr: std::net::SocketAddr) -> TcpStream {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
        socket.connect(addr).await.unwrap()
    }

    /// Reads until `stream` is closed (within 10 s), returning what came.
    async fn read_to_close(stream: &mut TcpStream) -> String {
        let mut got = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), async {
            let mut buf = [0u8; 1024];
            while let Ok(n @ 1..) = stream.read(&mut buf).await {
                got.extend_from_slice(&buf[..n]);
            }
        });
        read.await.expect("closed within 10 s");
        String::from_utf8_lossy(&got).into_owned()
    }

    #[tokio::test]
    async fn a_head_sent_in_pieces_is_handed_on_whole_with_what_followed_it() {
        let (mut door, addr, stop) = door(Duration::from_secs(10)).await;
        let mut client = TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"POST / HTTP/1.1\r\nhost: x\r")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(door.entrants.try_recv().is_err(), "handed on half a head");
        client
            .write_all(b"\ncontent-length: 2\r\n\r\nhi")
            .await
            .unwrap();
        let entrant = door.entrants.recv().await.unwrap();
        // The body may come with the head or after it: the client's bytes, in order.
        let sent = b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\nhi";
        let mut stream = TcpStream::from_std(entrant.stream).unwrap();
        let mut got = entrant.read;
        while got.len() < sent.len() {
            stream.read_buf(&mut got).await.unwrap();
        }
        assert_eq!(&got[..], sent);
        stream.write_all(b"ok").await.unwrap();
        let mut answer = [0u8; 2];
        client.read_exact(&mut answer).await.unwrap();
        assert_eq!(&answer, b"ok");
        stop.cancel();
        door.closed().await;
    }

    #[tokio::test]
    async fn half_a_head_is_closed_at_the_header_timeout_and_never_handed_on() {
        let (mut door, addr, stop) = door(Duration::from_millis(300)).await;
        let opened = Instant::now();
        let mut stranger = TcpStream::connect(addr).await.unwrap();
        stranger.write_all(b"GET /api/v1/mem").await.unwrap();
        assert_eq!(
            read_to_close(&mut stranger).await,
            "",
            "closed, not answered"
        );
        assert!(opened.elapsed() >= Duration::from_millis(300));
        assert!(door.entrants.try_recv().is_err());
        stop.cancel();
        door.closed().await;
    }

    #[tokio::test]
    async fn empty_lines_are_not_a_head_and_a_real_head_after_them_is() {
        let (mut door, addr, stop) = door(Duration::from_millis(300)).await;
        let opened = Instant::now();
        let mut blank = TcpStream::connect(addr).await.unwrap();
        blank.write_all(b"\r\n\r\n").await.unwrap();
        let mut bare = TcpStream::connect(addr).await.unwrap();
        bare.write_all(b"\n\n").await.unwrap();
        for stranger in [&mut blank, &mut bare] {
            assert_eq!(read_to_close(stranger).await, "", "closed, not answered");
        }
        assert!(opened.elapsed() >= Duration::from_millis(300));
        assert!(door.entrants.try_recv().is_err(), "an empty line passed");

        let mut client = TcpStream::connect(addr).await.unwrap();
        client.write_all(b"\r\n\r\n\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let entrant = door.entrants.recv().await.unwrap();
        assert_eq!(&entrant.read[..], b"GET / HTTP/1.1\r\n\r\n");
        stop.cancel();
        door.closed().await;
    }

    #[tokio::test]
    async fn past_its_cap_an_address_is_answered_429_and_others_still_come_in() {
        let (mut door, addr, stop) = door(Duration::from_secs(10)).await;
        let held = [
            connect_from("127.0.0.1", addr).await,
            connect_from("127.0.0.1", addr).await,
        ];
        let mut third = connect_from("127.0.0.1", addr).await;
        third
            .write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let answer = read_to_close(&mut third).await;
        assert!(answer.starts_with("HTTP/1.1 429 "), "{answer}");
        assert!(answer.contains("connection_limit_reached"), "{answer}");

        let mut other = connect_from("127.0.0.2", addr).await;
        other.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let entrant = door.entrants.recv().await.unwrap();
        assert_eq!(&entrant.read[..], b"GET / HTTP/1.1\r\n\r\n");
        // A place given back is taken again.
        drop(held);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut again = connect_from("127.0.0.1", addr).await;
        again.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let entrant = tokio::time::timeout(Duration::from_secs(10), door.entrants.recv());
        assert!(entrant.await.unwrap().is_some());
        stop.cancel();
        door.closed().await;
    }

    #[tokio::test]
    async fn closing_the_door_closes_the_listener_and_who_waits_at_it() {
        let (door, addr, stop) = door(Duration::from_secs(10)).await;
        let mut waiting = TcpStream::connect(addr).await.unwrap();
        waiting.write_all(b"GET / HT").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.cancel();
        door.closed().await;
        let mut buf = [0u8; 16];
        assert!(matches!(waiting.read(&mut buf).await, Ok(0) | Err(_)));
        assert!(TcpStream::connect(addr).await.is_err(), "still listening");
    }
}
