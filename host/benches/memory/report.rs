//! Latency samples, percentiles and the results table printed at the end.

use std::fmt::Write as _;
use std::time::Duration;

/// Nearest-rank percentile (`q` in 0..=1) of unsorted samples, in milliseconds.
pub fn percentile_ms(samples: &[Duration], q: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    ms(sorted[rank - 1])
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// One row of the results table.
pub struct Row {
    pub section: String,
    pub what: String,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    /// Throughput, a single time, a size… whatever the row reports besides p50/p99.
    pub value: String,
    pub target: String,
    /// Some(true/false) when the row has a target.
    pub met: Option<bool>,
}

#[derive(Default)]
pub struct Table {
    rows: Vec<Row>,
}

impl Table {
    /// A latency row; `target_p99_ms` makes it checked.
    pub fn latency(
        &mut self,
        section: &str,
        what: &str,
        samples: &[Duration],
        target_p99_ms: Option<f64>,
    ) {
        let (p50, p99) = (percentile_ms(samples, 0.5), percentile_ms(samples, 0.99));
        let row = Row {
            section: section.into(),
            what: what.into(),
            p50: Some(p50),
            p99: Some(p99),
            value: format!("n={}", samples.len()),
            target: target_p99_ms.map_or(String::new(), |t| format!("p99 ≤ {t} ms")),
            met: target_p99_ms.map(|t| p99 <= t),
        };
        println!(
            "  {:<58} p50 {p50:>8.2} ms  p99 {p99:>8.2} ms  (n={})",
            what,
            samples.len()
        );
        self.rows.push(row);
    }

    /// A row with a free-form value and an optional check.
    pub fn value(
        &mut self,
        section: &str,
        what: &str,
        value: String,
        target: &str,
        met: Option<bool>,
    ) {
        println!("  {what:<58} {value}");
        self.rows.push(Row {
            section: section.into(),
            what: what.into(),
            p50: None,
            p99: None,
            value,
            target: target.into(),
            met,
        });
    }

    /// The whole table as Markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::from(
            "| section | measurement | p50 ms | p99 ms | other | target | met |\n|---|---|---:|---:|---|---|---|\n",
        );
        let num = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.2}"));
        for r in &self.rows {
            let met = match r.met {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                r.section,
                r.what,
                num(r.p50),
                num(r.p99),
                r.value,
                r.target,
                met
            );
        }
        out
    }
}
