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
    /// Most rows of bulk writes (imports, consolidations) one account may have waiting for
    /// the embedded backend's writer; past it they are refused with 503
    /// `temporarily_unavailable` (one is always admitted when the account has nothing
    /// waiting). Values below 1 mean 1.
    pub write_queue_per_account: usize,
    /// Most rows of bulk writes all accounts together may have waiting (past it, 503 as
    /// above). Values below 1 mean 1.
    pub write_queue_total: usize,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            decay_half_life_days: 30.0,
            checkpoint_interval_secs: 30,
            consolidate_cooldown_secs: 60,
            write_queue_per_account: 2048,
            write_queue_total: 16384,
        }
    }
}
