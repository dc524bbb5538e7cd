//! Wall-clock time in the units the API speaks: epoch milliseconds for memories, ISO 8601
//! (UTC) for agents, and calendar months (UTC) for monthly budgets.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// (year, month 1–12, day 1–31) of a day count since 1970-01-01 (proleptic Gregorian).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // Howard Hinnant's algorithm, http://howardhinnant.github.io/date_algorithms.html
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Days since 1970-01-01 of a civil date.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2026-11-21T03:55:12.123Z`.
pub fn iso8601(ms: u64) -> String {
    let secs = ms / 1_000;
    let (y, mo, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60,
        ms % 1_000
    )
}

/// The UTC calendar month of an instant, as `YYYY-MM`.
pub fn month_of(ms: u64) -> String {
    let (y, mo, _) = civil_from_days((ms / 86_400_000) as i64);
    format!("{y:04}-{mo:02}")
}

/// Epoch ms of the first instant of the next UTC month (when monthly budgets reset).
pub fn next_month_start(ms: u64) -> u64 {
    let (y, mo, _) = civil_from_days((ms / 86_400_000) as i64);
    let (ny, nm) = if mo == 12 { (y + 1, 1) } else { (y, mo + 1) };
    days_from_civil(ny, nm, 1) as u64 * 86_400_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_795_233_312_005), "2026-11-21T03:55:12.005Z");
        assert_eq!(month_of(1_795_233_312_005), "2026-11");
    }

    #[test]
    fn months_roll_over() {
        let nov_21_2026 = 1_795_233_312_005;
        assert_eq!(
            iso8601(next_month_start(nov_21_2026)),
            "2026-12-01T00:00:00.000Z"
        );
        let dec_31 = days_from_civil(2026, 12, 31) as u64 * 86_400_000 + 5;
        assert_eq!(
            iso8601(next_month_start(dec_31)),
            "2027-01-01T00:00:00.000Z"
        );
        for days in [-1000, 0, 59, 60, 10_957, 20_000, 30_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
