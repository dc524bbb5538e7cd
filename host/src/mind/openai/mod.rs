//! The OpenAI chat-completions protocol: `POST {base_url}/chat/completions`, as served by
//! OpenAI, vLLM, llama.cpp and Ollama alike. One call per [`Provider::attempt`]; retries
//! belong to [`Retrying`](super::Retrying), so every failure is classified here: connect
//! errors, timeouts, 408, 429, 5xx and unreadable replies are transient (carrying the
//! provider's `Retry-After`), any other 4xx is a refusal.

mod wire;

#[cfg(test)]
mod tests;

use std::time::Duration;

use anyhow::Context;
use reqwest::{Client, StatusCode, Url, header::HeaderMap};

use super::{BoxFuture, Completion, Failure, Message, Provider, ToolSpec};
use crate::config::MindConfig;

/// Longest wait for the TCP/TLS connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for a whole completion, so a stuck provider cannot hang an agent.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Characters of a provider's reply quoted in an error message.
const EXCERPT_CHARS: usize = 300;

/// A client for one OpenAI-compatible endpoint and model. Not retried by itself: wrap it
/// in [`Retrying`](super::Retrying) (as [`from_config`](super::from_config) does).
pub struct OpenAi {
    client: Client,
    url: String,
    api_key: Option<String>,
    model: String,
}

impl OpenAi {
    /// A client for `cfg`'s `base_url`, `api_key` and `model`; sends nothing until asked.
    /// Fails when `base_url` is not an http(s) URL.
    pub fn new(cfg: &MindConfig) -> anyhow::Result<Self> {
        Self::with_timeouts(cfg, CONNECT_TIMEOUT, REQUEST_TIMEOUT)
    }

    fn with_timeouts(
        cfg: &MindConfig,
        connect: Duration,
        request: Duration,
    ) -> anyhow::Result<Self> {
        let url = format!("{}/chat/completions", cfg.base_url.trim_end_matches('/'));
        let parsed =
            Url::parse(&url).with_context(|| format!("mind base_url {:?}", cfg.base_url))?;
        anyhow::ensure!(
            matches!(parsed.scheme(), "http" | "https"),
            "mind base_url {:?} must be an http or https URL",
            cfg.base_url
        );
        let client = Client::builder()
            .connect_timeout(connect)
            .timeout(request)
            .build()
            .context("building the Mind's HTTP client")?;
        Ok(Self {
            client,
            url,
            api_key: cfg.api_key.clone(),
            model: cfg.model.clone(),
        })
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

impl Provider for OpenAi {
    fn model(&self) -> &str {
        &self.model
    }

    fn attempt<'a>(
        &'a self,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Completion, Failure>> {
        Box::pin(async move {
            let mut request =
                self.client
                    .post(&self.url)
                    .json(&wire::Request::new(&self.model, messages, tools));
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key);
            }
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
            let unreadable = |why: String| {
                Failure::transient(format!("POST {}: unreadable reply: {why}", self.url))
            };
            let reply: wire::Response = serde_json::from_slice(&body)
                .map_err(|e| unreadable(format!("{e}; reply begins {:?}", excerpt(&body))))?;
            reply.into_completion().map_err(unreadable)
        })
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
/// (or `{"error": "..."}`), else an excerpt of the body.
fn error_text(body: &[u8]) -> String {
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
