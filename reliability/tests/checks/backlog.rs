use wharf_reliability::event::Outcome;
use wharf_reliability::{Event, Verdict};

use crate::support::{ack, clean, deliver, report};

/// The clean history consumed through `s` to the end with an idle bound of `bound_ms`: the
/// producers' last completion is at 1210 ms, when `p0-1`, `p0-2` and `p1-3` were acknowledged
/// and not yet delivered; they come 1090, 1100 and 1110 ms later (`p1-3` only if `all`).
fn idle(bound_ms: u64, all: bool) -> Vec<Event> {
    let mut events = clean();
    if let Event::Run(run) = &mut events[0] {
        run.consumed_through = vec!["s".to_owned()];
        run.idle_delivery_bound_ms = Some(bound_ms);
    }
    let mut late = vec![("p0-1", (0, 1), 2300), ("p0-2", (0, 2), 2310)];
    if all {
        late.push(("p1-3", (1, 2), 2320));
    }
    for (value, at, time) in late {
        events.push(deliver(value, at, 1, time));
        events.push(ack(value, (time + 1, time + 2), Outcome::Ok));
    }
    events
}

#[test]
fn a_backlog_delivered_within_the_bound_is_valid_and_its_longest_wait_reported() {
    let report = report(idle(10_000, true));
    let backlog = &report.findings.backlog;
    assert_eq!(report.verdict, Verdict::Valid, "{:?}", report.reasons);
    assert_eq!(
        (
            backlog.idle_from_ms,
            backlog.at_idle,
            backlog.longest_wait_ms
        ),
        (1210, 3, 1110)
    );
    assert_eq!(backlog.stalled.count, 0);
    assert!(
        report.line().contains(
            "| backlog at idle 3 | longest backlog wait 1.1 s | stalled after idle 0 (bound 10.0 s) |"
        ),
        "{}",
        report.line()
    );
}

#[test]
fn a_value_delivered_past_the_bound_is_stalled() {
    let report = report(idle(1_100, true));
    let backlog = &report.findings.backlog;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(backlog.stalled.count, 1);
    assert_eq!(backlog.stalled.first[0].value, "p1-3");
    assert_eq!(backlog.stalled.first[0].waited_ms, Some(1110));
}

#[test]
fn a_value_never_delivered_is_stalled_and_undelivered() {
    let report = report(idle(10_000, false));
    let backlog = &report.findings.backlog;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(backlog.stalled.count, 1);
    assert_eq!(backlog.stalled.first[0].waited_ms, None);
    assert_eq!(report.findings.consumption.undelivered.count, 1);
    assert_eq!(backlog.longest_wait_ms, 1100);
}

#[test]
fn without_a_bound_the_backlog_is_measured_not_judged_nor_printed() {
    let mut events = idle(10_000, true);
    if let Event::Run(run) = &mut events[0] {
        run.idle_delivery_bound_ms = None;
    }
    let report = report(events);
    assert_eq!(report.findings.backlog.at_idle, 3);
    assert_eq!(report.verdict, Verdict::Valid);
    assert!(!report.line().contains("backlog"), "{}", report.line());
}
