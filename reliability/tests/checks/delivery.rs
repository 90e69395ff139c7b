use wharf_reliability::{Event, Verdict};

use crate::support::{clean, deliver, report};

#[test]
fn the_clean_history_redelivers_only_before_a_confirmed_ack() {
    assert_eq!(report(clean()).findings.delivered_after_ack.late.count, 0);
}

#[test]
fn a_delivery_after_its_ack_was_confirmed_is_reported() {
    let mut events = clean();
    events.push(deliver("p0-0", (0, 0), 2, 200));
    let report = report(events);
    let late = &report.findings.delivered_after_ack.late;
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

#[test]
fn a_delivery_whose_receive_was_sent_after_the_ack_was_confirmed_is_reported() {
    let mut events = clean();
    events.push(deliver_sent("p0-0", 106, 300));
    let report = report(events);
    assert_eq!(report.findings.delivered_after_ack.late.count, 1);
    assert_eq!(report.findings.delivered_after_ack.in_flight.count, 0);
    assert_eq!(report.verdict, Verdict::Invalid);
}

#[test]
fn a_delivery_whose_receive_was_in_flight_when_the_ack_was_confirmed_is_counted_apart() {
    let mut events = clean();
    events.push(deliver_sent("p0-0", 105, 300));
    let report = report(events);
    assert_eq!(report.findings.delivered_after_ack.late.count, 0);
    let in_flight = &report.findings.delivered_after_ack.in_flight;
    assert_eq!(in_flight.count, 1);
    assert_eq!(in_flight.first[0].receive_invoke_ms, Some(105));
    assert_eq!(report.verdict, Verdict::Valid, "{:?}", report.reasons);
}

/// A second delivery of `value` at (0, 0) whose receive was sent at `sent_ms`.
fn deliver_sent(value: &str, sent_ms: u64, received_ms: u64) -> Event {
    let mut event = deliver(value, (0, 0), 2, received_ms);
    if let Event::Deliver(deliver) = &mut event {
        deliver.receive_invoke_ms = Some(sent_ms);
    }
    event
}
