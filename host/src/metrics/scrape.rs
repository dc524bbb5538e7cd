//! Gauges set when `/metrics` is scraped, from figures the services already keep: nothing
//! is tracked on the hot paths for them, and they are exact at the moment of the scrape.

use std::collections::HashMap;

use super::names;
use crate::{accounts::Plan, memory::reembed::ReembedReport};

/// Sets [`names::REEMBED_VECTORS`] and [`names::REEMBED_STATE`] from the re-embedding's
/// report, when one was asked for at this start.
pub fn reembed(report: Option<&ReembedReport>) {
    let Some(report) = report else { return };
    metrics::gauge!(names::REEMBED_VECTORS, "part" => "done").set(report.done as f64);
    metrics::gauge!(names::REEMBED_VECTORS, "part" => "all").set(report.total as f64);
    for state in crate::memory::reembed::ReembedState::ALL {
        let on = if state == report.state { 1.0 } else { 0.0 };
        metrics::gauge!(names::REEMBED_STATE, "state" => state.as_str()).set(on);
    }
}

/// Sets [`names::AGENTS_LIVE`] and [`names::AGENTS_PARKED`]: the agents spawning or
/// running now in an instance, and those hibernated.
pub fn agents_live(live: u32, parked: u32) {
    metrics::gauge!(names::AGENTS_LIVE).set(live);
    metrics::gauge!(names::AGENTS_PARKED).set(parked);
}

/// Sets [`names::ACCOUNTS`]: the accounts of `plans` by plan and by the status of their
/// subscription in `subscriptions` (`none` without one); every plan's `none` series exists.
pub fn accounts_by_plan(plans: &HashMap<String, Plan>, subscriptions: &HashMap<String, String>) {
    let mut counts: HashMap<(&str, &str), u64> = [Plan::Free, Plan::Liftoff, Plan::Lightyear]
        .into_iter()
        .map(|plan| ((plan.as_str(), "none"), 0))
        .collect();
    for (account, plan) in plans {
        let status = subscriptions.get(account).map_or("none", String::as_str);
        *counts.entry((plan.as_str(), status)).or_default() += 1;
    }
    for ((plan, status), n) in counts {
        let labels = [
            ("plan", plan.to_owned()),
            ("subscription", status.to_owned()),
        ];
        metrics::gauge!(names::ACCOUNTS, &labels).set(n as f64);
    }
}

/// Sets [`names::MEMORIES_LIVE`] for every plan (0 included, so each series exists) from
/// each account's live-memory count and each account's plan.
///
/// Cheap by construction: the memory store keeps one count per account (the quota's
/// "used", updated in the write transaction) and the key store one plan per account, so a
/// scrape reads two small tables, O(accounts), and never visits a memory. The count is the
/// quota's: an expired memory counts until its account's next read reaps it. An account
/// without a record (none is made without one) counts as `free`, the default plan.
pub fn memories_by_plan(counts: &[(String, u64)], plans: &HashMap<String, Plan>) {
    let mut by_plan = [(Plan::Free, 0u64), (Plan::Liftoff, 0), (Plan::Lightyear, 0)];
    for (account, count) in counts {
        let plan = plans.get(account).copied().unwrap_or_default();
        if let Some((_, sum)) = by_plan.iter_mut().find(|(p, _)| *p == plan) {
            *sum += count;
        }
    }
    for (plan, sum) in by_plan {
        metrics::gauge!(names::MEMORIES_LIVE, "plan" => plan.as_str()).set(sum as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::reembed::ReembedState;
    use crate::metrics::testing::capture;

    #[test]
    fn a_reembedding_sets_its_counts_and_one_state() {
        let report = ReembedReport {
            state: ReembedState::Running,
            from: "a".into(),
            to: "b".into(),
            done: 40,
            total: 100,
            error: None,
        };
        let ((), got) = capture(|| reembed(Some(&report)));
        let got = got.snapshot();
        let vectors = |part| got.gauge(names::REEMBED_VECTORS, &[("part", part)]);
        assert_eq!((vectors("done"), vectors("all")), (Some(40.0), Some(100.0)));
        let state = |s| got.gauge(names::REEMBED_STATE, &[("state", s)]);
        assert_eq!((state("running"), state("pending")), (Some(1.0), Some(0.0)));
        let ((), none) = capture(|| reembed(None));
        assert_eq!(
            none.snapshot()
                .gauge(names::REEMBED_STATE, &[("state", "running")]),
            None
        );
    }

    #[test]
    fn memories_are_summed_per_plan_with_every_plan_present() {
        let counts = [
            ("a".to_string(), 3),
            ("b".to_string(), 4),
            ("c".to_string(), 10),
            ("orphan".to_string(), 1),
        ];
        let plans = HashMap::from([
            ("a".to_string(), Plan::Lightyear),
            ("b".to_string(), Plan::Lightyear),
            ("c".to_string(), Plan::Free),
        ]);
        let ((), got) = capture(|| memories_by_plan(&counts, &plans));
        let got = got.snapshot();
        let plan = |p| got.gauge(names::MEMORIES_LIVE, &[("plan", p)]);
        assert_eq!(plan("free"), Some(11.0));
        assert_eq!(plan("liftoff"), Some(0.0));
        assert_eq!(plan("lightyear"), Some(7.0));
        assert_eq!(got.series(names::MEMORIES_LIVE), 3);
    }

    #[test]
    fn accounts_are_counted_by_plan_and_subscription() {
        let plans = HashMap::from([
            ("a".to_string(), Plan::Lightyear),
            ("b".to_string(), Plan::Lightyear),
            ("c".to_string(), Plan::Free),
        ]);
        let subscriptions = HashMap::from([
            ("a".to_string(), "active".to_string()),
            ("c".to_string(), "canceled".to_string()),
        ]);
        let ((), got) = capture(|| accounts_by_plan(&plans, &subscriptions));
        let got = got.snapshot();
        let n = |plan, subscription| {
            got.gauge(
                names::ACCOUNTS,
                &[("plan", plan), ("subscription", subscription)],
            )
        };
        assert_eq!(n("lightyear", "active"), Some(1.0));
        assert_eq!(n("lightyear", "none"), Some(1.0));
        assert_eq!(n("free", "canceled"), Some(1.0));
        assert_eq!(n("free", "none"), Some(0.0));
        assert_eq!(n("liftoff", "none"), Some(0.0));
    }

    #[test]
    fn live_agents_are_a_gauge() {
        let ((), got) = capture(|| agents_live(3, 2));
        let got = got.snapshot();
        assert_eq!(got.gauge(names::AGENTS_LIVE, &[]), Some(3.0));
        assert_eq!(got.gauge(names::AGENTS_PARKED, &[]), Some(2.0));
    }
}
