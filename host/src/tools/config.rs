//! The `[tools]` section: where the key that seals tools' secrets is, and how long a tool's
//! result may be.

use std::{collections::BTreeMap, path::PathBuf};

use serde::Deserialize;

/// The key file's name in the operator's config dir, when none is configured.
const DEFAULT_KEY_FILE: &str = "wasmind/tools.key";

/// The `[tools]` section of the config file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ToolsConfig {
    /// The key that seals tools' secrets (env `WASMIND_TOOLS_KEY_FILE`); by default
    /// `$XDG_CONFIG_HOME/wasmind/tools.key`, else `~/.config/wasmind/tools.key`, made once.
    /// Never in the data dir: a copy of the data dir (or the database) then holds the
    /// secrets sealed, without the key that opens them.
    pub secret_key_file: Option<PathBuf>,
    /// Most characters of a tool's result given to the agent; a longer result is cut and
    /// says so.
    pub max_result_chars: usize,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            secret_key_file: None,
            max_result_chars: 16_384,
        }
    }
}

impl ToolsConfig {
    /// Applies `WASMIND_TOOLS_KEY_FILE`, else fills in the default key file from the
    /// operator's config dir (`XDG_CONFIG_HOME`, else `HOME/.config`) when none is set.
    pub fn apply_env(&mut self, env: &BTreeMap<String, String>) {
        if let Some(file) = env.get("WASMIND_TOOLS_KEY_FILE") {
            self.secret_key_file = Some(PathBuf::from(file));
        }
        if self.secret_key_file.is_none() {
            let config_dir = (env.get("XDG_CONFIG_HOME").filter(|d| !d.is_empty()))
                .map(PathBuf::from)
                .or_else(|| env.get("HOME").map(|h| PathBuf::from(h).join(".config")));
            self.secret_key_file = config_dir.map(|d| d.join(DEFAULT_KEY_FILE));
        }
    }

    /// Rejects a cap of nothing.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.max_result_chars == 0 {
            anyhow::bail!("[tools] max_result_chars must be at least 1");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_file_is_the_env_s_then_the_file_s_then_the_config_dir_s() {
        let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            (pairs.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let mut c = ToolsConfig::default();
        c.apply_env(&env(&[("HOME", "/home/op")]));
        assert_eq!(
            c.secret_key_file,
            Some(PathBuf::from("/home/op/.config/wasmind/tools.key"))
        );
        let mut c = ToolsConfig::default();
        c.apply_env(&env(&[("HOME", "/home/op"), ("XDG_CONFIG_HOME", "/cfg")]));
        assert_eq!(
            c.secret_key_file,
            Some(PathBuf::from("/cfg/wasmind/tools.key"))
        );
        let mut c = ToolsConfig {
            secret_key_file: Some("/etc/wasmind/tools.key".into()),
            ..ToolsConfig::default()
        };
        c.apply_env(&env(&[("HOME", "/home/op")]));
        assert_eq!(
            c.secret_key_file,
            Some(PathBuf::from("/etc/wasmind/tools.key"))
        );
        c.apply_env(&env(&[("WASMIND_TOOLS_KEY_FILE", "/run/k")]));
        assert_eq!(c.secret_key_file, Some(PathBuf::from("/run/k")));
        let mut c = ToolsConfig::default();
        c.apply_env(&env(&[]));
        assert_eq!(c.secret_key_file, None);
    }
}
