//! The open-file limit of the connection phases (`strangers`, `slow-readers`): each of
//! their connections costs a descriptor in every process that holds one of its ends, and
//! the default soft limit (1,024) fits few of 10,000.

use serde::{Deserialize, Serialize};

use super::report::Table;

/// Descriptors kept for the rest of a process (B's connections, the server's files).
const SPARE: usize = 1_000;

/// A process's open-file limit, raised for a phase's connections.
#[derive(Serialize, Deserialize)]
pub struct Nofile {
    /// The soft limit now (`None`: unlimited).
    limit: Option<u64>,
    /// What the connections need, with [`SPARE`].
    wanted: u64,
    /// How many of the connections fit in `limit`.
    pub fit: usize,
}

impl Nofile {
    /// Raises this process's limit as far as allowed for `connections` that cost it
    /// `per_connection` descriptors each. Fewer fit under a lower hard limit: past it the
    /// rest of the process (B's connections, the server's files) would fail for want of a
    /// descriptor, which is the bench's limit, not the server's behaviour.
    pub fn raise(connections: usize, per_connection: usize) -> Self {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let wanted = (per_connection * connections + SPARE) as u64;
        let limit = getrlimit(Resource::Nofile);
        let raised = Rlimit {
            current: Some(wanted),
            maximum: Some(limit.maximum.map_or(wanted, |m| m.max(wanted))),
        };
        if setrlimit(Resource::Nofile, raised).is_err() {
            let soft = Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            };
            let _ = setrlimit(Resource::Nofile, soft);
        }
        let limit = getrlimit(Resource::Nofile).current;
        let fit = limit.map_or(connections, |n| {
            connections.min((n as usize).saturating_sub(SPARE) / per_connection)
        });
        Self { limit, wanted, fit }
    }

    /// Notes the limit in `section` of the table, as `whose` (“the bench process”).
    pub fn note(&self, table: &mut Table, section: &str, whose: &str) {
        table.value(
            section,
            &format!("open-file limit of {whose}"),
            format!("{:?} (needs {})", self.limit, self.wanted),
            "",
            None,
        );
    }
}
