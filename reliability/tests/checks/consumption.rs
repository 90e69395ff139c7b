use wharf_reliability::event::Outcome;
use wharf_reliability::{Event, Verdict};

use crate::support::{ack, clean, deliver, report};

/// The clean history consumed through `s` to the end: every acknowledged value delivered and
/// acked (`p1-0` twice already, after an ack that timed out).
fn consumed() -> Vec<Event> {
    let mut events = clean();
    if let Event::Run(run) = &mut events[0] {
        run.consumed_through = vec!["s".to_owned()];
    }
    for (value, at, time) in [
        ("p0-1", (0, 1), 2300),
        ("p0-2", (0, 2), 2310),
        ("p1-3", (1, 2), 2320),
    ] {
        events.push(deliver(value, at, 1, time));
        events.push(ack(value, (time + 1, time + 2), Outcome::Ok));
    }
    events
}

#[test]
fn a_history_that_delivered_every_acknowledged_value_is_valid_and_counts_redeliveries() {
    let report = report(consumed());
    let consumption = &report.findings.consumption;
    assert_eq!(report.verdict, Verdict::Valid, "{:?}", report.reasons);
    assert_eq!(consumption.undelivered.count, 0);
    assert_eq!(
        (
            consumption.deliveries,
            consumption.distinct,
            consumption.acked
        ),
        (6, 5, 5)
    );
    assert_eq!(consumption.redelivered, 1);
    assert!((consumption.redelivered_rate - 0.2).abs() < 1e-9);
    assert!(
        report.line().contains(
            "| delivered 6 (distinct 5, acked 5) | undelivered 0 \
             | redelivered 1 (20.00%, attempt not raised 0)"
        ),
        "{}",
        report.line()
    );
}

#[test]
fn a_redelivery_that_does_not_raise_the_attempt_is_counted() {
    let mut events = consumed();
    events.push(deliver("p0-1", (0, 1), 1, 2301));
    let report = report(events);
    let consumption = &report.findings.consumption;
    assert_eq!(report.verdict, Verdict::Valid, "{:?}", report.reasons);
    assert_eq!(
        (consumption.redelivered, consumption.attempt_not_raised),
        (2, 1)
    );
}

#[test]
fn an_acknowledged_value_never_delivered_is_reported() {
    let mut events = consumed();
    events.retain(|e| !matches!(e, Event::Deliver(d) if d.value == "p0-2"));
    let report = report(events);
    let undelivered = &report.findings.consumption.undelivered;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(report.reasons, ["1 acknowledged values never delivered"]);
    assert_eq!(
        (
            undelivered.first[0].value.as_str(),
            undelivered.first[0].offset
        ),
        ("p0-2", Some(2))
    );
}

#[test]
fn a_run_that_did_not_consume_to_the_end_is_not_judged_on_deliveries() {
    let report = report(clean());
    assert_eq!(report.findings.consumption.undelivered.count, 0);
    assert!(!report.line().contains("undelivered"), "{}", report.line());
}
