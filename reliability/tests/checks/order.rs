use wharf_reliability::Verdict;

use crate::support::{clean, report, with_logs, with_produce};

/// The clean history with `p0-1` and `p0-2` swapped in partition 0's log and in their replies.
fn swapped(second_invoked_at: u64) -> Vec<wharf_reliability::Event> {
    let events = with_logs(clean(), 0, &["p0-0", "p0-2", "p0-1"]);
    let events = with_produce(events, "p0-1", |produce| produce.offset = Some(2));
    with_produce(events, "p0-2", |produce| {
        produce.offset = Some(1);
        produce.invoke_ms = second_invoked_at;
    })
}

#[test]
fn the_clean_history_keeps_each_key_in_order() {
    assert_eq!(report(clean()).findings.order.count, 0);
}

#[test]
fn a_later_write_of_a_key_landing_before_an_earlier_one_is_a_violation() {
    let report = report(swapped(50));
    let order = &report.findings.order;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(report.reasons, ["1 per-key order violations"]);
    assert_eq!(order.count, 1);
    assert_eq!(
        (order.first[0].process, order.first[0].key.as_str()),
        (0, "k0")
    );
    assert_eq!(order.first[0].earlier.value, "p0-1");
    assert_eq!(
        (
            order.first[0].later.value.as_str(),
            order.first[0].later.offset
        ),
        ("p0-2", 1)
    );
}

#[test]
fn concurrent_writes_of_a_key_may_land_in_either_order() {
    let report = report(swapped(35));
    assert_eq!(report.verdict, Verdict::Valid, "{:?}", report.reasons);
}

#[test]
fn a_later_write_of_a_key_in_another_partition_is_a_violation() {
    let events = with_logs(clean(), 0, &["p0-0", "p0-1"]);
    let events = with_logs(events, 1, &["p1-0", "p1-1", "p1-3", "p0-2"]);
    let events = with_produce(events, "p0-2", |produce| {
        produce.partition = Some(1);
        produce.offset = Some(3);
    });
    let report = report(events);
    assert_eq!(report.reasons, ["1 per-key order violations"]);
    assert_eq!(report.findings.order.first[0].later.partition, 1);
}

#[test]
fn a_retried_write_counts_as_invoked_at_its_first_attempt() {
    // p0-2 was first sent at 25, before p0-1 completed (40); its retry at 50 was answered
    // with the place the first attempt stored it at, before p0-1's.
    let mut events = swapped(50);
    events.insert(
        1,
        crate::support::produce(
            0,
            "p0-2",
            Some("k0"),
            None,
            (25, 29),
            wharf_reliability::event::Outcome::Info,
        ),
    );
    let report = report(events);
    assert_eq!(
        report.findings.order.count, 0,
        "{:?}",
        report.findings.order
    );
}
