//! The HTTP listener: every connection hyper's HTTP/1 serves with timeouts that a stranger
//! cannot hold open, under a cap on open connections.
//!
//! - A request head must arrive whole within `header_read_timeout_secs` of the server
//!   starting to wait for it: on a new connection, and between the requests of a kept-alive
//!   one, so the same bound is the keep-alive idle timeout (hyper starts its head timer when
//!   it starts waiting).
//! - A request body that sends nothing for `body_idle_timeout_secs` fails its read
//!   ([`IdleBody`]); the request is answered 400 and the connection closed.
//! - At `max_connections` open connections the listener stops accepting until one closes:
//!   further clients wait in the kernel's backlog (a refusal would tell a client to go
//!   away while the holders of the cap — by then stalled strangers, closed within the
//!   header timeout — are the ones to go).
//!
//! A new connection's first head is awaited at the [`door`](super::door), on a thread of
//! its own; the serving runtime gets the connection once that head is whole.

use std::{
    io::{self, Cursor},
    time::Duration,
};

use axum::{Router, body::Body, extract::Request};
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::Deserialize;
use tokio::{
    io::AsyncReadExt,
    net::{TcpListener, TcpStream},
};
use tokio_util::{sync::CancellationToken, task::TaskTracker};
use tower::ServiceExt;

use super::{
    door::{Door, Entrant},
    idle_body::IdleBody,
};

/// The `[http]` section of the config file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// Longest wait for a whole request head, on a new or kept-alive connection, in seconds.
    pub header_read_timeout_secs: f64,
    /// Longest a request body may send nothing, in seconds.
    pub body_idle_timeout_secs: f64,
    /// Most connections open at once; past it the listener waits for one to close.
    pub max_connections: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            header_read_timeout_secs: 10.0,
            body_idle_timeout_secs: 30.0,
            max_connections: 10_000,
        }
    }
}

impl HttpConfig {
    /// Rejects timeouts that are not positive and a cap of no connection.
    pub fn check(&self) -> anyhow::Result<()> {
        for (name, secs) in [
            ("header_read_timeout_secs", self.header_read_timeout_secs),
            ("body_idle_timeout_secs", self.body_idle_timeout_secs),
        ] {
            if !(secs.is_finite() && secs > 0.0) {
                anyhow::bail!("[http] {name} must be a positive number of seconds, not {secs}");
            }
        }
        if self.max_connections == 0 {
            anyhow::bail!("[http] max_connections must be at least 1");
        }
        Ok(())
    }

    fn header_read_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.header_read_timeout_secs)
    }

    fn body_idle_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.body_idle_timeout_secs)
    }
}

/// Serves `app` on `listener` until `shutdown` resolves; then stops accepting, lets each
/// open connection finish its request, and returns once all have closed. Fails only when
/// the door's thread cannot be started.
pub async fn serve(
    listener: TcpListener,
    app: &Router,
    config: &HttpConfig,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout());
    let stop = CancellationToken::new();
    let mut door = Door::open(
        listener,
        config.header_read_timeout(),
        config.max_connections,
        stop.clone(),
    )?;
    let connections = TaskTracker::new();
    let closing = CancellationToken::new();
    let idle = config.body_idle_timeout();
    tokio::pin!(shutdown);
    loop {
        let entrant = tokio::select! {
            () = &mut shutdown => break,
            entrant = door.entrants.recv() => entrant,
        };
        let Some(Entrant {
            stream,
            read,
            place,
        }) = entrant
        else {
            break;
        };
        let stream = match TcpStream::from_std(stream) {
            Ok(stream) => stream,
            Err(e) => {
                tracing::debug!(error = %e, "taking a connection from the door failed");
                continue;
            }
        };
        // What the door read comes first, then the rest of the connection.
        let (rest, write) = stream.into_split();
        let io = tokio::io::join(Cursor::new(read.freeze()).chain(rest), write);
        let app = app.clone();
        let service = service_fn(move |request: hyper::Request<Incoming>| {
            let request: Request = request.map(|body| Body::new(IdleBody::new(body, idle)));
            let app = app.clone();
            async move { app.oneshot(request).await }
        });
        let connection = http.serve_connection(TokioIo::new(io), service);
        let closing = closing.clone();
        connections.spawn(async move {
            tokio::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
                () = closing.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = ended {
                tracing::debug!(error = %e, "connection ended");
            }
            drop(place);
        });
    }
    stop.cancel();
    door.closed().await;
    closing.cancel();
    connections.close();
    connections.wait().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::HttpConfig;

    #[test]
    fn timeouts_must_be_positive_and_the_cap_at_least_one() {
        assert!(HttpConfig::default().check().is_ok());
        let zero = HttpConfig {
            header_read_timeout_secs: 0.0,
            ..HttpConfig::default()
        };
        let err = zero.check().unwrap_err().to_string();
        assert!(err.contains("header_read_timeout_secs"), "{err}");
        let nan = HttpConfig {
            body_idle_timeout_secs: f64::NAN,
            ..HttpConfig::default()
        };
        assert!(nan.check().is_err());
        let none = HttpConfig {
            max_connections: 0,
            ..HttpConfig::default()
        };
        assert!(
            none.check()
                .unwrap_err()
                .to_string()
                .contains("max_connections")
        );
    }
}
