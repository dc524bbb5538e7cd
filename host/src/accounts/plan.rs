//! Plan tiers of the specification (§8).

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
