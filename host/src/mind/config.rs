//! The `[mind]` section: which provider agents think with, and how to reach it.

use serde::Deserialize;

use crate::secret::Secret;

/// The `[mind]` section of the config file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MindConfig {
    /// `offline` (rule-based, network-free, the default), `openai` or `anthropic`.
    pub provider: String,
    /// Base URL of the provider's API; `None` means the provider's own (see
    /// [`MindConfig::base_url`]), so switching provider never sends one vendor's key to
    /// the other's URL.
    pub base_url: Option<String>,
    /// Key for the provider, if it needs one (never shown by `Debug`).
    pub api_key: Option<Secret>,
    /// Model name reported on agent records and sent to the provider.
    pub model: String,
    /// Most tokens one completion may produce; Anthropic requires the bound, the OpenAI
    /// protocol leaves it to the server.
    pub max_tokens: u32,
}

/// The providers `[mind] provider` may name, for error messages.
pub const MIND_PROVIDERS: &str = "\"offline\", \"openai\" or \"anthropic\"";

impl MindConfig {
    /// The base URL requests go to: the configured one, else the provider's public API.
    pub fn base_url(&self) -> &str {
        self.base_url
            .as_deref()
            .unwrap_or(match self.provider.as_str() {
                "anthropic" => "https://api.anthropic.com/v1",
                _ => "https://api.openai.com/v1",
            })
    }

    /// Refuses a provider that does not exist and a `max_tokens` of 0, at start-up.
    pub fn check(&self) -> anyhow::Result<()> {
        if !matches!(self.provider.as_str(), "offline" | "openai" | "anthropic") {
            anyhow::bail!(
                "unknown mind provider {:?}: use {MIND_PROVIDERS}",
                self.provider
            );
        }
        if self.max_tokens == 0 {
            anyhow::bail!("[mind] max_tokens must be at least 1");
        }
        Ok(())
    }
}

impl Default for MindConfig {
    fn default() -> Self {
        Self {
            provider: "offline".into(),
            base_url: None,
            api_key: None,
            model: "wasmind-offline".into(),
            max_tokens: 4096,
        }
    }
}
