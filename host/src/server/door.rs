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
use tokio_util::bytes::BytesMut;
use tokio_util::sync::CancellationToken;

/// Past this many bytes with no end of head the connection is handed on as it is: hyper's
/// own limit on a head (and its 431) applies from there.
const MOST_HELD: usize = 16 * 1024;

/// A connection whose first head has arrived whole.
pub(super) struct Entrant {
    pub(super) stream: std::net::TcpStream,
    /// What was read from it so far: the head, and whatever followed it in the same reads.
    pub(super) read: BytesMut,
    /// Its place under the cap on open connections, held until it closes.
    pub(super) place: OwnedSemaphorePermit,
}

/// The door's thread, accepting on `listener` until `stop` is cancelled.
pub(super) struct Door {
    pub(super) entrants: mpsc::UnboundedReceiver<Entrant>,
    thread: JoinHandle<()>,
}

impl Door {
    /// Opens the door on a thread of its own: it accepts while fewer than `cap` connections
    /// are open (counting those served), and closes a connection whose head is not whole
    /// `header_timeout` after it was accepted.
    pub(super) fn open(
        listener: TcpListener,
        header_timeout: Duration,
        cap: usize,
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
        let (send, entrants) = mpsc::unbounded_channel();
        let thread = std::thread::Builder::new()
            .name("http-door".into())
            .spawn(move || {
                runtime.block_on(admit(listener, header_timeout, cap, send, stop));
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
    header_timeout: Duration,
    cap: usize,
    send: mpsc::UnboundedSender<Entrant>,
    stop: CancellationToken,
) {
    let open = Arc::new(Semaphore::new(cap));
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = accept(&listener, &open) => accepted,
        };
        let Some((mut stream, place)) = accepted else {
            continue;
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

/// The next connection, with its place under the cap (waited for first); `None` after an
/// accept error (logged, and after a pause when it is not the client's: out of files).
async fn accept(
    listener: &TcpListener,
    open: &Arc<Semaphore>,
) -> Option<(TcpStream, OwnedSemaphorePermit)> {
    let place = open.clone().acquire_owned().await.expect("never closed");
    match listener.accept().await {
        Ok((stream, _)) => Some((stream, place)),
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
/// the client closes first.
async fn read_head(stream: &mut TcpStream) -> io::Result<BytesMut> {
    let mut read = BytesMut::new();
    let mut searched: usize = 0;
    loop {
        // Room for a whole read each time: a full `BytesMut` would grow 64 bytes a read.
        read.reserve(4096);
        if stream.read_buf(&mut read).await? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if head_ends(&read[searched.saturating_sub(2)..]) || read.len() >= MOST_HELD {
            return Ok(read);
        }
        searched = read.len();
    }
}

/// Whether `bytes` hold the empty line that ends a head: a line end followed by another,
/// each `\r\n` or a bare `\n` (which hyper accepts too).
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

    /// A door on a loopback port with a header timeout of `timeout`.
    async fn door(timeout: Duration) -> (Door, std::net::SocketAddr, CancellationToken) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let door = Door::open(listener, timeout, 4, stop.clone()).unwrap();
        (door, addr, stop)
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
        let mut buf = [0u8; 16];
        let read = tokio::time::timeout(Duration::from_secs(10), stranger.read(&mut buf)).await;
        assert!(
            matches!(read, Ok(Ok(0)) | Ok(Err(_))),
            "closed, not answered: {read:?}"
        );
        assert!(opened.elapsed() >= Duration::from_millis(300));
        assert!(door.entrants.try_recv().is_err());
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
