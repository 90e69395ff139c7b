use super::*;
use crate::history::record::{GaugeMinute, SubscriptionMinute, TopicMinute};
use crate::history::retention::RetentionMinutes;

fn topic(minutes: &[(u64, u64, u64)]) -> TopicRing {
    let mut ring = TopicRing::new(RetentionMinutes::default());
    for &(minute, produced, consumed) in minutes {
        let record = TopicMinute {
            minute,
            counters: [produced, 1_000 * produced, consumed, 1_000 * consumed, 0],
            gauges: [GaugeMinute::of(0)],
        };
        ring.insert(record).expect("kept");
    }
    ring
}

fn subscription(minutes: &[(u64, u64)]) -> SubscriptionRing {
    let mut ring = SubscriptionRing::new(RetentionMinutes::default());
    for &(minute, backlog) in minutes {
        let record = SubscriptionMinute {
            minute,
            counters: [0; 4],
            gauges: [
                GaugeMinute {
                    last: backlog,
                    max: backlog + 50,
                },
                GaugeMinute::of(0),
            ],
        };
        ring.insert(record).expect("kept");
    }
    ring
}

fn query(by: RankBy, window_minutes: u64, n: usize) -> RankingQuery {
    RankingQuery::new(by, window_minutes, n).expect("a valid query")
}

fn ranked<'a>(entries: &[(&'a str, u64)]) -> Vec<Ranked<'a>> {
    entries
        .iter()
        .map(|&(name, value)| Ranked { name, value })
        .collect()
}

#[test]
fn topics_rank_by_the_messages_summed_over_the_window_only() {
    let orders = topic(&[(100, 500, 1), (108, 10, 2), (109, 20, 3), (110, 30, 4)]);
    let audit = topic(&[(109, 5, 90), (110, 5, 90)]);
    let idle = topic(&[(50, 1_000, 1_000)]);
    let series = [("orders", &orders), ("audit", &audit), ("idle", &idle)];
    assert_eq!(
        top(series, &query(RankBy::Produced, 3, 10), 110),
        ranked(&[("orders", 60), ("audit", 10)]),
        "minutes 108..=110; minute 100 and the idle topic fall outside"
    );
    assert_eq!(
        top(series, &query(RankBy::Consumed, 3, 10), 110),
        ranked(&[("audit", 180), ("orders", 9)])
    );
    assert_eq!(
        top(series, &query(RankBy::Backlog, 3, 10), 110),
        ranked(&[]),
        "topics have no backlog"
    );
}

#[test]
fn subscriptions_rank_by_the_backlog_of_the_newest_minute_in_the_window() {
    let billing = subscription(&[(100, 900), (105, 40)]);
    let shipping = subscription(&[(104, 70), (106, 1_000)]);
    let series = [("orders/billing", &billing), ("orders/shipping", &shipping)];
    assert_eq!(
        top(series, &query(RankBy::Backlog, 10, 5), 105),
        ranked(&[("orders/shipping", 70), ("orders/billing", 40)]),
        "minute 106 is after the window; the last value, not the largest, counts"
    );
    assert_eq!(
        top(series, &query(RankBy::Produced, 10, 5), 105),
        ranked(&[])
    );
}

#[test]
fn equal_values_are_ordered_by_name_and_n_keeps_the_first() {
    let same = topic(&[(10, 7, 0)]);
    let more = topic(&[(10, 8, 0)]);
    let series = [("c", &same), ("a", &same), ("z", &more), ("b", &same)];
    assert_eq!(
        top(series, &query(RankBy::Produced, 1, 3), 10),
        ranked(&[("z", 8), ("a", 7), ("b", 7)])
    );
    let reversed = [("b", &same), ("z", &more), ("a", &same), ("c", &same)];
    assert_eq!(
        top(reversed, &query(RankBy::Produced, 1, 3), 10),
        top(series, &query(RankBy::Produced, 1, 3), 10)
    );
}

#[test]
fn a_series_with_zero_in_the_window_is_ranked_and_one_without_records_is_not() {
    let quiet = topic(&[(10, 0, 0)]);
    let unknown = topic(&[]);
    let series = [("quiet", &quiet), ("unknown", &unknown)];
    assert_eq!(
        top(series, &query(RankBy::Produced, 5, 10), 10),
        ranked(&[("quiet", 0)])
    );
}

#[test]
fn the_window_and_n_accept_their_bounds_and_refuse_one_past_each() {
    for (window, n) in [(MIN_WINDOW_MINUTES, 1), (MAX_WINDOW_MINUTES, MAX_TOP_N)] {
        let query = RankingQuery::new(RankBy::Backlog, window, n).expect("within the bounds");
        assert_eq!(
            (query.by(), query.window_minutes(), query.n()),
            (RankBy::Backlog, window, n)
        );
    }
    for window in [MIN_WINDOW_MINUTES - 1, MAX_WINDOW_MINUTES + 1] {
        assert_eq!(
            RankingQuery::new(RankBy::Produced, window, 1),
            Err(HistoryError::WindowOutOfRange {
                value: window,
                min: 1,
                max: MAX_WINDOW_MINUTES
            })
        );
    }
    for n in [0, MAX_TOP_N + 1] {
        assert_eq!(
            RankingQuery::new(RankBy::Produced, 1, n),
            Err(HistoryError::TopOutOfRange {
                value: n,
                min: 1,
                max: MAX_TOP_N
            })
        );
    }
}

#[test]
fn the_widest_window_reaches_back_max_window_minutes_and_no_further() {
    let through = 10_000;
    let edge = topic(&[
        (through + 1 - MAX_WINDOW_MINUTES, 3, 0),
        (through - MAX_WINDOW_MINUTES, 100, 0),
    ]);
    assert_eq!(
        top(
            [("edge", &edge)],
            &query(RankBy::Produced, MAX_WINDOW_MINUTES, 1),
            through
        ),
        ranked(&[("edge", 3)])
    );
    let early = topic(&[(0, 4, 0)]);
    assert_eq!(
        top(
            [("early", &early)],
            &query(RankBy::Produced, MAX_WINDOW_MINUTES, 1),
            5
        ),
        ranked(&[("early", 4)]),
        "a window reaching before minute 0 starts at 0"
    );
}
