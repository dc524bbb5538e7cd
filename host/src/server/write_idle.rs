//! A connection's write side that fails once a write has waited too long for the client to
//! take any bytes, so a client that asks for a large answer and never reads it (a tiny
//! receive window, a stopped reader) gives its connection back. hyper's head timer does not
//! run while it writes a response, and its write would otherwise wait for good.
//!
//! Only a write that waits is timed: a connection with nothing to send (a quiet event
//! stream, a request being worked on) never is, nor one whose client keeps reading, however
//! long its answer. The kernel wakes a waiting writer once a third of the send buffer is
//! free, so a client reading a byte a second does not count as taking bytes.
//!
//! A connection cut so is reset when it closes (`SO_LINGER` 0, as nginx's
//! `reset_timedout_connection`): what it still holds unsent is dropped at once, where a
//! plain close would leave the kernel a socket with full buffers, orphaned, for as long as
//! the client keeps its window shut.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll, ready},
    time::Duration,
};

use rustix::net::sockopt;
use tokio::{
    io::AsyncWrite,
    net::tcp::OwnedWriteHalf,
    time::{Sleep, sleep},
};

/// A connection's write side, whose writes fail with `TimedOut` once one waits `idle`.
pub struct WriteIdle {
    inner: OwnedWriteHalf,
    idle: Duration,
    /// Running while a write waits; dropped when one goes through.
    timer: Option<Pin<Box<Sleep>>>,
}

impl WriteIdle {
    pub fn new(inner: OwnedWriteHalf, idle: Duration) -> Self {
        Self {
            inner,
            idle,
            timer: None,
        }
    }

    /// `polled`, or the timeout's error once a write has waited `idle`.
    fn watch<T>(
        &mut self,
        polled: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        if let Poll::Ready(done) = polled {
            self.timer = None;
            return Poll::Ready(done);
        }
        let idle = self.idle;
        let timer = self.timer.get_or_insert_with(|| Box::pin(sleep(idle)));
        ready!(timer.as_mut().poll(cx));
        if let Err(e) = sockopt::set_socket_linger(self.inner.as_ref(), Some(Duration::ZERO)) {
            tracing::debug!(error = %e, "setting a stalled connection to reset on close failed");
        }
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the client took nothing of the response for {} s",
                idle.as_secs_f64()
            ),
        )))
    }
}

impl AsyncWrite for WriteIdle {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(polled, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(polled, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(polled, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(polled, cx)
    }
}

#[cfg(test)]
mod tests {
    use std::{
        io::ErrorKind,
        time::{Duration, Instant},
    };

    use tokio::{
        io::{AsyncReadExt, AsyncWriteExt},
        net::{TcpListener, TcpSocket, TcpStream},
    };

    use super::WriteIdle;

    const IDLE: Duration = Duration::from_millis(300);
    /// More than any send and receive buffer hold between them.
    const ANSWER: usize = 16 << 20;

    /// A loopback connection: the client's end (a receive buffer of a few KiB), and the
    /// server's write side under [`IDLE`].
    async fn connection() -> (TcpStream, WriteIdle) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let socket = TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let client = socket
            .connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let (_, write) = server.into_split();
        (client, WriteIdle::new(write, IDLE))
    }

    #[tokio::test]
    async fn an_answer_the_client_reads_goes_through_however_long() {
        let (mut client, mut writer) = connection().await;
        let read = tokio::spawn(async move {
            let mut got = 0;
            let mut buf = vec![0u8; 64 * 1024];
            while got < ANSWER {
                got += client.read(&mut buf).await.unwrap();
            }
            got
        });
        writer
            .write_all(&vec![b'x'; ANSWER])
            .await
            .expect("read as it came");
        assert_eq!(read.await.unwrap(), ANSWER);
    }

    #[tokio::test]
    async fn an_answer_the_client_takes_nothing_of_fails_and_its_connection_is_reset() {
        let (mut client, mut writer) = connection().await;
        let started = Instant::now();
        let err = writer
            .write_all(&vec![b'x'; ANSWER])
            .await
            .expect_err("never read");
        assert_eq!(err.kind(), ErrorKind::TimedOut);
        assert!(err.to_string().contains("took nothing"), "{err}");
        assert!(started.elapsed() >= IDLE, "{:?}", started.elapsed());
        drop(writer);
        // Reset, not closed after the megabytes still queued for it.
        let mut buf = vec![0u8; 64 * 1024];
        let mut got = 0;
        let end = loop {
            match client.read(&mut buf).await {
                Ok(0) => break Ok(got),
                Ok(n) => got += n,
                Err(e) => break Err(e.kind()),
            }
        };
        assert_eq!(end, Err(ErrorKind::ConnectionReset), "read {got} bytes");
    }
}
