//! Import: a batch of puts applied in order in one transaction, halting at the quota.

use super::{MemoryError, PutInput, Result, store::Batch};

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

/// Writes `items` in order, halting at the quota.
pub(super) fn apply(
    batch: &mut Batch<'_>,
    items: Vec<Prepared>,
    limit: u64,
) -> Result<ImportReport> {
    let mut report = ImportReport::default();
    for (index, given_key, item) in items {
        let (key, rejected) = match item {
            Err(rejected) => (given_key, rejected),
            Ok((input, embedding)) => match batch.put(&input, &embedding, limit) {
                Ok(_) => {
                    report.imported += 1;
                    continue;
                }
                Err(MemoryError::QuotaExceeded { limit, used }) => {
                    report.halted = Some((limit, used));
                    break;
                }
                Err(e @ MemoryError::Invalid { .. }) => (Some(input.key), e.into()),
                Err(other) => return Err(other),
            },
        };
        report.failed += 1;
        report.errors.push(ItemError {
            index,
            key,
            rejected,
        });
    }
    Ok(report)
}
