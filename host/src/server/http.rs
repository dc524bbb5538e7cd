//! The HTTP listener: every connection hyper's HTTP/1 serves with timeouts that a stranger
//! cannot hold open, under caps on open connections — in all and per client address.
//!
//! - A request head must arrive whole within `header_read_timeout_secs` of the server
//!   starting to wait for it: on a new connection, and between the requests of a kept-alive
//!   one, so the same bound is the keep-alive idle timeout (hyper starts its head timer when
//!   it starts waiting).
//! - A request body that sends nothing for `body_idle_timeout_secs`, or comes slower than
//!   `body_min_bytes_per_sec` once that time has passed, fails its read ([`PacedBody`]);
//!   the request is answered 400 and the connection closed. Any answer to a request whose
//!   body was left unread (a 413, a 401 before the body was looked at) says
//!   `connection: close`, as hyper will close that connection after it.
//! - A response write that waits `write_idle_timeout_secs` for the client to take any of
//!   it fails, and the connection is closed ([`WriteIdle`]): hyper's head timer does not
//!   run while a response waits to be sent.
//! - At `max_connections` open connections the listener stops accepting until one closes:
//!   further clients wait in the kernel's backlog (a refusal would tell a client to go
//!   away while the holders of the cap — by then stalled strangers, closed within the
//!   timeouts — are the ones to go). At `max_connections_per_address` from one address, a
//!   new connection from it is answered 429 and closed ([`per_address`](super::per_address)).
//! - Each accepted socket has TCP keepalive and `TCP_USER_TIMEOUT` ([`tcp`](super::tcp)).
//!
//! A new connection's first head is awaited at the [`door`](super::door), on a thread of
//! its own; the serving runtime gets the connection once that head is whole. hyper's
//! buffer is bounded by the door's (`MOST_HELD`), not its ~400 KB default.
//!
//! Every route is served through here — the API, `/mcp` and its event streams, the console
//! and the docs assets — so no route escapes these rules.

use std::{
    convert::Infallible,
    io::{self, Cursor},
    time::Duration,
};

use axum::{
    Router,
    body::Body,
    extract::Request,
    http::{HeaderValue, header},
};
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
    body_pace::{Pace, PacedBody},
    door::{Door, Entrant, MOST_HELD},
    write_idle::WriteIdle,
};

/// The `[http]` section of the config file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// Longest wait for a whole request head, on a new or kept-alive connection, in seconds.
    pub header_read_timeout_secs: f64,
    /// Longest a request body may send nothing, in seconds.
    pub body_idle_timeout_secs: f64,
    /// Least a request body must average once `body_idle_timeout_secs` have passed since
    /// its read began, in bytes per second: a body trickled a byte at a time, never idle
    /// for long, still ends.
    pub body_min_bytes_per_sec: u64,
    /// Longest a response may wait for the client to take any of it, in seconds.
    pub write_idle_timeout_secs: f64,
    /// Most connections open at once; past it the listener waits for one to close.
    pub max_connections: usize,
    /// Most connections open at once from one client address (an IPv6 client's /64);
    /// past it a new one is answered 429 and closed.
    pub max_connections_per_address: u32,
    /// Silence on a connection before TCP keepalive probes start, in seconds.
    pub tcp_keepalive_secs: f64,
    /// Longest sent data may stay unacknowledged before the kernel drops the connection
    /// (`TCP_USER_TIMEOUT`), in seconds.
    pub tcp_user_timeout_secs: f64,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            header_read_timeout_secs: 10.0,
            body_idle_timeout_secs: 30.0,
            body_min_bytes_per_sec: 1024,
            write_idle_timeout_secs: 30.0,
            max_connections: 10_000,
            max_connections_per_address: 256,
            tcp_keepalive_secs: 60.0,
            tcp_user_timeout_secs: 60.0,
        }
    }
}

impl HttpConfig {
    /// Rejects timeouts that are not positive (or past a kernel's millisecond counters),
    /// and caps of no connection.
    pub fn check(&self) -> anyhow::Result<()> {
        for (name, secs, most) in [
            (
                "header_read_timeout_secs",
                self.header_read_timeout_secs,
                DAY,
            ),
            ("body_idle_timeout_secs", self.body_idle_timeout_secs, DAY),
            ("write_idle_timeout_secs", self.write_idle_timeout_secs, DAY),
            ("tcp_keepalive_secs", self.tcp_keepalive_secs, MOST_KEEPIDLE),
            ("tcp_user_timeout_secs", self.tcp_user_timeout_secs, DAY),
        ] {
            if !(secs.is_finite() && secs > 0.0 && secs <= most) {
                anyhow::bail!(
                    "[http] {name} must be a positive number of seconds up to {most}, not {secs}"
                );
            }
        }
        for (name, count) in [
            ("max_connections", self.max_connections as u64),
            (
                "max_connections_per_address",
                u64::from(self.max_connections_per_address),
            ),
            ("body_min_bytes_per_sec", self.body_min_bytes_per_sec),
        ] {
            if count == 0 {
                anyhow::bail!("[http] {name} must be at least 1");
            }
        }
        Ok(())
    }

    pub(super) fn header_read_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.header_read_timeout_secs)
    }

    fn body_idle_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.body_idle_timeout_secs)
    }

    fn write_idle_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.write_idle_timeout_secs)
    }

    pub(super) fn tcp_keepalive(&self) -> Duration {
        Duration::from_secs_f64(self.tcp_keepalive_secs)
    }

    pub(super) fn tcp_user_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.tcp_user_timeout_secs)
    }
}

/// The longest timeout `[http]` takes: a day, far below where `TCP_USER_TIMEOUT`'s
/// milliseconds (a `u32`) overflow.
const DAY: f64 = 86_400.0;
/// The longest silence Linux takes before keepalive probes (`MAX_TCP_KEEPIDLE`).
const MOST_KEEPIDLE: f64 = 32_767.0;

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
        .header_read_timeout(config.header_read_timeout())
        .max_buf_size(MOST_HELD);
    let stop = CancellationToken::new();
    let mut door = Door::open(listener, config, stop.clone())?;
    let connections = TaskTracker::new();
    let closing = CancellationToken::new();
    let pace = Pace {
        idle: config.body_idle_timeout(),
        min_rate: config.body_min_bytes_per_sec,
    };
    let write_idle = config.write_idle_timeout();
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
        let io = tokio::io::join(
            Cursor::new(read.freeze()).chain(rest),
            WriteIdle::new(write, write_idle),
        );
        let app = app.clone();
        let service = service_fn(move |request: hyper::Request<Incoming>| {
            let (parts, body) = request.into_parts();
            let body = PacedBody::new(body, pace);
            let ended = body.ended();
            let request = Request::from_parts(parts, Body::new(body));
            let app = app.clone();
            async move {
                let mut response = app.oneshot(request).await?;
                // hyper closes a connection whose request body was left unread after the
                // answer, unannounced: announce it (see `body_pace`).
                if !ended.is_set() {
                    let close = HeaderValue::from_static("close");
                    response.headers_mut().insert(header::CONNECTION, close);
                }
                Ok::<_, Infallible>(response)
            }
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
    fn timeouts_must_be_positive_and_the_caps_at_least_one() {
        assert!(HttpConfig::default().check().is_ok());
        type Wrong = fn(&mut HttpConfig);
        let refusals: [(Wrong, &str); 9] = [
            (
                |c| c.header_read_timeout_secs = 0.0,
                "header_read_timeout_secs",
            ),
            (
                |c| c.body_idle_timeout_secs = f64::NAN,
                "body_idle_timeout_secs",
            ),
            (
                |c| c.write_idle_timeout_secs = -1.0,
                "write_idle_timeout_secs",
            ),
            // Past what Linux takes for the silence before keepalive probes.
            (|c| c.tcp_keepalive_secs = 40_000.0, "tcp_keepalive_secs"),
            (
                |c| c.tcp_user_timeout_secs = f64::INFINITY,
                "tcp_user_timeout_secs",
            ),
            (|c| c.max_connections = 0, "max_connections"),
            (
                |c| c.max_connections_per_address = 0,
                "max_connections_per_address",
            ),
            (|c| c.body_min_bytes_per_sec = 0, "body_min_bytes_per_sec"),
            (
                |c| c.header_read_timeout_secs = 100_000.0,
                "header_read_timeout_secs",
            ),
        ];
        for (wrong, key) in refusals {
            let mut config = HttpConfig::default();
            wrong(&mut config);
            let err = config.check().unwrap_err().to_string();
            assert!(err.contains(&format!("[http] {key} ")), "{key}: {err}");
        }
    }
}
