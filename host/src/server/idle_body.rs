//! A request body that fails its read when the client sends nothing for a while, so a
//! client that announces a body and stalls holds its connection (and its place under the
//! cap) no longer than that.

use std::{
    pin::Pin,
    task::{Context, Poll, ready},
    time::Duration,
};

use axum::{BoxError, body::Bytes};
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::{Sleep, sleep};

/// `inner`, failing with `TimedOut` once a read waits `idle` for its next frame.
pub struct IdleBody<B> {
    inner: B,
    idle: Duration,
    /// Running while a read waits; dropped when a frame arrives.
    timer: Option<Pin<Box<Sleep>>>,
}

impl<B> IdleBody<B> {
    pub fn new(inner: B, idle: Duration) -> Self {
        Self {
            inner,
            idle,
            timer: None,
        }
    }
}

impl<B> Body for IdleBody<B>
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
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            this.timer = None;
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let idle = this.idle;
        let timer = this.timer.get_or_insert_with(|| Box::pin(sleep(idle)));
        ready!(timer.as_mut().poll(cx));
        let secs = idle.as_secs_f64();
        let stalled = format!("the request body sent nothing for {secs} s");
        Poll::Ready(Some(Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            stalled,
        )
        .into())))
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

    use super::IdleBody;

    const IDLE: Duration = Duration::from_millis(500);

    /// A body whose chunks are sent on the returned channel, read with [`IDLE`].
    fn fed() -> (mpsc::Sender<Bytes>, AxumBody) {
        let (tx, mut rx) = mpsc::channel::<Bytes>(1);
        let stream = futures_util::stream::poll_fn(move |cx| {
            rx.poll_recv(cx)
                .map(|chunk| chunk.map(Ok::<_, std::io::Error>))
        });
        let body = IdleBody::new(AxumBody::from_stream(stream), IDLE);
        (tx, AxumBody::new(body))
    }

    #[tokio::test]
    async fn a_body_that_keeps_sending_is_read_and_one_that_stalls_fails() {
        let (tx, body) = fed();
        let reader = tokio::spawn(to_bytes(body, usize::MAX));
        for chunk in ["a", "b", "c"] {
            tokio::time::sleep(IDLE / 5).await;
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
}
