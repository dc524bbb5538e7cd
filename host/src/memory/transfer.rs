//! Import: a batch of puts applied in order, halting at the quota.

use super::{MemoryError, PutInput, Result};

/// One item of an import, already parsed: either an input or why it cannot be one.
#[derive(Debug)]
pub struct ImportItem {
    /// Position in the request's `memories` array.
    pub index: usize,
    /// The item's key as given, if it was a string (quoted back in errors).
    pub key: Option<String>,
    pub input: std::result::Result<PutInput, Rejected>,
}

/// Why an item was refused: an `invalid_*` code and a message saying what to fix.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    pub code: String,
    pub message: String,
}

impl From<MemoryError> for Rejected {
    fn from(e: MemoryError) -> Self {
        let code = match &e {
            MemoryError::Invalid { field, .. } => format!("invalid_{field}"),
            _ => "internal_error".to_string(),
        };
        Rejected {
            code,
            message: e.to_string(),
        }
    }
}

/// Why one item was not imported.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemError {
    pub index: usize,
    pub key: Option<String>,
    pub rejected: Rejected,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ImportReport {
    /// Items written (an item identical to the live memory counts: it is there).
    pub imported: usize,
    pub failed: usize,
    pub errors: Vec<ItemError>,
    /// `(limit, used)` when the import halted at the memory quota.
    pub halted: Option<(u64, u64)>,
}

/// An import item ready to write: its position and its embedded input, or why it is invalid.
pub(super) type Prepared = (
    usize,
    Option<String>,
    std::result::Result<(PutInput, Vec<f32>), Rejected>,
);

/// An import's report as its items are written in order, one put each.
#[derive(Debug, Default)]
pub(super) struct Importing {
    report: ImportReport,
}

impl Importing {
    /// Records one item: its key and what its put did, or why it was refused before any
    /// put. Returns whether to go on (`false`: halted at the quota); a failure that is
    /// not the item's fault is returned, aborting the whole import.
    pub(super) fn record<T>(
        &mut self,
        index: usize,
        given_key: Option<String>,
        item: std::result::Result<(String, Result<T>), Rejected>,
    ) -> Result<bool> {
        let (key, rejected) = match item {
            Err(rejected) => (given_key, rejected),
            Ok((_, Ok(_))) => {
                self.report.imported += 1;
                return Ok(true);
            }
            Ok((_, Err(MemoryError::QuotaExceeded { limit, used }))) => {
                self.report.halted = Some((limit, used));
                return Ok(false);
            }
            Ok((key, Err(e @ MemoryError::Invalid { .. }))) => (Some(key), e.into()),
            Ok((_, Err(other))) => return Err(other),
        };
        self.report.failed += 1;
        self.report.errors.push(ItemError {
            index,
            key,
            rejected,
        });
        Ok(true)
    }

    pub(super) fn done(self) -> ImportReport {
        self.report
    }
}
