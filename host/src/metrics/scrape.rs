//! Gauges set when `/metrics` is scraped, from figures the services already keep: nothing
//! is tracked on the hot paths for them, and they are exact at the moment of the scrape.

use std::collections::HashMap;

use super::names;
use crate::accounts::Plan;

/// Sets [`names::AGENTS_LIVE`] and [`names::AGENTS_PARKED`]: the agents spawning or
/// running now in an instance, and those hibernated.
pub fn agents_live(live: u32, parked: u32) {
    metrics::gauge!(names::AGENTS_LIVE).set(live);
    metrics::gauge!(names::AGENTS_PARKED).set(parked);
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
    use crate::metrics::testing::capture;

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
    fn live_agents_are_a_gauge() {
        let ((), got) = capture(|| agents_live(3, 2));
        let got = got.snapshot();
        assert_eq!(got.gauge(names::AGENTS_LIVE, &[]), Some(3.0));
        assert_eq!(got.gauge(names::AGENTS_PARKED, &[]), Some(2.0));
    }
}
