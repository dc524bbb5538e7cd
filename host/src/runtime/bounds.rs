//! Per-run bounds on what a guest makes the host keep: its progress reports, its log
//! events and its final result. A guest is untrusted, so whatever it sends is counted
//! before anything is stored: a flood costs bounded disk and memory, and past a bound
//! further reports are dropped (and counted) rather than failing the run — the agent may
//! still finish its work. A final result over its bound fails the run
//! (`result_too_large`): a truncated answer would pass for a whole one.

use super::config::RuntimeConfig;

/// Longest agent error message kept on the record, in characters.
pub const MAX_ERROR_CHARS: usize = 2_000;

/// `text` cut to at most `max` characters (an ellipsis marks a cut).
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// What to do with one more report of a metered kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Within the bound: store it.
    Keep,
    /// The first one past the bound: drop it, and say once that further ones are dropped.
    FirstDropped,
    /// Past the bound: drop it.
    Dropped,
}

/// Counts one kind of report against a bound on their number and total bytes. Once one
/// is dropped every later one is too, so the stored stream has no holes.
#[derive(Debug, Clone)]
pub struct Meter {
    max_count: u64,
    max_bytes: u64,
    count: u64,
    bytes: u64,
    dropped: u64,
}

impl Meter {
    pub fn new(max_count: u64, max_bytes: u64) -> Self {
        Self {
            max_count,
            max_bytes,
            count: 0,
            bytes: 0,
            dropped: 0,
        }
    }

    /// Counts a report of `bytes` bytes and says whether to store it.
    pub fn admit(&mut self, bytes: usize) -> Admit {
        let bytes = bytes as u64;
        let fits =
            self.count < self.max_count && self.bytes.saturating_add(bytes) <= self.max_bytes;
        if self.dropped == 0 && fits {
            self.count += 1;
            self.bytes += bytes;
            return Admit::Keep;
        }
        self.dropped += 1;
        match self.dropped {
            1 => Admit::FirstDropped,
            _ => Admit::Dropped,
        }
    }

    pub fn max_count(&self) -> u64 {
        self.max_count
    }

    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// How many were dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// One run's meters.
#[derive(Debug, Clone)]
pub struct RunBounds {
    pub progress: Meter,
    pub log: Meter,
}

impl RunBounds {
    pub fn new(config: &RuntimeConfig) -> Self {
        Self {
            progress: Meter::new(u64::from(config.max_progress_reports), u64::MAX),
            log: Meter::new(u64::from(config.max_log_events), config.max_log_bytes),
        }
    }

    /// How many reports wrote the agent's record so far: those stored, and the first one
    /// dropped in each stream (it writes the `limit` event).
    pub fn writes(&self) -> u64 {
        [&self.progress, &self.log]
            .iter()
            .map(|m| m.count + m.dropped.min(1))
            .sum()
    }
}

/// Refuses a final result over `max_bytes` (UTF-8) with the `result_too_large` message.
pub fn check_result(text: &str, max_bytes: u64) -> Result<(), String> {
    match text.len() as u64 {
        len if len <= max_bytes => Ok(()),
        len => Err(format!(
            "the agent's final result is {len} bytes, over the limit of {max_bytes} bytes \
             ([runtime] max_result_bytes)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_meter_keeps_up_to_its_count_then_drops_and_counts() {
        let mut m = Meter::new(3, u64::MAX);
        assert_eq!([m.admit(1), m.admit(1), m.admit(1)], [Admit::Keep; 3]);
        assert_eq!(m.admit(1), Admit::FirstDropped);
        assert_eq!(m.admit(0), Admit::Dropped);
        assert_eq!(m.dropped(), 2);
    }

    #[test]
    fn a_meter_drops_past_its_bytes_and_everything_after() {
        let mut m = Meter::new(100, 10);
        assert_eq!(m.admit(6), Admit::Keep);
        assert_eq!(m.admit(5), Admit::FirstDropped);
        // It would fit, but the stream already has a hole: no later report is kept.
        assert_eq!(m.admit(1), Admit::Dropped);
        assert_eq!(m.dropped(), 2);
    }

    #[test]
    fn run_bounds_follow_the_configuration() {
        let config = RuntimeConfig {
            max_progress_reports: 1,
            max_log_events: 2,
            max_log_bytes: 5,
            ..RuntimeConfig::default()
        };
        let mut b = RunBounds::new(&config);
        assert_eq!(b.progress.admit(1 << 20), Admit::Keep);
        assert_eq!(b.progress.admit(1), Admit::FirstDropped);
        assert_eq!(b.log.admit(5), Admit::Keep);
        assert_eq!(b.log.admit(1), Admit::FirstDropped);
    }

    #[test]
    fn results_over_the_bound_are_refused_naming_it() {
        assert_eq!(check_result("héllo", 6), Ok(()));
        let err = check_result("héllo", 5).unwrap_err();
        assert!(
            err.contains("6 bytes") && err.contains("limit of 5 bytes"),
            "{err}"
        );
    }

    #[test]
    fn clip_cuts_on_characters() {
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("héllo", 5), "héllo");
    }
}
