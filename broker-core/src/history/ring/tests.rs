use std::collections::BTreeMap;

use proptest::collection::vec;
use proptest::prelude::*;

use super::*;
use crate::history::aggregator::{SubscriptionAggregator, TopicAggregator};
use crate::history::retention::{DEFAULT_RETENTION_MINUTES, MAX_RETENTION_MINUTES};

fn retention(minutes: u64) -> RetentionMinutes {
    RetentionMinutes::new(minutes).expect("a valid retention")
}

fn record(minute: u64, value: u64) -> SubscriptionMinute {
    MinuteRecord {
        minute,
        counters: [value, value + 1, value + 2, value + 3],
        gauges: [
            GaugeMinute::of(value),
            GaugeMinute {
                last: 1,
                max: value + 1,
            },
        ],
    }
}

fn minutes<'a>(records: impl Iterator<Item = &'a SubscriptionMinute>) -> Vec<u64> {
    records.map(|record| record.minute).collect()
}

#[test]
fn a_gap_leaves_empty_minutes_that_the_range_skips() {
    let mut ring = SubscriptionRing::new(retention(60));
    for minute in [100, 101, 105] {
        ring.insert(record(minute, minute)).expect("kept");
    }
    assert_eq!(ring.get(102), None);
    assert_eq!(ring.get(105), Some(&record(105, 105)));
    let present = ring.range(99, 110).expect("a valid range");
    assert_eq!(minutes(present), [100, 101, 105]);
    let half_open = ring.range(101, 105).expect("a valid range");
    assert_eq!(minutes(half_open), [101], "to_minute is not included");
}

#[test]
fn a_record_retention_minutes_newer_evicts_the_oldest() {
    let mut ring = SubscriptionRing::new(retention(60));
    for minute in 0..60 {
        ring.insert(record(minute, minute)).expect("kept");
    }
    assert_eq!(ring.oldest_kept(), Some(0));
    ring.insert(record(60, 7)).expect("kept");
    assert_eq!(ring.get(0), None, "minute 0's slot now holds minute 60");
    assert_eq!(ring.get(60), Some(&record(60, 7)));
    assert_eq!(ring.oldest_kept(), Some(1));
    assert_eq!(
        minutes(ring.range(0, 61).expect("valid")),
        (1..=60).collect::<Vec<_>>()
    );
    ring.insert(record(200, 1))
        .expect("a jump past the whole retention");
    assert_eq!(minutes(ring.range(0, 201).expect("valid")), [200]);
}

#[test]
fn the_oldest_minute_kept_is_accepted_and_the_one_before_refused() {
    let mut ring = SubscriptionRing::new(retention(60));
    ring.insert(record(1_000, 1)).expect("kept");
    ring.insert(record(941, 2))
        .expect("the oldest kept: 1000 + 1 - 60");
    assert_eq!(
        ring.insert(record(940, 3)),
        Err(HistoryError::MinuteExpired {
            minute: 940,
            oldest_kept: 941
        })
    );
    ring.insert(record(941, 4)).expect("a minute replaced");
    assert_eq!(ring.get(941), Some(&record(941, 4)));
    assert_eq!(ring.get(1_000), Some(&record(1_000, 1)), "untouched");
}

#[test]
fn a_minute_past_the_last_there_is_is_refused() {
    let mut ring = TopicRing::new(retention(60));
    ring.insert(MinuteRecord::starting(MAX_MINUTE, [0]))
        .expect("the last minute");
    assert_eq!(
        ring.insert(MinuteRecord::starting(MAX_MINUTE + 1, [0])),
        Err(HistoryError::MinuteOutOfRange {
            minute: MAX_MINUTE + 1,
            max: MAX_MINUTE
        })
    );
}

#[test]
fn a_range_of_max_query_minutes_is_answered_and_wider_or_reversed_refused() {
    let mut ring = SubscriptionRing::new(retention(MAX_RETENTION_MINUTES));
    for minute in 0..=MAX_QUERY_MINUTES {
        ring.insert(record(minute, minute)).expect("kept");
    }
    let widest = ring.range(0, MAX_QUERY_MINUTES).expect("the widest range");
    assert_eq!(widest.count() as u64, MAX_QUERY_MINUTES);
    assert!(matches!(
        ring.range(0, MAX_QUERY_MINUTES + 1),
        Err(HistoryError::RangeTooWide { minutes, max: MAX_QUERY_MINUTES })
            if minutes == MAX_QUERY_MINUTES + 1
    ));
    assert!(matches!(
        ring.range(5, 4),
        Err(HistoryError::RangeReversed { from: 5, to: 4 })
    ));
    assert_eq!(ring.range(5, 5).expect("empty").count(), 0);
}

#[test]
fn an_empty_ring_takes_no_slots_and_answers_nothing() {
    let ring = SubscriptionRing::new(RetentionMinutes::default());
    assert_eq!(ring.slots.capacity(), 0);
    assert_eq!(ring.allocated_bytes(), size_of::<SubscriptionRing>());
    assert_eq!((ring.newest_minute(), ring.oldest_kept()), (None, None));
    assert_eq!(ring.get(0), None);
    assert_eq!(ring.range(0, 10).expect("valid").count(), 0);
}

#[test]
fn the_memory_figures_in_the_rustdoc_are_the_types_sizes() {
    assert_eq!(DEFAULT_RETENTION_MINUTES, 10_080);
    assert_eq!(size_of::<TopicMinute>(), 64);
    assert_eq!(size_of::<SubscriptionMinute>(), 72);
    assert_eq!(size_of::<TopicRing>(), 48);
    assert_eq!(size_of::<SubscriptionRing>(), 48);
    assert_eq!(size_of::<TopicAggregator>(), 128);
    assert_eq!(size_of::<SubscriptionAggregator>(), 128);
    let default = RetentionMinutes::default();
    assert_eq!(TopicRing::memory_bytes(default), 645_120 + 48);
    assert_eq!(SubscriptionRing::memory_bytes(default), 725_760 + 48);
    let month = retention(MAX_RETENTION_MINUTES);
    assert_eq!(SubscriptionRing::memory_bytes(month), 3_214_080 + 48);
    let mut ring = SubscriptionRing::new(default);
    ring.insert(record(5, 5)).expect("kept");
    assert_eq!(ring.slots.len() as u64, DEFAULT_RETENTION_MINUTES);
    assert_eq!(
        ring.allocated_bytes(),
        SubscriptionRing::memory_bytes(default)
    );
    for minute in 6..6 + 2 * DEFAULT_RETENTION_MINUTES {
        ring.insert(record(minute, minute)).expect("kept");
    }
    assert_eq!(
        ring.allocated_bytes(),
        SubscriptionRing::memory_bytes(default),
        "twice the retention later, no more"
    );
}

/// One step of the ring's property test.
#[derive(Debug, Clone)]
enum Op {
    Insert { minute: u64, value: u64 },
    Get { minute: u64 },
    Range { from: u64, to: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0_u64..600, 0_u64..1_000).prop_map(|(minute, value)| Op::Insert { minute, value }),
        1 => (0_u64..650).prop_map(|minute| Op::Get { minute }),
        1 => (0_u64..650, 0_u64..2_200).prop_map(|(from, to)| Op::Range { from, to }),
    ]
}

/// The ring's model: every record kept, by minute, pruned to the retention after each insert.
struct Model {
    retention: u64,
    records: BTreeMap<u64, SubscriptionMinute>,
}

impl Model {
    fn oldest_kept(&self) -> Option<u64> {
        let newest = *self.records.keys().next_back()?;
        Some((newest + 1).saturating_sub(self.retention))
    }

    fn insert(&mut self, record: SubscriptionMinute) -> Result<(), HistoryError> {
        if let Some(oldest_kept) = self.oldest_kept().filter(|&oldest| record.minute < oldest) {
            return Err(HistoryError::MinuteExpired {
                minute: record.minute,
                oldest_kept,
            });
        }
        self.records.insert(record.minute, record);
        let oldest_kept = self.oldest_kept().unwrap_or(0);
        self.records.retain(|&minute, _| minute >= oldest_kept);
        Ok(())
    }

    fn range(&self, from: u64, to: u64) -> Result<Vec<SubscriptionMinute>, HistoryError> {
        if to < from {
            return Err(HistoryError::RangeReversed { from, to });
        }
        if to - from > MAX_QUERY_MINUTES {
            return Err(HistoryError::RangeTooWide {
                minutes: to - from,
                max: MAX_QUERY_MINUTES,
            });
        }
        Ok(self
            .records
            .range(from..to)
            .map(|(_, record)| *record)
            .collect())
    }
}

proptest! {
    #[test]
    fn the_ring_answers_as_a_map_of_the_newest_retention_minutes(
        retention_minutes in 60_u64..75,
        base in prop_oneof![Just(0_u64), Just(29_600_000_u64)],
        ops in vec(op(), 1..300),
    ) {
        let mut ring = SubscriptionRing::new(retention(retention_minutes));
        let mut model = Model { retention: retention_minutes, records: BTreeMap::new() };
        for op in ops {
            match op {
                Op::Insert { minute, value } => {
                    let record = record(base + minute, value);
                    prop_assert_eq!(ring.insert(record), model.insert(record));
                }
                Op::Get { minute } => {
                    prop_assert_eq!(ring.get(base + minute), model.records.get(&(base + minute)));
                }
                Op::Range { from, to } => {
                    let answer = ring.range(base + from, base + to).map(|records| records.copied().collect::<Vec<_>>());
                    prop_assert_eq!(answer, model.range(base + from, base + to));
                }
            }
            prop_assert_eq!(ring.newest_minute(), model.records.keys().next_back().copied());
            prop_assert_eq!(ring.oldest_kept(), model.oldest_kept());
        }
    }
}
