//! Plan tiers of the specification (§8) and their limits, the `[plans]` section of the
//! config file.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

/// A plan tier; its limits come from configuration (`[plans.<tier>]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    #[default]
    Free,
    Liftoff,
    Lightyear,
}

impl Plan {
    /// The tier's name as the API and CLI spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Liftoff => "liftoff",
            Plan::Lightyear => "lightyear",
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Plan {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "free" => Ok(Plan::Free),
            "liftoff" => Ok(Plan::Liftoff),
            "lightyear" => Ok(Plan::Lightyear),
            other => Err(format!(
                "unknown plan {other:?}: use free, liftoff or lightyear"
            )),
        }
    }
}

/// The three tiers' limits: the `[plans]` section of the config file.
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
