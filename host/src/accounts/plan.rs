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
#[serde(from = "PlanTables")]
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
                component_max_bytes: 8 << 20,
                components: 10,
                cpu_seconds_per_run: 60.0,
            },
            liftoff: PlanLimits {
                spawns_per_minute: 5,
                spawns_per_hour: 30,
                concurrent_agents: 5,
                memories: 25_000,
                agent_hours_per_month: 100.0,
                component_max_bytes: 32 << 20,
                components: 100,
                cpu_seconds_per_run: 600.0,
            },
            lightyear: PlanLimits {
                spawns_per_minute: 30,
                spawns_per_hour: 500,
                concurrent_agents: 25,
                memories: 250_000,
                agent_hours_per_month: 1_000.0,
                component_max_bytes: 64 << 20,
                components: 1_000,
                cpu_seconds_per_run: 3_600.0,
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

    /// The largest component any plan may upload.
    pub fn largest_component(&self) -> u64 {
        [&self.free, &self.liftoff, &self.lightyear]
            .iter()
            .map(|l| l.component_max_bytes)
            .max()
            .unwrap_or(0)
    }
}

/// Limits of one plan tier.
#[derive(Debug, Clone, PartialEq)]
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
    /// Largest agent component an account may upload, in bytes.
    pub component_max_bytes: u64,
    /// Most agent components an account may keep.
    pub components: u32,
    /// CPU time one agent's run may use, in seconds; past it the run fails with
    /// `cpu_limit_exceeded`.
    pub cpu_seconds_per_run: f64,
}

/// The `[plans]` section as written: tiers left out keep their defaults.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanTables {
    free: Option<PlanTable>,
    liftoff: Option<PlanTable>,
    lightyear: Option<PlanTable>,
}

/// One `[plans.X]` table. The original five limits must all be given, so a partial table
/// cannot silently mix tiers; the component and CPU limits came later and, left out, keep the
/// tier's own defaults (so configuration files written before them still load).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanTable {
    spawns_per_minute: u32,
    spawns_per_hour: u32,
    concurrent_agents: u32,
    memories: u64,
    agent_hours_per_month: f64,
    component_max_bytes: Option<u64>,
    components: Option<u32>,
    cpu_seconds_per_run: Option<f64>,
}

impl PlanTable {
    fn over(self, default: &PlanLimits) -> PlanLimits {
        PlanLimits {
            spawns_per_minute: self.spawns_per_minute,
            spawns_per_hour: self.spawns_per_hour,
            concurrent_agents: self.concurrent_agents,
            memories: self.memories,
            agent_hours_per_month: self.agent_hours_per_month,
            component_max_bytes: self
                .component_max_bytes
                .unwrap_or(default.component_max_bytes),
            components: self.components.unwrap_or(default.components),
            cpu_seconds_per_run: self
                .cpu_seconds_per_run
                .unwrap_or(default.cpu_seconds_per_run),
        }
    }
}

impl From<PlanTables> for Plans {
    fn from(t: PlanTables) -> Self {
        let d = Plans::default();
        let tier = |table: Option<PlanTable>, default: PlanLimits| match table {
            Some(table) => table.over(&default),
            None => default,
        };
        Plans {
            free: tier(t.free, d.free),
            liftoff: tier(t.liftoff, d.liftoff),
            lightyear: tier(t.lightyear, d.lightyear),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIVE: &str = "spawns_per_minute = 1\nspawns_per_hour = 2\nconcurrent_agents = 3\n\
                        memories = 4\nagent_hours_per_month = 5.0\n";

    #[test]
    fn later_limits_default_per_tier_and_may_be_given() {
        let plans: Plans = toml::from_str(&format!(
            "[lightyear]\n{FIVE}\n[free]\n{FIVE}component_max_bytes = 1024\ncomponents = 2\n\
             cpu_seconds_per_run = 1.5\n"
        ))
        .unwrap();
        assert_eq!(plans.lightyear.component_max_bytes, 64 << 20);
        assert_eq!(plans.lightyear.cpu_seconds_per_run, 3_600.0);
        assert_eq!(plans.free.cpu_seconds_per_run, 1.5);
        assert_eq!(plans.lightyear.components, 1_000);
        assert_eq!(plans.lightyear.memories, 4);
        assert_eq!(
            (plans.free.component_max_bytes, plans.free.components),
            (1024, 2)
        );
        assert_eq!(plans.liftoff, Plans::default().liftoff);
        assert_eq!(plans.largest_component(), 64 << 20);
        let unknown = toml::from_str::<Plans>(&format!("[free]\n{FIVE}component_bytes = 1\n"));
        assert!(unknown.unwrap_err().to_string().contains("component_bytes"));
        let partial = toml::from_str::<Plans>("[free]\nmemories = 4\n");
        assert!(
            partial
                .unwrap_err()
                .to_string()
                .contains("spawns_per_minute")
        );
    }
}
