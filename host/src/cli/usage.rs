//! `wasmind usage`: metered usage per account and month.

use std::path::Path;

use crate::{accounts::UsageStore, data_dir::DataDir};

pub(super) fn run(
    data_dir: &Path,
    month: Option<&str>,
    account: Option<&str>,
) -> anyhow::Result<()> {
    let dir = DataDir::open(data_dir)?;
    println!(
        "{:<24} {:<7} {:>10} {:>14} {:>14}",
        "ACCOUNT", "MONTH", "RUN_HOURS", "INPUT_TOKENS", "OUTPUT_TOKENS"
    );
    for (row_account, row_month, used) in UsageStore::new(dir.db().clone())?.all()? {
        if account.is_some_and(|a| a != row_account) || month.is_some_and(|m| m != row_month) {
            continue;
        }
        let hours = used.run_ms as f64 / 3_600_000.0;
        println!(
            "{row_account:<24} {row_month:<7} {hours:>10.4} {:>14} {:>14}",
            used.input_tokens, used.output_tokens
        );
    }
    Ok(())
}

/// Parses `--month`: `YYYY-MM`, as usage is keyed.
pub(super) fn month(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let valid = bytes.len() == 7
        && bytes[4] == b'-'
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| i == 4 || b.is_ascii_digit())
        && matches!(text[5..].parse::<u8>(), Ok(1..=12));
    if valid {
        Ok(text.to_owned())
    } else {
        Err(format!("{text:?} is not a month of the form YYYY-MM"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn months_are_yyyy_mm() {
        assert_eq!(super::month("2026-05").as_deref(), Ok("2026-05"));
        for bad in [
            "2026-5",
            "2026-13",
            "2026-00",
            "2026/05",
            "2026-+1",
            "26-05-01",
            "май-05",
        ] {
            assert!(super::month(bad).is_err(), "{bad}");
        }
    }
}
