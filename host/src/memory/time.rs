//! Reads in time (issue 26): `as_of` looks at the versions live at an earlier instant with
//! their values then; `observed_after` / `observed_before` keep the versions whose fact was
//! observed in a window. Every version keeps when it was written (`updated_at`) and when
//! its fact was observed (`observed_at`, the write time unless the writer said otherwise).

use wasmind_rules::validate_not_future;

use super::{Result, record::Memory};

/// The time filters of a get, list or search; all absent for a plain read of now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeFilter {
    /// Read the versions live at this instant (epoch ms) instead of the live ones.
    pub as_of: Option<u64>,
    /// Keep versions observed at or after this instant (epoch ms).
    pub observed_after: Option<u64>,
    /// Keep versions observed before this instant (epoch ms).
    pub observed_before: Option<u64>,
}

impl TimeFilter {
    /// Whether any filter is set (a read that cannot use the live indexes alone).
    pub fn is_set(&self) -> bool {
        *self != Self::default()
    }

    /// Whether an observation window is set (no index knows observation times).
    pub fn has_window(&self) -> bool {
        self.observed_after.is_some() || self.observed_before.is_some()
    }

    /// Whether `m` was observed inside the window.
    pub fn keeps(&self, m: &Memory) -> bool {
        let observed = m.observed();
        self.observed_after.is_none_or(|after| observed >= after)
            && self.observed_before.is_none_or(|before| observed < before)
    }

    /// Whether the window holds no instant (its start is not before its end): nothing was
    /// observed in it.
    pub fn is_empty_window(&self) -> bool {
        matches!((self.observed_after, self.observed_before), (Some(after), Some(before)) if after >= before)
    }

    /// Refuses an `as_of` in the future of `now`, naming the field.
    pub fn validate(&self, now: u64) -> Result<()> {
        if let Some(at) = self.as_of {
            validate_not_future("as_of", at, now)?;
        }
        Ok(())
    }
}

/// Of the versions of one key, newest first, the one live at `at`: the newest written at
/// or before `at`, unless it was deleted or had expired by then.
pub fn version_at(newest_first: impl IntoIterator<Item = Memory>, at: u64) -> Option<Memory> {
    newest_first
        .into_iter()
        .find(|m| m.updated_at <= at)
        .filter(|m| m.was_live_at(at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::record::sample;
    use wasmind_rules::limits::CLOCK_SKEW_MS;

    fn version(id: u64, written: u64) -> Memory {
        Memory {
            updated_at: written,
            ..sample(id)
        }
    }

    #[test]
    fn the_version_at_an_instant_is_the_newest_written_by_then_unless_deleted_or_expired() {
        let mut newest = version(2, 200);
        newest.deleted_at = Some(300);
        let mut oldest = version(1, 100);
        oldest.expires_at = Some(1_000);
        let id_at =
            |oldest: &Memory, at| version_at([newest.clone(), oldest.clone()], at).map(|m| m.id);
        assert_eq!(id_at(&oldest, 99), None, "nothing written yet");
        assert_eq!(id_at(&oldest, 100), Some(1));
        assert_eq!(id_at(&oldest, 199), Some(1));
        assert_eq!(id_at(&oldest, 200), Some(2));
        assert_eq!(id_at(&oldest, 299), Some(2));
        assert_eq!(id_at(&oldest, 300), None, "deleted at 300");
        oldest.expires_at = Some(150);
        assert_eq!(id_at(&oldest, 149), Some(1));
        assert_eq!(id_at(&oldest, 150), None, "expired at 150");
    }

    #[test]
    fn the_observed_window_is_closed_below_and_open_above() {
        let mut m = sample(1);
        m.observed_at = Some(500);
        let window = |after, before| TimeFilter {
            observed_after: after,
            observed_before: before,
            ..TimeFilter::default()
        };
        assert!(window(Some(500), Some(501)).keeps(&m));
        assert!(!window(Some(501), None).keeps(&m));
        assert!(!window(None, Some(500)).keeps(&m));
        m.observed_at = None;
        m.updated_at = 42;
        assert!(
            window(None, Some(43)).keeps(&m),
            "the write time, for old rows"
        );
    }

    #[test]
    fn a_future_instant_is_refused_with_the_field_and_an_empty_window_keeps_nothing() {
        let field = |f: TimeFilter| match f.validate(1_000_000) {
            Err(crate::memory::MemoryError::Invalid { field, message }) => Some((field, message)),
            _ => None,
        };
        let ok = TimeFilter {
            as_of: Some(1_000_000 + CLOCK_SKEW_MS),
            observed_after: Some(1),
            observed_before: Some(2),
        };
        assert_eq!(field(ok), None);
        assert!(!ok.is_empty_window());
        let (f, message) = field(TimeFilter {
            as_of: Some(2_000_000),
            ..ok
        })
        .unwrap();
        assert_eq!(f, "as_of");
        assert!(message.contains("must not be in the future"), "{message}");
        let mut m = sample(1);
        m.observed_at = Some(2);
        for (after, before) in [(2, 2), (3, 2)] {
            let empty = TimeFilter {
                observed_after: Some(after),
                observed_before: Some(before),
                ..ok
            };
            assert_eq!(field(empty), None, "valid: it only holds nothing");
            assert!(empty.is_empty_window());
            assert!(!empty.keeps(&m));
        }
        let open = TimeFilter {
            observed_after: Some(5),
            ..TimeFilter::default()
        };
        assert!(!open.is_empty_window(), "half-open windows are never empty");
    }
}
