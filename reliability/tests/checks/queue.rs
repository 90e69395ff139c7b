use wharf_reliability::Verdict;
use wharf_reliability::checks::queue::UnexpectedWhy;
use wharf_reliability::event::Outcome;

use crate::support::{
    PARTITION_0, PARTITION_1, clean, deliver, produce, report, with_log, with_logs,
};

#[test]
fn the_clean_history_is_valid_and_counted_as_written() {
    let report = report(clean());
    let queue = &report.findings.queue;
    assert_eq!(report.verdict, Verdict::Valid, "{:?}", report.reasons);
    assert_eq!(
        (
            queue.attempts,
            queue.acknowledged,
            queue.failed,
            queue.unknown
        ),
        (7, 5, 1, 1)
    );
    assert_eq!(queue.recovered.first, ["p1-1"]);
    assert_eq!(queue.lost.count + queue.per_node_lost.count, 0);
    assert_eq!(queue.unexpected.count + queue.duplicated.count, 0);
}

#[test]
fn an_acknowledged_value_missing_from_every_drain_is_lost() {
    let report = report(with_logs(clean(), 0, &PARTITION_0[..2]));
    let queue = &report.findings.queue;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(queue.lost.count, 1);
    assert_eq!(queue.lost.first[0].value, "p0-2");
    assert_eq!(queue.lost.first[0].offset, Some(2));
    assert_eq!(
        queue.per_node_lost.count, 3,
        "lost on each of the three nodes"
    );
}

#[test]
fn an_acknowledged_value_missing_on_one_node_is_lost_on_that_node_only() {
    let report = report(with_log(clean(), 3, 0, &PARTITION_0[..2]));
    let queue = &report.findings.queue;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(queue.lost.count, 0);
    assert_eq!(queue.per_node_lost.count, 1);
    assert_eq!(queue.per_node_lost.first[0].node, 3);
    assert_eq!(queue.per_node_lost.first[0].value, "p0-2");
    assert_eq!(report.reasons, ["1 acknowledged values missing on a node"]);
}

#[test]
fn a_delivered_value_nobody_produced_is_unexpected() {
    let mut events = clean();
    events.push(deliver("ghost", (0, 9), 1, 3000));
    let report = report(events);
    let unexpected = &report.findings.queue.unexpected;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(unexpected.count, 1);
    assert_eq!(unexpected.first[0].value, "ghost");
    assert_eq!(unexpected.first[0].why, UnexpectedWhy::NeverAttempted);
}

#[test]
fn a_drained_value_whose_produce_was_refused_is_unexpected() {
    let log = [PARTITION_1.as_slice(), &["p1-2"]].concat();
    let report = report(with_logs(clean(), 1, &log));
    let unexpected = &report.findings.queue.unexpected;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(unexpected.count, 1);
    assert_eq!(unexpected.first[0].value, "p1-2");
    assert_eq!(unexpected.first[0].why, UnexpectedWhy::Failed);
    assert_eq!(
        (unexpected.first[0].partition, unexpected.first[0].offset),
        (1, 3)
    );
}

#[test]
fn a_value_at_two_offsets_is_a_duplicate_which_at_least_once_allows() {
    let log = [PARTITION_0.as_slice(), &["p0-2"]].concat();
    let report = report(with_logs(clean(), 0, &log));
    let queue = &report.findings.queue;
    assert_eq!(report.verdict, Verdict::Valid, "{:?}", report.reasons);
    assert_eq!(queue.duplicated.count, 1);
    assert_eq!(queue.duplicated.first[0].value, "p0-2");
    assert_eq!(queue.duplicated.first[0].offsets, [2, 3]);
    assert!((queue.duplicated_rate - 1.0 / 6.0).abs() < 1e-9);
}

#[test]
fn an_unknown_write_absent_from_the_log_is_neither_lost_nor_recovered() {
    let mut events = clean();
    events.push(produce(1, "p1-4", None, None, (1300, 2300), Outcome::Info));
    let report = report(events);
    let queue = &report.findings.queue;
    assert_eq!(report.verdict, Verdict::Valid, "{:?}", report.reasons);
    assert_eq!(queue.unknown, 2);
    assert_eq!(queue.recovered.first, ["p1-1"]);
    assert_eq!(queue.lost.count, 0);
}
