//! The `[memory]` section: search decay and write tuning of the memory service.

use serde::Deserialize;

/// The `[memory]` section of the config file.
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
