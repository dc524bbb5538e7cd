//! One `Config`, read once at start-up: defaults, then the TOML file, then environment
//! overrides. Unknown keys in the file are an error naming them, so a typo never silently
//! falls back to a default. Nothing below start-up reads the environment.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use anyhow::{Context, bail};
use serde::Deserialize;

use crate::{accounts::Plan, memory::embed::EmbedderConfig};

/// Everything configurable, with documented defaults (see README "Configuration").
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Limits per plan tier.
    pub plans: Plans,
    /// Which sentence embedder indexes memories, and its settings.
    pub embedder: EmbedderConfig,
    /// The reasoning model agents think with.
    pub mind: MindConfig,
    /// Memory search and write tuning.
    pub memory: MemoryConfig,
    /// The wasm agent runtime.
    pub runtime: RuntimeConfig,
}

/// The three plan tiers of the specification.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Plans {
    pub free: PlanLimits,
    pub liftoff: PlanLimits,
    pub lightyear: PlanLimits,
}

impl Default for Plans {
    fn default() -> Self {
        Self {
            free: PlanLimits {
                spawns_per_minute: 5,
                spawns_per_hour: 30,
                concurrent_agents: 2,
                memories: 1_000,
                agent_hours_per_month: 10.0,
            },
            liftoff: PlanLimits {
                spawns_per_minute: 5,
                spawns_per_hour: 30,
                concurrent_agents: 5,
                memories: 25_000,
                agent_hours_per_month: 100.0,
            },
            lightyear: PlanLimits {
                spawns_per_minute: 30,
                spawns_per_hour: 500,
                concurrent_agents: 25,
                memories: 250_000,
                agent_hours_per_month: 1_000.0,
            },
        }
    }
}

impl Plans {
    /// The limits of one tier.
    pub fn limits(&self, plan: Plan) -> &PlanLimits {
        match plan {
            Plan::Free => &self.free,
            Plan::Liftoff => &self.liftoff,
            Plan::Lightyear => &self.lightyear,
        }
    }
}

/// Limits of one plan tier. Every member must be given when a `[plans.X]` table is written,
/// so a partial table cannot silently mix tiers.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlanLimits {
    /// Spawns per API key in any rolling 60 s window.
    pub spawns_per_minute: u32,
    /// Spawns per API key in any rolling 3,600 s window.
    pub spawns_per_hour: u32,
    /// Agents spawning or running at once, per account.
    pub concurrent_agents: u32,
    /// Live memories per account, across all its keys and namespaces.
    pub memories: u64,
    /// Agent run time per account per calendar month (UTC), in hours.
    pub agent_hours_per_month: f64,
}

/// The `[mind]` section: which provider agents think with.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MindConfig {
    /// `offline` (rule-based, network-free, the default), `openai` or `anthropic`.
    pub provider: String,
    /// Base URL of the provider's API; `None` means the provider's own (see
    /// [`MindConfig::base_url`]), so switching provider never sends one vendor's key to
    /// the other's URL.
    pub base_url: Option<String>,
    /// Key for the provider, if it needs one.
    pub api_key: Option<String>,
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

/// The `[memory]` section.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// Half-life of the search `timeDecay` factor, in days.
    pub decay_half_life_days: f64,
    /// Seconds between vector-index checkpoints to disk.
    pub checkpoint_interval_secs: u64,
    /// Seconds an account waits after a consolidation that wrote something before the
    /// next (each spends the Mind's tokens); 0 disables the wait.
    pub consolidate_cooldown_secs: u64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            decay_half_life_days: 30.0,
            checkpoint_interval_secs: 30,
            consolidate_cooldown_secs: 60,
        }
    }
}

/// The `[runtime]` section: limits of each agent's sandbox.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeConfig {
    /// Most live agents the host admits; the default (and the ceiling) is derived from the
    /// process's mapping limit (`vm.max_map_count`) and reported at start-up.
    pub max_agents: Option<u32>,
    /// Linear-memory limit of one agent, in MiB.
    pub memory_limit_mib: u32,
    /// Most elements any one table of an agent may grow to.
    pub table_elements_limit: u32,
    /// Longest an agent may run, in seconds.
    pub max_run_secs: u64,
    /// Grace between a stop request and the agent's forced end, in seconds.
    pub stop_grace_secs: f64,
    /// The agent component every spawn runs; default: the built-in default agent.
    pub component: Option<PathBuf>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            max_agents: None,
            memory_limit_mib: 64,
            table_elements_limit: 20_000,
            max_run_secs: 3_600,
            stop_grace_secs: 10.0,
            component: None,
        }
    }
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
                "WASMIND_MIND_API_KEY" => self.mind.api_key = Some(value.clone()),
                "WASMIND_MIND_MODEL" => self.mind.model = value.clone(),
                "WASMIND_EMBEDDER" => {
                    self.embedder.kind = value
                        .parse()
                        .map_err(|e| anyhow::anyhow!("WASMIND_EMBEDDER: {e}"))?;
                }
                "WASMIND_MODEL_DIR" => self.embedder.model_dir = Some(PathBuf::from(value)),
                _ => {}
            }
        }
        if !matches!(
            self.mind.provider.as_str(),
            "offline" | "openai" | "anthropic"
        ) {
            bail!(
                "unknown mind provider {:?}: use {MIND_PROVIDERS}",
                self.mind.provider
            );
        }
        if self.mind.max_tokens == 0 {
            bail!("[mind] max_tokens must be at least 1");
        }
        Ok(())
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
        ]);
        c2.apply_env(&env).unwrap();
        assert_eq!(c2.mind.model, "m2");
        assert_ne!(c2.embedder.kind, c.embedder.kind);
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
}
