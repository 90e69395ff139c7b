use wharf_reliability::event::Outcome;
use wharf_reliability::{Event, Verdict};

use crate::support::{clean, produce, report, with_logs, with_produce};

/// The clean history from a run that promised each id stored once, with `p0-0` retried: a
/// first attempt that timed out, then the 200 of the retry, which says `duplicate: true`.
fn promised() -> Vec<Event> {
    let mut events = clean();
    if let Event::Run(run) = &mut events[0] {
        run.exactly_once_ids = true;
    }
    events.insert(
        1,
        produce(0, "p0-0", Some("k0"), None, (1, 9), Outcome::Info),
    );
    events = with_produce(events, "p0-0", |p| {
        if p.outcome == Outcome::Ok {
            p.duplicate = true;
        }
    });
    events
}

#[test]
fn a_retried_id_stored_once_is_valid_and_its_duplicate_reply_is_counted() {
    let report = report(promised());
    let ids = &report.findings.idempotence;
    assert_eq!(report.verdict, Verdict::Valid, "{:?}", report.reasons);
    assert_eq!(
        (
            ids.stored_twice.count,
            ids.retried,
            ids.duplicate_replies.count
        ),
        (0, 1, 1)
    );
    assert_eq!(ids.duplicate_replies.first, ["p0-0"]);
    assert!(
        report.line().contains(
            "| ids stored twice 0 of 6 | retried 1 | duplicate replies 1 | divergent offsets 0 |"
        ),
        "{}",
        report.line()
    );
}

#[test]
fn an_id_at_two_offsets_is_an_anomaly_only_when_the_run_promised_once() {
    let twice = ["p0-0", "p0-1", "p0-2", "p0-0"];
    let promised = report(with_logs(promised(), 0, &twice));
    let ids = &promised.findings.idempotence;
    assert_eq!(promised.verdict, Verdict::Invalid);
    assert_eq!(ids.stored_twice.count, 1);
    assert_eq!(ids.stored_twice.first[0].positions, [(0, 0), (0, 3)]);
    assert!(
        promised
            .reasons
            .iter()
            .any(|r| r.contains("ids stored twice")),
        "{:?}",
        promised.reasons
    );
    let at_least_once = report(with_logs(clean(), 0, &twice));
    assert_eq!(at_least_once.verdict, Verdict::Valid);
    assert_eq!(at_least_once.findings.queue.duplicated.count, 1);
    assert!(!at_least_once.line().contains("ids stored twice"));
}

#[test]
fn an_id_in_two_partitions_of_one_node_is_stored_twice() {
    let events = with_logs(promised(), 1, &["p1-0", "p1-1", "p1-3", "p0-1"]);
    let report = report(events);
    let ids = &report.findings.idempotence;
    assert_eq!(report.findings.queue.duplicated.count, 0);
    assert_eq!(ids.stored_twice.count, 1);
    assert_eq!(ids.stored_twice.first[0].value, "p0-1");
    assert_eq!(ids.stored_twice.first[0].positions, [(0, 1), (1, 3)]);
    assert_eq!(report.verdict, Verdict::Invalid);
}

#[test]
fn a_promise_no_retry_put_to_the_test_proves_nothing() {
    let mut events = clean();
    if let Event::Run(run) = &mut events[0] {
        run.exactly_once_ids = true;
    }
    let report = report(events);
    assert_eq!(report.verdict, Verdict::Unknown);
    assert!(
        report
            .reasons
            .iter()
            .any(|r| r.contains("no produce was retried")),
        "{:?}",
        report.reasons
    );
}
