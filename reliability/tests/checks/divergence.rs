use wharf_reliability::Verdict;
use wharf_reliability::event::Outcome;

use crate::support::{clean, produce, report, with_log};

#[test]
fn the_clean_history_has_replicas_that_agree() {
    assert_eq!(report(clean()).findings.divergence.count, 0);
}

#[test]
fn two_nodes_holding_different_values_at_one_offset_diverge() {
    let mut events = clean();
    events.push(produce(1, "p1-9", None, None, (1300, 2300), Outcome::Info));
    let report = report(with_log(events, 3, 1, &["p1-0", "p1-9", "p1-3"]));
    let divergence = &report.findings.divergence;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(report.reasons, ["1 divergent offsets between replicas"]);
    assert_eq!(divergence.count, 1);
    assert_eq!(
        (divergence.first[0].partition, divergence.first[0].offset),
        (1, 1)
    );
    let held: Vec<(u64, &str)> = divergence.first[0]
        .held
        .iter()
        .map(|held| (held.node, held.value.as_str()))
        .collect();
    assert_eq!(held, [(1, "p1-1"), (2, "p1-1"), (3, "p1-9")]);
}
