use wharf_reliability::Verdict;
use wharf_reliability::checks::server_errors::{Operation, is_unexpected_5xx};

use crate::support::{clean, report, with_produce};

#[test]
fn only_5xx_other_than_503_and_507_are_counted() {
    assert!(!is_unexpected_5xx(499));
    assert!(is_unexpected_5xx(500));
    assert!(!is_unexpected_5xx(503));
    assert!(is_unexpected_5xx(504));
    assert!(!is_unexpected_5xx(507));
    assert!(is_unexpected_5xx(599));
    assert!(!is_unexpected_5xx(600));
}

#[test]
fn a_500_reply_is_counted_without_changing_the_verdict() {
    let events = with_produce(clean(), "p1-1", |produce| produce.status = Some(500));
    let events = with_produce(events, "p1-2", |produce| produce.status = Some(503));
    let report = report(events);
    let errors = &report.findings.server_errors;
    assert_eq!(report.verdict, Verdict::Valid);
    assert_eq!(errors.count, 1);
    assert_eq!(errors.first[0].operation, Operation::Produce);
    assert_eq!(
        (errors.first[0].value.as_str(), errors.first[0].status),
        ("p1-1", 500)
    );
    assert!(report.line().contains("| 5xx other than 503/507: 1 |"));
}
