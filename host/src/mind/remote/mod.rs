//! What the remote providers share: one JSON `POST` to the provider's endpoint under
//! bounded timeouts, and the classification of its failures for
//! [`Retrying`](super::Retrying). Connect errors, timeouts, 408, 429, 5xx (Anthropic's 529
//! "overloaded" among them) and unreadable replies are transient, carrying the provider's
//! `Retry-After`; any other 4xx is a refusal. Messages name the URL and status and quote
//! the provider's error text, never the request, so never the API key.
//!
//! Wire formats and authentication headers belong to each provider, not here.

#[cfg(test)]
pub(super) mod fake;
#[cfg(test)]
mod tests;

use std::{fmt::Display, sync::Arc, time::Duration};

use anyhow::Context;
use reqwest::{Client, RequestBuilder, StatusCode, Url, header::HeaderMap};
use serde::{Serialize, de::DeserializeOwned};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{BoxFuture, Failure};

/// Longest wait for the TCP/TLS connection.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for a whole completion, so a stuck provider cannot hang an agent.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Characters of a provider's reply quoted in an error message.
const EXCERPT_CHARS: usize = 300;

/// One provider URL and the HTTP client that posts to it, over at most a bounded number
/// of connections at once.
pub(super) struct Endpoint {
    client: Client,
    url: String,
    /// One permit per request in flight: an HTTP/1.1 connection each, with its buffers
    /// and file descriptor. Thousands of agents waiting on the Mind share these rather
    /// than hold one each; the others wait their turn holding nothing.
    connections: Arc<Semaphore>,
}

/// A turn to send one request to a provider: one of its bounded connections, held by the
/// attempt that sends on it and given back when that attempt ends (see
/// [`Mind::turn`](super::Mind::turn)).
pub struct Turn {
    /// Given back to the connections when the turn is dropped.
    _connection: OwnedSemaphorePermit,
}

impl Endpoint {
    /// `{base_url}/{path}`, over at most `connections` connections; fails at start-up
    /// when `base_url` is not an http(s) URL.
    pub(super) fn new(base_url: &str, path: &str, connections: usize) -> anyhow::Result<Self> {
        Self::with_timeouts(
            base_url,
            path,
            connections,
            CONNECT_TIMEOUT,
            REQUEST_TIMEOUT,
        )
    }

    fn with_timeouts(
        base_url: &str,
        path: &str,
        connections: usize,
        connect: Duration,
        request: Duration,
    ) -> anyhow::Result<Self> {
        let url = format!("{}/{path}", base_url.trim_end_matches('/'));
        let parsed = Url::parse(&url).with_context(|| format!("mind base_url {base_url:?}"))?;
        anyhow::ensure!(
            matches!(parsed.scheme(), "http" | "https"),
            "mind base_url {base_url:?} must be an http or https URL"
        );
        let client = Client::builder()
            .connect_timeout(connect)
            .timeout(request)
            .pool_max_idle_per_host(connections)
            .build()
            .context("building the Mind's HTTP client")?;
        Ok(Self {
            client,
            url,
            connections: Arc::new(Semaphore::new(connections.max(1))),
        })
    }

    /// A turn to use one of the connections, held for one attempt: waited for before the
    /// request body even exists, so an agent waiting its turn holds no body. The future
    /// borrows nothing, so a hibernated agent can keep waiting on it.
    pub(super) fn turn(&self) -> BoxFuture<'static, Turn> {
        let connections = self.connections.clone();
        Box::pin(async move {
            let connection = connections.acquire_owned().await;
            Turn {
                _connection: connection.expect("the semaphore is never closed"),
            }
        })
    }

    /// `turn`, or a turn of its own when none was taken for it.
    pub(super) async fn on(&self, turn: Option<Turn>) -> Turn {
        match turn {
            Some(turn) => turn,
            None => self.turn().await,
        }
    }

    /// A `POST` of `body` as JSON, for the provider to add its headers to.
    pub(super) fn post(&self, body: &impl Serialize) -> RequestBuilder {
        self.client.post(&self.url).json(body)
    }

    /// Sends `request` and parses a 2xx reply as `T`; every failure is classified.
    pub(super) async fn send<T: DeserializeOwned>(
        &self,
        request: RequestBuilder,
    ) -> Result<T, Failure> {
        let response = request
            .send()
            .await
            .map_err(|e| self.transport_failure(&e))?;
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let body = response
            .bytes()
            .await
            .map_err(|e| self.transport_failure(&e))?;
        if !status.is_success() {
            return Err(self.status_failure(status, retry_after, &body));
        }
        serde_json::from_slice(&body)
            .map_err(|e| self.unreadable(format!("{e}; reply begins {:?}", excerpt(&body))))
    }

    /// A 2xx reply that says no completion: transient, as a proxy's hiccup usually is.
    pub(super) fn unreadable(&self, why: impl Display) -> Failure {
        Failure::transient(format!("POST {}: unreadable reply: {why}", self.url))
    }

    /// A request this provider cannot send at all.
    pub(super) fn refused(&self, why: impl Display) -> Failure {
        Failure::Refused(format!("POST {}: {why}", self.url))
    }

    /// A failed send or body read: all transient, except a request that could not be built.
    fn transport_failure(&self, e: &reqwest::Error) -> Failure {
        let mut message = format!("POST {}: ", self.url);
        if e.is_timeout() {
            message.push_str("timed out");
        } else if e.is_connect() {
            message.push_str("could not connect");
        } else {
            message.push_str("request failed");
        }
        let mut source: Option<&dyn std::error::Error> = Some(e);
        while let Some(err) = source {
            message.push_str(&format!(": {err}"));
            source = err.source();
        }
        if e.is_builder() {
            Failure::Refused(message)
        } else {
            Failure::transient(message)
        }
    }

    /// A non-2xx reply.
    fn status_failure(
        &self,
        status: StatusCode,
        retry_after: Option<Duration>,
        body: &[u8],
    ) -> Failure {
        let message = format!("POST {}: {status}: {}", self.url, error_text(body));
        let transient = !status.is_client_error()
            || status == StatusCode::REQUEST_TIMEOUT
            || status == StatusCode::TOO_MANY_REQUESTS;
        if transient {
            Failure::Transient {
                message,
                retry_after,
            }
        } else {
            Failure::Refused(message)
        }
    }
}

/// `Retry-After` in seconds (the HTTP-date form is not used by model providers).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let secs: f64 = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// The provider's own error message when the body is the usual `{"error": {"message"}}`
/// (OpenAI and Anthropic alike) or `{"error": "..."}`, else an excerpt of the body.
pub(super) fn error_text(body: &[u8]) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let message = error
        .and_then(|e| e.get("message").or(Some(e)))
        .and_then(|m| m.as_str());
    match message {
        Some(m) => m.chars().take(EXCERPT_CHARS).collect(),
        None => excerpt(body),
    }
}

fn excerpt(body: &[u8]) -> String {
    String::from_utf8_lossy(body)
        .chars()
        .take(EXCERPT_CHARS)
        .collect()
}
