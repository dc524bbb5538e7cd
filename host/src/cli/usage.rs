//! `wasmind usage`: metered usage per account and month, with the account's plan and its
//! subscription's status at the payment provider (both as of now), against the plan's budgets (Mind
//! tokens and agents' outgoing HTTP requests and bytes per month; active keys, as of now; component uploads in the last hour, open
//! event streams and MCP sessions, which only a running server counts), from the running
//! server when there is one, else from the data dir's files (or the database).

use super::target::Target;
use crate::admin::{Request, Response};

pub(super) fn run(
    target: &Target,
    month: Option<&str>,
    account: Option<&str>,
) -> anyhow::Result<()> {
    let request = Request::Usage {
        month: month.map(str::to_owned),
        account: account.map(str::to_owned),
    };
    let Response::Usage { rows } = target.run(request)? else {
        anyhow::bail!("unexpected answer to a usage command");
    };
    println!(
        "{:<24} {:<7} {:<10} {:<12} {:>10} {:>12} {:>14} {:>14} {:>24} {:>20} {:>26} {:>9} {:>11} {:>9} {:>12}",
        "ACCOUNT",
        "MONTH",
        "PLAN",
        "SUBSCRIPTION",
        "RUN_HOURS",
        "CPU_SECONDS",
        "INPUT_TOKENS",
        "OUTPUT_TOKENS",
        "TOKENS/LIMIT",
        "HTTP_REQUESTS/LIMIT",
        "HTTP_BYTES/LIMIT",
        "KEYS",
        "UPLOADS/1H",
        "STREAMS",
        "MCP_SESSIONS"
    );
    for row in rows {
        let hours = row.usage.run_ms as f64 / 3_600_000.0;
        let cpu = row.usage.cpu_ms as f64 / 1_000.0;
        println!(
            "{:<24} {:<7} {:<10} {:<12} {hours:>10.4} {cpu:>12.3} {:>14} {:>14} {:>24} {:>20} {:>26} {:>9} {:>11} {:>9} {:>12}",
            row.account,
            row.month,
            row.plan.map_or("-", |p| p.as_str()),
            row.subscription.as_deref().unwrap_or("-"),
            row.usage.input_tokens,
            row.usage.output_tokens,
            against(row.usage.tokens(), row.tokens_limit),
            against(row.usage.http_requests, row.http_limits.map(|l| l.0)),
            against(row.usage.http_bytes, row.http_limits.map(|l| l.1)),
            bounded(row.keys),
            bounded(row.uploads),
            bounded(row.streams),
            bounded(row.mcp_sessions),
        );
    }
    Ok(())
}

/// `used/limit` of a figure known with its bound, else `-`.
fn bounded(figure: Option<(u32, u32)>) -> String {
    figure.map_or("-".into(), |(used, max)| against(used, Some(max)))
}

/// `used/limit`, or `used/-` where no plan bounds it.
fn against(used: impl std::fmt::Display, limit: Option<impl std::fmt::Display>) -> String {
    match limit {
        Some(limit) => format!("{used}/{limit}"),
        None => format!("{used}/-"),
    }
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
