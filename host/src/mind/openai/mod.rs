//! The OpenAI chat-completions protocol: `POST {base_url}/chat/completions`, as served by
//! OpenAI, vLLM, llama.cpp and Ollama alike. One call per [`Provider::attempt`]; retries
//! belong to [`Retrying`](super::Retrying), and the shared
//! [`Endpoint`](super::remote::Endpoint) classifies every failure.

mod wire;

#[cfg(test)]
mod tests;

use super::{
    BoxFuture, Completion, Failure, Message, Provider, ToolSpec,
    remote::{Endpoint, Turn},
};
use crate::{mind::MindConfig, secret::Secret};

/// A client for one OpenAI-compatible endpoint and model. Not retried by itself: wrap it
/// in [`Retrying`](super::Retrying) (as [`from_config`](super::from_config) does).
pub struct OpenAi {
    endpoint: Endpoint,
    api_key: Option<Secret>,
    model: String,
}

impl OpenAi {
    /// A client for `cfg`'s base URL, `api_key` and `model`; sends nothing until asked.
    /// Fails when the base URL is not an http(s) URL.
    pub fn new(cfg: &MindConfig) -> anyhow::Result<Self> {
        Ok(Self {
            endpoint: Endpoint::new(cfg.base_url(), "chat/completions", cfg.max_connections)?,
            api_key: cfg.api_key.clone(),
            model: cfg.model.clone(),
        })
    }
}

impl Provider for OpenAi {
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
            let mut request = self
                .endpoint
                .post(&wire::Request::new(&self.model, messages, tools));
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key.expose());
            }
            let reply: wire::Response = self.endpoint.send(request).await?;
            reply
                .into_completion()
                .map_err(|why| self.endpoint.unreadable(why))
        })
    }
}
