//! One `Config`, read once at start-up: defaults, then the TOML file, then environment
//! overrides. Unknown keys in the file are an error naming them, so a typo never silently
//! falls back to a default. Nothing below start-up reads the environment.
//!
//! Each section belongs to the domain it configures (`accounts` its plans, `mind` its
//! provider, `memory` its embedder and tuning, `runtime` its limits, `console` its
//! identity provider); this module only puts them together, loads the file and applies
//! the environment.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use anyhow::Context;
use serde::Deserialize;

use crate::{
    accounts::Plans,
    billing::BillingConfig,
    console::ConsoleConfig,
    egress::EgressConfig,
    memory::{MemoryConfig, embed::EmbedderConfig},
    metrics::MetricsConfig,
    mind::MindConfig,
    runtime::{ClusterConfig, RuntimeConfig},
    server::HttpConfig,
    storage::StorageConfig,
    tools::ToolsConfig,
};

/// Everything configurable, with documented defaults (see docs/operating.md, "Configuration").
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Limits per plan tier.
    pub plans: Plans,
    /// Who may sign in to the console.
    pub console: ConsoleConfig,
    /// Which sentence embedder indexes memories, and its settings.
    pub embedder: EmbedderConfig,
    /// The reasoning model agents think with.
    pub mind: MindConfig,
    /// Memory search and write tuning.
    pub memory: MemoryConfig,
    /// The wasm agent runtime.
    pub runtime: RuntimeConfig,
    /// Whether and where `GET /metrics` is served.
    pub metrics: MetricsConfig,
    /// Where the domains keep their state: the data dir, or a shared PostgreSQL.
    pub storage: StorageConfig,
    /// This node among the nodes sharing the postgres backend.
    pub cluster: ClusterConfig,
    /// The HTTP listener's timeouts and connection cap.
    pub http: HttpConfig,
    /// What agents may reach outside the sandbox.
    pub egress: EgressConfig,
    /// Tenants' tools: where the key sealing their secrets is, how long a result may be.
    pub tools: ToolsConfig,
    /// The payment provider: checkout, portal, webhooks (off unless its secrets are set).
    pub billing: BillingConfig,
}

impl Config {
    /// Reads the optional TOML file, then applies environment overrides from `env`.
    pub fn load(
        file: Option<&Path>,
        env: &BTreeMap<String, String>,
    ) -> anyhow::Result<(Self, Option<PathBuf>)> {
        let mut config = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading config file {}", path.display()))?;
                Self::parse(&text).with_context(|| format!("in config file {}", path.display()))?
            }
            None => Self::default(),
        };
        config.apply_env(env)?;
        Ok((config, file.map(Path::to_path_buf)))
    }

    /// Parses TOML text; unknown keys are rejected with their names.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        toml::from_str(text).map_err(|e| anyhow::anyhow!("{}", e.message().trim()))
    }

    fn apply_env(&mut self, env: &BTreeMap<String, String>) -> anyhow::Result<()> {
        for (name, value) in env.iter().filter(|(k, _)| k.starts_with("WASMIND_")) {
            match name.as_str() {
                "WASMIND_MIND" => self.mind.provider = value.clone(),
                "WASMIND_MIND_BASE_URL" => self.mind.base_url = Some(value.clone()),
                "WASMIND_MIND_API_KEY" => self.mind.api_key = Some(value.as_str().into()),
                "WASMIND_MIND_MODEL" => self.mind.model = value.clone(),
                "WASMIND_DATABASE_URL" => {
                    self.storage.database_url = Some(value.as_str().into());
                }
                "WASMIND_EMBEDDER" => {
                    self.embedder.kind = value
                        .parse()
                        .map_err(|e| anyhow::anyhow!("WASMIND_EMBEDDER: {e}"))?;
                }
                "WASMIND_EMBEDDER_MODEL" => {
                    self.embedder.model = value
                        .parse()
                        .map_err(|e| anyhow::anyhow!("WASMIND_EMBEDDER_MODEL: {e}"))?;
                }
                "WASMIND_EMBEDDER_UPGRADE" => {
                    self.embedder.upgrade = value.parse().map_err(|_| {
                        anyhow::anyhow!("WASMIND_EMBEDDER_UPGRADE: expected true or false")
                    })?;
                }
                "WASMIND_MODEL_DIR" => self.embedder.model_dir = Some(PathBuf::from(value)),
                "WASMIND_ARTIFACT_CACHE_DIR" => {
                    self.runtime.artifact_cache_dir = Some(PathBuf::from(value));
                }
                _ => {}
            }
        }
        self.mind.key_from_vendor_variable(env);
        self.tools.apply_env(env);
        self.billing.apply_env(env);
        self.billing.check()?;
        self.tools.check()?;
        self.cluster.check()?;
        self.http.check()?;
        self.egress.check()?;
        self.mind.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_spec() {
        let c = Config::default();
        assert_eq!(c.plans.free.spawns_per_minute, 5);
        assert_eq!(c.plans.free.spawns_per_hour, 30);
        assert_eq!(c.plans.liftoff.spawns_per_hour, 30);
        assert_eq!(c.plans.lightyear.spawns_per_minute, 30);
        assert_eq!(c.plans.lightyear.spawns_per_hour, 500);
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = Config::parse("[plans.free]\nspawns_per_minute = 1\nbogus_limit = 3\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("bogus_limit"), "{err}");
        let err = Config::parse("colour = 1").unwrap_err().to_string();
        assert!(err.contains("colour"), "{err}");
    }

    #[test]
    fn file_then_env() {
        let c = Config::parse(
            "[plans.free]\nspawns_per_minute = 1\nspawns_per_hour = 2\nconcurrent_agents = 3\n\
             memories = 4\nagent_hours_per_month = 5.0\n[mind]\nmodel = \"m1\"\n",
        )
        .unwrap();
        assert_eq!(c.plans.free.memories, 4);
        assert_eq!(c.plans.liftoff, Plans::default().liftoff);
        let mut c2 = c.clone();
        let env = BTreeMap::from([
            ("WASMIND_MIND_MODEL".to_string(), "m2".to_string()),
            ("WASMIND_EMBEDDER".to_string(), "hash".to_string()),
            (
                "WASMIND_EMBEDDER_MODEL".to_string(),
                "e5-small-v2".to_string(),
            ),
            ("WASMIND_EMBEDDER_UPGRADE".to_string(), "true".to_string()),
            (
                "WASMIND_ARTIFACT_CACHE_DIR".to_string(),
                "/var/cache/wasmind".to_string(),
            ),
        ]);
        c2.apply_env(&env).unwrap();
        assert_eq!(c2.mind.model, "m2");
        assert_ne!(c2.embedder.kind, c.embedder.kind);
        assert_ne!(c2.embedder.model, c.embedder.model);
        assert!(c2.embedder.upgrade && !c.embedder.upgrade);
        let bad = BTreeMap::from([("WASMIND_EMBEDDER_UPGRADE".to_string(), "yes".to_string())]);
        let err = Config::default().apply_env(&bad).unwrap_err().to_string();
        assert!(err.contains("expected true or false"), "{err}");
        assert_eq!(
            c2.runtime.artifact_cache_dir,
            Some(PathBuf::from("/var/cache/wasmind"))
        );
    }

    #[test]
    fn each_provider_has_its_own_default_base_url() {
        let mut mind = Config::parse("[mind]\nprovider = \"anthropic\"\nmax_tokens = 512\n")
            .unwrap()
            .mind;
        assert_eq!(mind.max_tokens, 512);
        assert_eq!(mind.base_url(), "https://api.anthropic.com/v1");
        mind.provider = "openai".into();
        assert_eq!(mind.base_url(), "https://api.openai.com/v1");
        let mut c = Config::default();
        let env = BTreeMap::from([
            ("WASMIND_MIND".to_string(), "anthropic".to_string()),
            (
                "WASMIND_MIND_BASE_URL".to_string(),
                "http://127.0.0.1:9/v1".to_string(),
            ),
            ("WASMIND_MIND_MODEL".to_string(), "claude-x".to_string()),
        ]);
        c.apply_env(&env).unwrap();
        assert_eq!(c.mind.base_url(), "http://127.0.0.1:9/v1");
    }

    #[test]
    fn bad_provider_is_refused() {
        let env = BTreeMap::from([("WASMIND_MIND".to_string(), "psychic".to_string())]);
        let err = Config::default().apply_env(&env).unwrap_err().to_string();
        assert!(err.contains("psychic"), "{err}");
        let mut c = Config::parse("[mind]\nmax_tokens = 0\n").unwrap();
        let err = c.apply_env(&BTreeMap::new()).unwrap_err().to_string();
        assert!(err.contains("max_tokens"), "{err}");
    }

    #[test]
    fn debug_shows_no_secret() {
        let c = Config::parse(
            "[mind]\napi_key = \"sk-mind-secret\"\n[embedder.openai]\napi_key = \"sk-embed-secret\"\n",
        )
        .unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("sk-mind-secret"), "{shown}");
        assert!(!shown.contains("sk-embed-secret"), "{shown}");
        assert!(shown.contains("api_key: Some(<redacted>)"), "{shown}");
        assert_eq!(c.mind.api_key.unwrap().expose(), "sk-mind-secret");
    }
}
