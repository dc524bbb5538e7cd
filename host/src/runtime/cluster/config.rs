//! The `[cluster]` section: who this node is among the nodes sharing one PostgreSQL, and
//! how its claims on the agents it runs are kept alive.

use serde::Deserialize;

/// The `[cluster]` section of the config file (read with `[storage] backend = "postgres"`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// This node's id: letters, digits, `.`, `_` and `-`, at most 64. Default: generated
    /// once and kept in the data dir's `node-id` file.
    pub node_id: Option<String>,
    /// How long a node's claim on its agents holds without a heartbeat, in seconds: past
    /// it, another node fails them (the host was lost).
    pub lease_secs: u64,
    /// How often a node renews its claims (and looks for lost hosts' agents), in seconds;
    /// less than `lease_secs`.
    pub heartbeat_secs: u64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            node_id: None,
            lease_secs: 15,
            heartbeat_secs: 5,
        }
    }
}

impl ClusterConfig {
    /// What is wrong with the section, if anything.
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(id) = &self.node_id {
            check_node_id(id)?;
        }
        anyhow::ensure!(
            self.heartbeat_secs >= 1 && self.heartbeat_secs < self.lease_secs,
            "[cluster] heartbeat_secs ({}) must be at least 1 and less than lease_secs ({}): \
             a node renews its claims several times per lease",
            self.heartbeat_secs,
            self.lease_secs
        );
        Ok(())
    }
}

/// Node ids are kept in rows and shown in errors: short and plain.
pub fn check_node_id(id: &str) -> anyhow::Result<()> {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    anyhow::ensure!(
        !id.is_empty() && id.len() <= 64 && id.chars().all(plain),
        "[cluster] node_id {id:?}: use 1 to 64 letters, digits, '.', '_' or '-'"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bounds() {
        let config = ClusterConfig::default();
        assert_eq!((config.lease_secs, config.heartbeat_secs), (15, 5));
        config.check().unwrap();
        let slow = ClusterConfig {
            heartbeat_secs: 15,
            ..ClusterConfig::default()
        };
        assert!(slow.check().unwrap_err().to_string().contains("less than"));
        let named = |id: &str| ClusterConfig {
            node_id: Some(id.into()),
            ..ClusterConfig::default()
        };
        named("node-a.1_x").check().unwrap();
        for bad in ["", "a b", "ü", &"n".repeat(65)] {
            assert!(named(bad).check().is_err(), "{bad:?}");
        }
    }
}
