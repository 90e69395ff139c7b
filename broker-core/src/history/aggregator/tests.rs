use std::collections::BTreeMap;

use proptest::collection::vec;
use proptest::prelude::*;

use super::*;
use crate::history::MS_PER_MINUTE;
use crate::history::record::GaugeMinute;

/// One counter, one gauge.
type Aggregator = MinuteAggregator<1, 1>;

/// Observes an ordered sample; the closed record, if any, as (minute, increase, gauge).
fn observe(
    aggregator: &mut Aggregator,
    now_ms: u64,
    total: u64,
    gauge: u64,
) -> Option<(u64, u64, GaugeMinute)> {
    aggregator
        .observe(now_ms, [total], [gauge])
        .expect("an ordered sample")
        .map(|record| (record.minute, record.counters[0], record.gauges[0]))
}

fn gauge(last: u64, max: u64) -> GaugeMinute {
    GaugeMinute { last, max }
}

#[test]
fn a_counter_counts_its_increase_within_each_minute_from_the_first_sample() {
    let mut aggregator = Aggregator::new();
    assert_eq!(observe(&mut aggregator, 0, 100, 0), None, "the baseline");
    assert_eq!(observe(&mut aggregator, 30_000, 130, 0), None);
    assert_eq!(
        observe(&mut aggregator, 59_999, 150, 0),
        None,
        "still minute 0"
    );
    assert_eq!(
        observe(&mut aggregator, 60_000, 160, 0),
        Some((0, 50, gauge(0, 0))),
        "the first sample of minute 1 closes minute 0"
    );
    assert_eq!(
        aggregator.open_minute().map(|open| open.counters),
        Some([10]),
        "59 999 → 60 000 counts in minute 1"
    );
    assert_eq!(observe(&mut aggregator, 119_999, 175, 0), None);
    assert_eq!(
        observe(&mut aggregator, 120_000, 175, 0),
        Some((1, 25, gauge(0, 0)))
    );
}

#[test]
fn a_counter_that_goes_down_restarted_and_counts_from_zero() {
    let mut aggregator = Aggregator::new();
    observe(&mut aggregator, 1_000, 1_000, 0);
    observe(&mut aggregator, 2_000, 1_010, 0);
    observe(&mut aggregator, 3_000, 4, 0);
    observe(&mut aggregator, 4_000, 9, 0);
    assert_eq!(
        observe(&mut aggregator, 60_000, 9, 0),
        Some((0, 10 + 4 + 5, gauge(0, 0))),
        "10 before the restart, 4 at it, 5 after"
    );
    observe(&mut aggregator, 61_000, 0, 0);
    assert_eq!(
        observe(&mut aggregator, 120_000, 0, 0),
        Some((1, 0, gauge(0, 0))),
        "down to 0 counts 0"
    );
}

#[test]
fn a_minute_without_samples_has_no_record_and_the_next_sampled_minute_counts_the_gap() {
    let mut aggregator = Aggregator::new();
    observe(&mut aggregator, 10_000, 0, 4);
    observe(&mut aggregator, 20_000, 5, 6);
    assert_eq!(
        observe(&mut aggregator, 3 * MS_PER_MINUTE + 1, 35, 2),
        Some((0, 5, gauge(6, 6))),
        "minute 0 closes; minutes 1 and 2 were never sampled"
    );
    let closed = aggregator.close();
    assert_eq!(
        closed.map(|open| (open.minute, open.counters[0], open.gauges[0])),
        Some((3, 30, gauge(2, 2)))
    );
    assert_eq!(aggregator.open_minute(), None);
}

#[test]
fn a_gauge_keeps_the_last_and_largest_sample_of_its_minute() {
    let mut aggregator = Aggregator::new();
    for (now_ms, value) in [(0, 5), (10_000, 9), (50_000, 3)] {
        observe(&mut aggregator, now_ms, 0, value);
    }
    assert_eq!(
        observe(&mut aggregator, 60_000, 0, 1),
        Some((0, 0, gauge(3, 9)))
    );
    assert_eq!(
        observe(&mut aggregator, 120_000, 0, 0),
        Some((1, 0, gauge(1, 1))),
        "each minute starts afresh"
    );
}

#[test]
fn a_sample_older_than_the_previous_is_refused_and_changes_nothing() {
    let mut aggregator = Aggregator::new();
    observe(&mut aggregator, 5_000, 10, 1);
    assert_eq!(
        aggregator.observe(4_999, [1_000], [99]),
        Err(HistoryError::SampleOutOfOrder {
            previous_ms: 5_000,
            now_ms: 4_999
        })
    );
    assert_eq!(
        observe(&mut aggregator, 5_000, 12, 2),
        None,
        "the same time is in order"
    );
    assert_eq!(
        observe(&mut aggregator, 60_000, 12, 2),
        Some((0, 2, gauge(2, 2)))
    );
}

fn pause_ms() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 0_u64..20_000, 1 => 0_u64..200_000]
}

proptest! {
    #[test]
    fn records_hold_each_sampled_minutes_increase_and_gauges(
        steps in vec((pause_ms(), 0_u64..1_000, 0_u64..100), 1..300),
        start_ms in 0_u64..1_000_000,
    ) {
        let mut aggregator = SubscriptionAggregator::new();
        let mut samples = Vec::new();
        let mut records = Vec::new();
        let (mut now_ms, mut total) = (start_ms, 0);
        for (pause, added, gauge) in steps {
            now_ms += pause;
            total += added;
            samples.push((now_ms, total, gauge));
            let totals = [total, 2 * total, 3 * total, 4 * total];
            let closed = aggregator.observe(now_ms, totals, [gauge, 100 - gauge]);
            records.extend(closed.expect("in order"));
        }
        records.extend(aggregator.close());
        // The model, from the definition: a minute's increase is its last total less the last
        // total before it (the first sample's, for the first minute); its gauge is the last
        // and largest of its samples.
        let mut by_minute: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
        for &(at, total, gauge) in &samples {
            by_minute.entry(minute_of(at)).or_default().push((total, gauge));
        }
        let mut before = samples[0].1;
        let mut expected = Vec::new();
        for (minute, in_minute) in by_minute {
            let last_total = in_minute.last().map_or(before, |&(total, _)| total);
            let increase = last_total - before;
            before = last_total;
            let gauges = in_minute.iter().map(|&(_, gauge)| gauge);
            let last = gauges.clone().next_back().unwrap_or_default();
            let max = gauges.clone().max().unwrap_or_default();
            let min = gauges.min().unwrap_or_default();
            expected.push(MinuteRecord {
                minute,
                counters: [increase, 2 * increase, 3 * increase, 4 * increase],
                gauges: [
                    GaugeMinute { last, max },
                    GaugeMinute { last: 100 - last, max: 100 - min },
                ],
            });
        }
        prop_assert_eq!(records, expected);
    }
}
