//! The Mind: how agents think. A [`Mind`] turns a conversation and the tools on offer
//! into the next step — a final text, tool calls, or both.
//!
//! Three providers: [`Offline`], the default, deterministic and network-free rule-based
//! Mind; [`OpenAi`], the chat-completions protocol spoken by OpenAI, vLLM, llama.cpp and
//! Ollama; and [`Anthropic`], the Messages API. The two remote ones share one HTTP
//! endpoint and failure classification (`remote`) and are wrapped in [`Retrying`], so
//! transient provider failures are retried per §7 of the specification. [`from_config`]
//! builds the one the configuration names.
//!
//! Nothing here knows wasmtime, WIT or the HTTP server: the runtime converts the guest's
//! `mind` interface to and from these types, and races [`Mind::complete`] against a stop
//! request (every future here may be dropped at any await point).
//!
//! ```
//! use wasmind::mind::{Message, Mind, Offline};
//!
//! # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
//! let mind = Offline::new("wasmind-offline");
//! let reply = mind.complete(&[Message::user("hello")], &[]).await?;
//! assert!(reply.text.unwrap().contains("offline rule-based Mind"));
//! # anyhow::Ok(()) })?;
//! # anyhow::Ok(())
//! ```

mod anthropic;
mod config;
mod conversation;
mod error;
pub mod jobs;
mod metered;
mod offline;
mod openai;
mod probe;
mod remote;
mod retry;

use std::{future::Future, pin::Pin, sync::Arc};

pub use anthropic::Anthropic;
pub use config::{MIND_PROVIDERS, MindConfig};
pub use conversation::{Completion, Message, Role, Schema, ToolCall, ToolSpec, Usage};
pub use error::{Failure, MindError};
pub use jobs::{Note, Proposals, RunReport, Summary, Title};
pub use metered::Metered;
pub use offline::Offline;
pub use openai::OpenAi;
pub use probe::{MindCheck, MindStatus, probe};
pub use remote::Turn;
pub use retry::{BACKOFF, MAX_RETRY_AFTER, Provider, RecordingSleep, Retrying, Sleep, TokioSleep};

/// A boxed, sendable future: what the object-safe traits of this module return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A reasoning model. Shared by every running agent, so it must be `Send + Sync`.
pub trait Mind: Send + Sync + 'static {
    /// Model name reported on agent records.
    fn model(&self) -> &str;

    /// The next step of the conversation `messages`, given the `tools` the Mind may call.
    ///
    /// Already retried where retrying may help: an error here is final for this step.
    /// Dropping the future abandons the request.
    fn complete<'a>(
        &'a self,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Completion, MindError>>;

    /// A turn to send a completion on (one of a remote provider's bounded connections),
    /// for [`complete_on`](Self::complete_on). Waited for before the request exists, so a
    /// caller waiting its turn holds nothing of its request (an agent may hibernate
    /// meanwhile, its request made again by replay). `None`: this Mind needs no turn.
    fn turn(&self) -> BoxFuture<'static, Option<Turn>> {
        Box::pin(std::future::ready(None))
    }

    /// [`complete`](Self::complete), its first attempt sent on `turn` when given.
    fn complete_on<'a>(
        &'a self,
        turn: Option<Turn>,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Completion, MindError>> {
        drop(turn);
        self.complete(messages, tools)
    }

    /// Whether it answers the same conversation alike every time, at no cost (the offline
    /// Mind): then an agent's journal keeps its answers without waiting for a sync, since
    /// a call lost in a crash is made again with the same answer.
    fn answers_alike(&self) -> bool {
        false
    }

    /// Memories worth keeping from a completed run (automatic extraction, §4.4).
    fn extract<'a>(&'a self, run: &'a RunReport) -> BoxFuture<'a, Result<Proposals, MindError>> {
        Box::pin(async move {
            let (messages, tools) = jobs::extraction_request(run);
            jobs::read_proposals(&self.complete(&messages, &tools).await?)
        })
    }

    /// One memory saying everything `notes` say (consolidation, §4.2).
    fn summarize<'a>(&'a self, notes: &'a [Note]) -> BoxFuture<'a, Result<Summary, MindError>> {
        Box::pin(async move {
            let (messages, tools) = jobs::summary_request(notes);
            jobs::read_summary(&self.complete(&messages, &tools).await?, notes)
        })
    }

    /// A short title for an agent given `task` (§2.3 `name`).
    fn title<'a>(&'a self, task: &'a str) -> BoxFuture<'a, Result<Title, MindError>> {
        Box::pin(
            async move { jobs::read_title(&self.complete(&jobs::title_request(task), &[]).await?) },
        )
    }
}

/// The Mind `cfg` names, [`Metered`]: `offline`, or `openai` or `anthropic` wrapped in
/// [`Retrying`] with real sleeps.
pub fn from_config(cfg: &MindConfig) -> anyhow::Result<Arc<dyn Mind>> {
    let mind: Arc<dyn Mind> = match cfg.provider.as_str() {
        "offline" => Arc::new(Offline::new(cfg.model.clone())),
        "openai" => Arc::new(Retrying::new(OpenAi::new(cfg)?)),
        "anthropic" => Arc::new(Retrying::new(Anthropic::new(cfg)?)),
        other => anyhow::bail!("unknown mind provider {other:?}: use {MIND_PROVIDERS}"),
    };
    Ok(Arc::new(Metered::new(mind)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_config_picks_the_provider() {
        let mut cfg = MindConfig::default();
        assert_eq!(from_config(&cfg).unwrap().model(), "wasmind-offline");
        cfg.provider = "openai".into();
        cfg.model = "gpt-x".into();
        assert_eq!(from_config(&cfg).unwrap().model(), "gpt-x");
        cfg.provider = "anthropic".into();
        assert_eq!(from_config(&cfg).unwrap().model(), "gpt-x");
        cfg.base_url = Some("not a url".into());
        assert!(from_config(&cfg).is_err());
        cfg.provider = "psychic".into();
        assert!(from_config(&cfg).is_err());
    }

    #[test]
    fn only_the_offline_mind_answers_alike() {
        let mut cfg = MindConfig::default();
        assert!(from_config(&cfg).unwrap().answers_alike());
        for provider in ["openai", "anthropic"] {
            cfg.provider = provider.into();
            assert!(!from_config(&cfg).unwrap().answers_alike(), "{provider}");
        }
    }
}
