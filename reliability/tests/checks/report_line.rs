use crate::support::{PARTITION_0, clean, report, with_logs};

#[test]
fn the_report_line_of_the_clean_history_reads_as_specified() {
    assert_eq!(
        report(clean()).line(),
        "R1 leader-kill seed=42 | attempts 7 | acked 5 | lost 0 | unexpected 0 | duplicated 0 \
         | recovered 1 | unknown 1 | per-node lost 0 | faults 1 (1/0) | leader changes 2 \
         | max unavailability 0.1 s | 5xx other than 503/507: 0 | verdict valid"
    );
}

#[test]
fn the_report_line_of_a_loss_counts_it_and_says_invalid() {
    let line = report(with_logs(clean(), 0, &PARTITION_0[..2])).line();
    assert!(line.contains("| lost 1 |"), "{line}");
    assert!(line.contains("| per-node lost 3 |"), "{line}");
    assert!(line.ends_with("| verdict invalid"), "{line}");
}
