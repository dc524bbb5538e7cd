//! A request body that fails its read when the client sends too slowly, so a client that
//! announces a body and stalls, or trickles it, holds its connection (and its places under
//! the caps) no longer than the pace allows:
//!
//! - **Idle**: a read that waits `idle` for its next bytes fails.
//! - **Rate**: past `idle` from the first read, the body must have averaged `min_rate`
//!   bytes a second since then — by time `t` after the first read, `min_rate × (t − idle)`
//!   bytes — so a body sent a byte every `idle − 1` seconds, never idle for long enough,
//!   still ends just after `idle`. A fast body buys time for a later pause: each byte moves
//!   the deadline `1 / min_rate` s on (the rule of Apache's `mod_reqtimeout` `MinRate`).
//!
//! Both are checked only while a read waits: bytes already received are never refused.
//!
//! The body also says whether it was read to its end ([`ReadToEnd`]): hyper reads at most
//! one buffer of a body its handler left unread, then closes the connection after the
//! answer without saying so in it, and the client sends its next request into a closed
//! connection; the server says `connection: close` in such an answer instead.

use std::{
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll, ready},
    time::Duration,
};

use axum::{BoxError, body::Bytes};
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep, sleep_until};

/// How slowly a body may come.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    pub idle: Duration,
    /// Bytes per second, averaged from `idle` after the first read on.
    pub min_rate: u64,
}

/// `inner`, failing with `TimedOut` once it comes slower than its [`Pace`].
pub struct PacedBody<B> {
    inner: B,
    pace: Pace,
    /// When the first read began.
    began: Option<Instant>,
    /// Data bytes received so far.
    received: u64,
    /// Running while a read waits, with which rule it ends; dropped when a frame arrives.
    timer: Option<(Pin<Box<Sleep>>, Slow)>,
    ended: ReadToEnd,
}

/// Whether a body was read to its end, seen from outside it.
#[derive(Debug, Clone, Default)]
pub struct ReadToEnd(Arc<AtomicBool>);

impl ReadToEnd {
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    fn set(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Which rule a waiting read's timer is for.
#[derive(Debug, Clone, Copy)]
enum Slow {
    Idle,
    Rate,
}

impl<B: Body> PacedBody<B> {
    pub fn new(inner: B, pace: Pace) -> Self {
        let ended = ReadToEnd::default();
        if inner.is_end_stream() {
            ended.set();
        }
        Self {
            inner,
            pace,
            began: None,
            received: 0,
            timer: None,
            ended,
        }
    }

    /// Set once the body has been read to its end.
    pub fn ended(&self) -> ReadToEnd {
        self.ended.clone()
    }

    /// The timer of a read that starts waiting now: the earlier of its idle deadline and
    /// the rate's.
    fn timer(&self, began: Instant) -> (Pin<Box<Sleep>>, Slow) {
        let now = Instant::now();
        let idle = now + self.pace.idle;
        let earned = Duration::from_secs_f64(self.received as f64 / self.pace.min_rate as f64);
        let rate = began + self.pace.idle + earned;
        let (at, slow) = if rate < idle {
            (rate, Slow::Rate)
        } else {
            (idle, Slow::Idle)
        };
        (Box::pin(sleep_until(at)), slow)
    }

    /// The error of a read that waited past its timer.
    fn too_slow(&self, slow: Slow, began: Instant) -> BoxError {
        let idle = self.pace.idle.as_secs_f64();
        let message = match slow {
            Slow::Idle => format!("the request body sent nothing for {idle} s"),
            Slow::Rate => format!(
                "the request body came slower than {} bytes/s ({} bytes in {:.1} s)",
                self.pace.min_rate,
                self.received,
                began.elapsed().as_secs_f64()
            ),
        };
        std::io::Error::new(std::io::ErrorKind::TimedOut, message).into()
    }
}

impl<B> Body for PacedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let began = *this.began.get_or_insert_with(Instant::now);
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            this.timer = None;
            if let Some(Ok(data)) = frame.as_ref().map(|f| f.as_ref().map(Frame::data_ref)) {
                this.received += data.map_or(0, |d| d.len() as u64);
            }
            if frame.is_none() || this.inner.is_end_stream() {
                this.ended.set();
            }
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if this.timer.is_none() {
            this.timer = Some(this.timer(began));
        }
        let (timer, slow) = this.timer.as_mut().expect("just set");
        ready!(timer.as_mut().poll(cx));
        let slow = *slow;
        Poll::Ready(Some(Err(this.too_slow(slow, began))))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::body::{Body as AxumBody, Bytes, to_bytes};
    use tokio::sync::mpsc;

    use super::{Pace, PacedBody, ReadToEnd};

    const PACE: Pace = Pace {
        idle: Duration::from_millis(500),
        min_rate: 100,
    };

    /// A body whose chunks are sent on the returned channel, read at [`PACE`].
    fn fed() -> (mpsc::Sender<Bytes>, AxumBody) {
        let (tx, body, _) = fed_ending();
        (tx, body)
    }

    /// [`fed`], and whether it was read to its end.
    fn fed_ending() -> (mpsc::Sender<Bytes>, AxumBody, ReadToEnd) {
        let (tx, mut rx) = mpsc::channel::<Bytes>(1);
        let stream = futures_util::stream::poll_fn(move |cx| {
            rx.poll_recv(cx)
                .map(|chunk| chunk.map(Ok::<_, std::io::Error>))
        });
        let body = PacedBody::new(AxumBody::from_stream(stream), PACE);
        let ended = body.ended();
        (tx, AxumBody::new(body), ended)
    }

    #[tokio::test]
    async fn a_body_says_whether_it_was_read_to_its_end() {
        let empty = PacedBody::new(AxumBody::empty(), PACE);
        assert!(empty.ended().is_set(), "nothing to read");

        let (tx, body, ended) = fed_ending();
        tx.send(Bytes::from("a")).await.unwrap();
        let mut body = body.into_data_stream();
        futures_util::StreamExt::next(&mut body)
            .await
            .unwrap()
            .unwrap();
        assert!(!ended.is_set(), "more may come");
        drop(body);
        assert!(!ended.is_set(), "dropped before its end");

        let (tx, body, ended) = fed_ending();
        tx.send(Bytes::from("a")).await.unwrap();
        drop(tx);
        to_bytes(body, usize::MAX).await.unwrap();
        assert!(ended.is_set());
    }

    #[tokio::test]
    async fn a_body_that_keeps_sending_is_read_and_one_that_stalls_fails() {
        let (tx, body) = fed();
        let reader = tokio::spawn(to_bytes(body, usize::MAX));
        for chunk in ["a", "b", "c"] {
            tokio::time::sleep(PACE.idle / 5).await;
            tx.send(Bytes::from(chunk)).await.unwrap();
        }
        drop(tx);
        let read = reader.await.unwrap();
        assert_eq!(read.expect("each chunk came within the idle time"), "abc");

        let (tx, body) = fed();
        let reader = tokio::spawn(to_bytes(body, usize::MAX));
        tx.send(Bytes::from("a")).await.unwrap();
        let err = reader.await.unwrap().expect_err("a stalled body fails");
        assert!(
            format!("{err:?}").contains("sent nothing for 0.5 s"),
            "{err:?}"
        );
        drop(tx);
    }

    /// A byte every 29/30 of the idle time is never idle for long enough, and fails the
    /// rate just after the idle time; a body over the rate, pausing under the idle time
    /// between its chunks, is read whole.
    #[tokio::test]
    async fn a_trickled_body_fails_the_rate_and_a_fast_one_may_pause() {
        let (tx, body) = fed();
        let started = std::time::Instant::now();
        let reader = tokio::spawn(to_bytes(body, usize::MAX));
        let trickle = tokio::spawn(async move {
            while tx.send(Bytes::from_static(b"x")).await.is_ok() {
                tokio::time::sleep(PACE.idle * 29 / 30).await;
            }
        });
        let err = reader.await.unwrap().expect_err("a trickled body fails");
        assert!(
            format!("{err:?}").contains("slower than 100 bytes/s"),
            "{err:?}"
        );
        let took = started.elapsed();
        assert!(
            took > PACE.idle && took < PACE.idle * 2,
            "failed at {took:?}"
        );
        trickle.abort();

        let (tx, body) = fed();
        let reader = tokio::spawn(to_bytes(body, usize::MAX));
        // Past the idle time, 300 bytes by 0.8 s is well over the rate.
        tx.send(Bytes::from(vec![b'x'; 100])).await.unwrap();
        tokio::time::sleep(PACE.idle * 4 / 5).await;
        tx.send(Bytes::from(vec![b'y'; 100])).await.unwrap();
        tokio::time::sleep(PACE.idle * 4 / 5).await;
        tx.send(Bytes::from(vec![b'z'; 100])).await.unwrap();
        drop(tx);
        let read = reader.await.unwrap().expect("at the rate, read whole");
        assert_eq!(read.len(), 300);
    }
}
