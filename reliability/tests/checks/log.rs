use wharf_reliability::Verdict;

use crate::support::{clean, report, with_records};

#[test]
fn the_clean_history_passes_every_log_check() {
    assert_eq!(report(clean()).findings.log.failures(), 0);
}

#[test]
fn two_values_read_at_one_offset_of_one_node_are_a_conflict() {
    let records = [(0, "p0-0"), (1, "p0-1"), (2, "p0-2"), (2, "p0-1")];
    let report = report(with_records(clean(), 2, 0, &records));
    let conflicts = &report.findings.log.conflicts;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(conflicts.count, 1);
    let conflict = &conflicts.first[0];
    assert_eq!(
        (conflict.node, conflict.partition, conflict.offset),
        (2, 0, 2)
    );
    assert_eq!(
        (conflict.first.as_str(), conflict.second.as_str()),
        ("p0-2", "p0-1")
    );
}

#[test]
fn a_drain_read_out_of_offset_order_is_reported() {
    let records = [(0, "p0-0"), (2, "p0-2"), (1, "p0-1")];
    let report = report(with_records(clean(), 2, 0, &records));
    let out_of_order = &report.findings.log.out_of_order;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(report.findings.log.failures(), 1);
    assert_eq!(out_of_order.count, 1);
    assert_eq!(
        (out_of_order.first[0].previous, out_of_order.first[0].next),
        (2, 1)
    );
}

#[test]
fn a_missing_offset_between_drained_offsets_is_a_hole() {
    let report = report(with_records(clean(), 2, 1, &[(0, "p1-0"), (2, "p1-3")]));
    let holes = &report.findings.log.holes;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(report.findings.log.failures(), 1);
    assert_eq!(holes.count, 1);
    assert_eq!((holes.first[0].node, holes.first[0].partition), (2, 1));
    assert_eq!((holes.first[0].from, holes.first[0].to), (1, 1));
    assert_eq!(
        report.findings.queue.per_node_lost.count, 0,
        "the hole held an unacknowledged value"
    );
}
