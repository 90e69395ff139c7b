//! [`PerMinuteRate`]: a cumulative counter (dead letters, produce errors) turned into the
//! count of its last minute, the value of the `dead_letters` and `produce_errors` kinds.

use std::collections::VecDeque;

/// The window a rate counts over, in ms: the kinds are "per minute".
pub(crate) const RATE_WINDOW_MS: u64 = 60_000;
/// Closest spacing of the samples kept, in ms. A sample closer than this to the last one kept
/// updates the current total only, so the history holds at most
/// `RATE_WINDOW_MS / RATE_RESOLUTION_MS + 2` samples however often the caller samples, and
/// the window is at most this much longer than a minute.
pub(crate) const RATE_RESOLUTION_MS: u64 = 1_000;
/// Most samples a [`PerMinuteRate`] holds (see [`RATE_RESOLUTION_MS`]).
pub(crate) const MAX_RATE_SAMPLES: usize = (RATE_WINDOW_MS / RATE_RESOLUTION_MS) as usize + 2;

/// The increase of a cumulative counter over the last minute, from samples `(steady ms,
/// total)`. The count is measured from the newest kept sample at least a minute old (so over
/// 60 to 61 s); until a minute has been sampled, from the first sample.
#[derive(Debug, Clone, Default)]
pub struct PerMinuteRate {
    /// Samples at least [`RATE_RESOLUTION_MS`] apart; the front is the baseline.
    kept: VecDeque<(u64, u64)>,
    /// The newest sample.
    latest: Option<(u64, u64)>,
}

impl PerMinuteRate {
    /// No samples yet.
    pub fn new() -> Self {
        PerMinuteRate::default()
    }

    /// Takes the counter's `total` at steady `now_ms` and returns its increase over the last
    /// minute. A sample older than the newest is ignored. A total below the previous one (the
    /// counter restarted, say with a recreated topic) starts over from 0 at the previous
    /// sample's time: what it counts happened since then.
    pub fn observe(&mut self, now_ms: u64, total: u64) -> u64 {
        if let Some((latest_ms, latest_total)) = self.latest {
            if now_ms < latest_ms {
                return self.count();
            }
            if total < latest_total {
                self.kept.clear();
                self.kept.push_back((latest_ms, 0));
            }
        }
        self.latest = Some((now_ms, total));
        let spaced = self
            .kept
            .back()
            .is_none_or(|&(kept_ms, _)| now_ms - kept_ms >= RATE_RESOLUTION_MS);
        if spaced {
            self.kept.push_back((now_ms, total));
        }
        let window_start = now_ms.saturating_sub(RATE_WINDOW_MS);
        while self.kept.get(1).is_some_and(|&(at, _)| at <= window_start) {
            self.kept.pop_front();
        }
        debug_assert!(self.kept.len() <= MAX_RATE_SAMPLES, "{}", self.kept.len());
        self.count()
    }

    fn count(&self) -> u64 {
        match (self.kept.front(), self.latest) {
            (Some(&(_, baseline)), Some((_, latest))) => latest.saturating_sub(baseline),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::collection::vec;
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn the_count_covers_the_last_minute_and_forgets_what_came_before() {
        let mut rate = PerMinuteRate::new();
        assert_eq!(rate.observe(0, 100), 0);
        assert_eq!(
            rate.observe(10_000, 130),
            30,
            "less than a minute: since the first"
        );
        assert_eq!(rate.observe(60_000, 150), 50);
        assert_eq!(rate.observe(70_000, 150), 20, "the first 30 fell out");
        assert_eq!(rate.observe(130_000, 150), 0);
    }

    #[test]
    fn a_restarted_counter_counts_from_zero_and_a_stale_sample_changes_nothing() {
        let mut rate = PerMinuteRate::new();
        rate.observe(0, 1_000);
        assert_eq!(rate.observe(5_000, 1_010), 10);
        assert_eq!(rate.observe(6_000, 4), 4, "restarted at 5 s: 4 since");
        assert_eq!(rate.observe(5_500, 999), 4, "stale");
        assert_eq!(rate.observe(7_000, 9), 9);
    }

    #[test]
    fn samples_every_millisecond_stay_within_the_bound() {
        let mut rate = PerMinuteRate::new();
        for now in 0..200_000 {
            rate.observe(now, now);
        }
        assert!(rate.kept.len() <= MAX_RATE_SAMPLES);
        let count = rate.observe(200_000, 200_000);
        assert!((RATE_WINDOW_MS..=RATE_WINDOW_MS + RATE_RESOLUTION_MS).contains(&count));
    }

    /// The total at the newest sample at or before `at`, else the first sample's.
    fn total_at(samples: &[(u64, u64)], at: u64) -> u64 {
        samples
            .iter()
            .rev()
            .find(|(t, _)| *t <= at)
            .unwrap_or(&samples[0])
            .1
    }

    proptest! {
        #[test]
        fn the_count_lies_between_the_last_60_and_61_seconds_of_a_full_history(
            steps in vec((0_u64..3_000, 0_u64..50), 1..300),
        ) {
            let mut rate = PerMinuteRate::new();
            let mut samples = Vec::new();
            let (mut now, mut total) = (0, 0);
            for (pause, added) in steps {
                now += pause;
                total += added;
                samples.push((now, total));
                let count = rate.observe(now, total);
                let ideal = samples
                    .iter()
                    .rev()
                    .find(|(t, _)| *t + RATE_WINDOW_MS <= now)
                    .map_or(samples[0].0, |(t, _)| *t);
                let shortest = total - total_at(&samples, ideal);
                let longest = total - samples
                    .iter()
                    .find(|(t, _)| *t + RATE_RESOLUTION_MS > ideal)
                    .map_or(0, |(_, total)| *total);
                prop_assert!(
                    (shortest..=longest).contains(&count),
                    "{count} not in {shortest}..={longest} at {now}"
                );
            }
        }
    }
}
