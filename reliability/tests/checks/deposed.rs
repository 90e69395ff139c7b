use wharf_reliability::Event;
use wharf_reliability::event::Outcome;

use crate::support::{clean, produce, report};

/// The clean history with its leader kill turned into a pause of node 1 (resumed at 900 ms).
fn paused() -> Vec<Event> {
    clean()
        .into_iter()
        .map(|event| match event {
            Event::Fault(mut fault) => {
                fault.name = "pause_leader".to_owned();
                Event::Fault(fault)
            }
            other => other,
        })
        .collect()
}

#[test]
fn an_ack_after_the_resume_that_every_log_holds_is_checked_and_backed() {
    let report = report(paused());
    let deposed = &report.findings.deposed;
    assert_eq!((deposed.resumes, deposed.checked), (1, 1), "{deposed:?}");
    assert_eq!(deposed.unbacked.count, 0);
    assert!(report.line().contains("| deposed-leader acks 0 of 1"));
    assert_eq!(report.findings.deposed.unbacked.first, []);
    assert!(!report_of_kill_mentions_deposed());
}

#[test]
fn an_ack_after_the_resume_that_no_log_holds_is_an_ack_by_a_deposed_leader() {
    let mut events = paused();
    events.push(produce(
        2,
        "p2-0",
        None,
        Some((1, 3)),
        (950, 1300),
        Outcome::Ok,
    ));
    let report = report(events);
    let deposed = &report.findings.deposed;
    assert_eq!(
        (deposed.checked, deposed.unbacked.count),
        (2, 1),
        "{deposed:?}"
    );
    assert_eq!(deposed.unbacked.first[0].value, "p2-0");
    assert!(
        report.reasons.iter().any(|r| r.contains("deposed leader")),
        "{:?}",
        report.reasons
    );
    assert!(report.line().contains("| deposed-leader acks 1 of 2"));
}

/// A run without pauses says nothing about deposed leaders.
fn report_of_kill_mentions_deposed() -> bool {
    report(clean()).line().contains("deposed")
}
