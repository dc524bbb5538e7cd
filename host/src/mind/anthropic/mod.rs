//! Anthropic's Messages API: `POST {base_url}/messages` with `x-api-key` and
//! `anthropic-version`. One call per [`Provider::attempt`]; retries belong to
//! [`Retrying`](super::Retrying), and the shared [`Endpoint`](super::remote::Endpoint)
//! classifies every failure (529 "overloaded" is a 5xx, so transient).

mod wire;

#[cfg(test)]
mod tests;

use reqwest::header::HeaderValue;

use super::{
    BoxFuture, Completion, Failure, Message, Provider, ToolSpec,
    remote::{Endpoint, Turn},
};
use crate::mind::MindConfig;

/// The API version whose request and reply shapes `wire` speaks.
pub(super) const API_VERSION: &str = "2023-06-01";

/// A client for one Messages API endpoint and model. Not retried by itself: wrap it in
/// [`Retrying`](super::Retrying) (as [`from_config`](super::from_config) does).
pub struct Anthropic {
    endpoint: Endpoint,
    /// Marked sensitive, so it never shows in a debug print of the request.
    api_key: Option<HeaderValue>,
    model: String,
    max_tokens: u32,
}

impl Anthropic {
    /// A client for `cfg`'s base URL, `api_key`, `model` and `max_tokens`; sends nothing
    /// until asked. Fails when the base URL is not an http(s) URL or the key is not a
    /// valid header value.
    pub fn new(cfg: &MindConfig) -> anyhow::Result<Self> {
        let api_key = match &cfg.api_key {
            Some(key) => {
                let mut value = HeaderValue::from_str(key.expose())
                    .map_err(|_| anyhow::anyhow!("the mind api_key is not a valid header"))?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        Ok(Self {
            endpoint: Endpoint::new(cfg.base_url(), "messages", cfg.max_connections)?,
            api_key,
            model: cfg.model.clone(),
            max_tokens: cfg.max_tokens,
        })
    }
}

impl Provider for Anthropic {
    fn model(&self) -> &str {
        &self.model
    }

    fn turn(&self) -> BoxFuture<'static, Option<Turn>> {
        let turn = self.endpoint.turn();
        Box::pin(async move { Some(turn.await) })
    }

    fn attempt<'a>(
        &'a self,
        turn: Option<Turn>,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Completion, Failure>> {
        Box::pin(async move {
            let _turn = self.endpoint.on(turn).await;
            let body = wire::Request::new(&self.model, self.max_tokens, messages, tools)
                .map_err(|why| self.endpoint.refused(why))?;
            let mut request = self
                .endpoint
                .post(&body)
                .header("anthropic-version", API_VERSION);
            if let Some(key) = &self.api_key {
                request = request.header("x-api-key", key.clone());
            }
            let reply: wire::Response = self.endpoint.send(request).await?;
            Ok(reply.into_completion())
        })
    }
}
