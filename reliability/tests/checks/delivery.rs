use wharf_reliability::Verdict;

use crate::support::{clean, deliver, report};

#[test]
fn the_clean_history_redelivers_only_before_a_confirmed_ack() {
    assert_eq!(report(clean()).findings.delivered_after_ack.count, 0);
}

#[test]
fn a_delivery_after_its_ack_was_confirmed_is_reported() {
    let mut events = clean();
    events.push(deliver("p0-0", (0, 0), 2, 200));
    let report = report(events);
    let late = &report.findings.delivered_after_ack;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(report.reasons, ["1 deliveries after a confirmed ack"]);
    assert_eq!(late.count, 1);
    assert_eq!(
        (late.first[0].value.as_str(), late.first[0].attempt),
        ("p0-0", 2)
    );
    assert_eq!(
        (late.first[0].received_ms, late.first[0].ack_confirmed_ms),
        (200, 105)
    );
}

#[test]
fn a_delivery_while_the_ack_is_in_flight_is_allowed() {
    let mut events = clean();
    events.push(deliver("p0-0", (0, 0), 2, 104));
    assert_eq!(report(events).verdict, Verdict::Valid);
}
