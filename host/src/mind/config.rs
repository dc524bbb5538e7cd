//! The `[mind]` section: which provider agents think with, and how to reach it.

use std::collections::BTreeMap;

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
    /// Most requests to the provider in flight at once (one connection each); more
    /// callers wait their turn.
    pub max_connections: usize,
}

/// The offline Mind's model name, the default; a remote provider must be given its own.
const OFFLINE_MODEL: &str = "wasmind-offline";

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

    /// The vendor's own key variable for the provider in use, as its SDKs read it.
    fn vendor_key_variable(&self) -> Option<&'static str> {
        match self.provider.as_str() {
            "openai" => Some("OPENAI_API_KEY"),
            "anthropic" => Some("ANTHROPIC_API_KEY"),
            _ => None,
        }
    }

    /// Where the key can be set, for messages: `[mind] api_key`, `WASMIND_MIND_API_KEY`,
    /// and the vendor's variable.
    pub fn key_settings(&self) -> String {
        let mut settings = "[mind] api_key or WASMIND_MIND_API_KEY".to_string();
        if let Some(variable) = self.vendor_key_variable() {
            settings = format!("{settings} (or {variable})");
        }
        settings
    }

    /// Takes the key from the vendor's variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`)
    /// when neither the file nor `WASMIND_MIND_API_KEY` gave one, as people set them up.
    pub fn key_from_vendor_variable(&mut self, env: &BTreeMap<String, String>) {
        if self.api_key.is_none()
            && let Some(value) = self.vendor_key_variable().and_then(|v| env.get(v))
        {
            self.api_key = Some(value.as_str().into());
        }
    }

    /// Refuses, at start-up, a provider that does not exist, a remote provider without a
    /// model of its own (it would be sent `wasmind-offline`), and a `max_tokens` of 0.
    pub fn check(&self) -> anyhow::Result<()> {
        if !matches!(self.provider.as_str(), "offline" | "openai" | "anthropic") {
            anyhow::bail!(
                "unknown mind provider {:?}: use {MIND_PROVIDERS}",
                self.provider
            );
        }
        if self.provider != "offline" && matches!(self.model.as_str(), OFFLINE_MODEL | "") {
            anyhow::bail!(
                "mind provider {:?} needs a model: set [mind] model or WASMIND_MIND_MODEL \
                 to one the provider serves",
                self.provider
            );
        }
        if self.max_connections == 0 {
            anyhow::bail!("[mind] max_connections must be at least 1");
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
            model: OFFLINE_MODEL.into(),
            max_tokens: 4096,
            max_connections: 256,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_vendor_variable_of_the_provider_in_use_fills_a_missing_key() {
        let vars = env(&[("OPENAI_API_KEY", "sk-o"), ("ANTHROPIC_API_KEY", "sk-a")]);
        for (provider, want) in [("openai", Some("sk-o")), ("anthropic", Some("sk-a"))] {
            let mut cfg = MindConfig {
                provider: provider.into(),
                ..MindConfig::default()
            };
            cfg.key_from_vendor_variable(&vars);
            assert_eq!(cfg.api_key.as_ref().map(Secret::expose), want);
        }
        let mut offline = MindConfig::default();
        offline.key_from_vendor_variable(&vars);
        assert_eq!(offline.api_key, None);
        let mut given = MindConfig {
            provider: "openai".into(),
            api_key: Some("sk-wasmind".into()),
            ..MindConfig::default()
        };
        given.key_from_vendor_variable(&vars);
        assert_eq!(given.api_key.unwrap().expose(), "sk-wasmind");
    }

    #[test]
    fn a_remote_provider_without_a_model_is_refused_naming_the_setting() {
        let mut cfg = MindConfig {
            provider: "anthropic".into(),
            ..MindConfig::default()
        };
        let err = cfg.check().unwrap_err().to_string();
        assert!(
            err.contains("WASMIND_MIND_MODEL") && err.contains("[mind] model"),
            "{err}"
        );
        cfg.model = "claude-x".into();
        cfg.check().unwrap();
        MindConfig::default().check().unwrap();
    }
}
