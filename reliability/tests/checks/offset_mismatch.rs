use wharf_reliability::Verdict;

use crate::support::{clean, report, with_produce};

#[test]
fn the_clean_history_holds_every_acknowledged_value_where_its_reply_said() {
    assert_eq!(report(clean()).findings.offset_mismatch.count, 0);
}

#[test]
fn an_acknowledged_offset_holding_another_value_is_a_mismatch() {
    let events = with_produce(clean(), "p1-3", |produce| produce.offset = Some(1));
    let report = report(events);
    let mismatch = &report.findings.offset_mismatch;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(
        report.reasons,
        ["1 acknowledged offsets holding another value"]
    );
    assert_eq!(mismatch.count, 1);
    assert_eq!(mismatch.first[0].value, "p1-3");
    assert_eq!(
        (mismatch.first[0].partition, mismatch.first[0].offset),
        (1, 1)
    );
    assert_eq!(
        (mismatch.first[0].node, mismatch.first[0].found.as_str()),
        (1, "p1-1")
    );
}
