use wharf_reliability::Verdict;
use wharf_reliability::event::Outcome;

use crate::support::{NODES, PARTITION_0, clean, produce, report, with_logs, with_records};

#[test]
fn the_clean_history_loses_nothing_anywhere_in_the_log() {
    let lost = report(clean()).findings.lost;
    let total = lost.prefix.count + lost.middle.count + lost.postfix.count + lost.unplaced.count;
    assert_eq!(total, 0);
}

#[test]
fn a_value_lost_before_the_first_drained_offset_is_lost_prefix() {
    let mut events = clean();
    for node in NODES {
        events = with_records(events, node, 0, &[(1, "p0-1"), (2, "p0-2")]);
    }
    let report = report(events);
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(report.findings.lost.prefix.count, 1);
    assert_eq!(report.findings.lost.prefix.first[0].value, "p0-0");
    assert_eq!(
        report.findings.lost.middle.count + report.findings.lost.postfix.count,
        0
    );
}

#[test]
fn a_value_lost_between_drained_offsets_is_lost_middle() {
    let report = report(with_logs(clean(), 0, &["p0-0", "p0-2"]));
    let lost = &report.findings.lost;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(lost.middle.count, 1);
    assert_eq!(lost.middle.first[0].value, "p0-1");
    assert_eq!(lost.prefix.count + lost.postfix.count, 0);
}

#[test]
fn a_value_lost_after_the_last_drained_offset_is_lost_postfix() {
    let report = report(with_logs(clean(), 0, &PARTITION_0[..2]));
    let lost = &report.findings.lost;
    assert_eq!(lost.postfix.count, 1);
    assert_eq!(lost.postfix.first[0].value, "p0-2");
    assert_eq!(lost.prefix.count + lost.middle.count, 0);
}

#[test]
fn a_lost_value_whose_reply_named_no_offset_is_unplaced() {
    let mut events = clean();
    events.push(produce(2, "p2-0", None, None, (1300, 1310), Outcome::Ok));
    let report = report(events);
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(report.findings.queue.lost.count, 1);
    assert_eq!(report.findings.lost.unplaced.first[0].value, "p2-0");
}
