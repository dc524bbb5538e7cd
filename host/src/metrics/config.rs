//! The `[metrics]` section: whether `GET /metrics` is served, and where.

use std::net::SocketAddr;

use serde::Deserialize;

/// The `[metrics]` section of the config file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Serve `GET /metrics` (and record metrics at all); off, no recorder is installed and
    /// every emission is a no-op.
    pub enabled: bool,
    /// Serve `/metrics` on its own listener at this address instead of the main one (to
    /// keep it off a public interface); `None` serves it on the main listener.
    pub listen: Option<SocketAddr>,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            listen: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_and_on_the_main_listener_by_default() {
        let c: MetricsConfig = toml::from_str("").unwrap();
        assert_eq!(c, MetricsConfig::default());
        assert!(c.enabled && c.listen.is_none());
        let c: MetricsConfig =
            toml::from_str("enabled = false\nlisten = \"127.0.0.1:9100\"").unwrap();
        assert!(!c.enabled);
        assert_eq!(c.listen, Some("127.0.0.1:9100".parse().unwrap()));
        assert!(toml::from_str::<MetricsConfig>("listen = \"nowhere\"").is_err());
        assert!(toml::from_str::<MetricsConfig>("port = 1").is_err());
    }
}
