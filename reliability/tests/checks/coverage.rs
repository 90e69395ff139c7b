use wharf_reliability::Verdict;
use wharf_reliability::event::Event;

use crate::support::{clean, leader, report, run, with_records};

#[test]
fn the_clean_history_covers_what_it_declared() {
    let report = report(clean());
    let coverage = &report.findings.coverage;
    assert!(coverage.problems().is_empty(), "{:?}", coverage.problems());
    assert_eq!(
        (
            coverage.fault_injections,
            coverage.installed,
            coverage.skipped
        ),
        (1, 1, 0)
    );
    assert_eq!(report.findings.leadership.total_changes(), 2);
}

#[test]
fn a_declared_fault_never_installed_makes_the_verdict_unknown() {
    let mut events = clean();
    for event in &mut events {
        if let Event::Fault(fault) = event {
            fault.installed = false;
        }
    }
    let report = report(events);
    let coverage = &report.findings.coverage;
    assert_eq!(report.verdict, Verdict::Unknown);
    assert_eq!(coverage.never_installed, ["kill_leader"]);
    assert_eq!((coverage.installed, coverage.skipped), (0, 1));
    assert_eq!(
        report.reasons,
        ["fault kill_leader was declared but never installed"]
    );
}

#[test]
fn a_partition_without_a_leader_change_makes_the_verdict_unknown_when_one_is_required() {
    let mut events = clean();
    events.retain(|e| !matches!(e, Event::Leader(l) if l.partition == 1 && l.term == 2));
    let report = report(events);
    assert_eq!(report.verdict, Verdict::Unknown);
    assert_eq!(report.findings.coverage.without_leader_change.first, [1]);
    assert_eq!(report.reasons, ["1 partitions without a leader change"]);
}

#[test]
fn a_partition_without_a_leader_change_is_fine_when_none_is_required() {
    let mut events = clean();
    events.retain(|e| !matches!(e, Event::Leader(l) if l.partition == 1 && l.term == 2));
    for event in &mut events {
        if let Event::Run(run) = event {
            run.require_leader_change = false;
        }
    }
    assert_eq!(report(events).verdict, Verdict::Valid);
}

#[test]
fn a_node_never_drained_makes_the_verdict_unknown() {
    let mut events = clean();
    events.retain(|e| !matches!(e, Event::Drain(d) if d.node == 3 && d.partition == 1));
    events.retain(|e| !matches!(e, Event::Drained(d) if d.node == 3 && d.partition == 1));
    let report = report(events);
    let undrained = &report.findings.coverage.undrained;
    assert_eq!(report.verdict, Verdict::Unknown);
    assert_eq!(undrained.count, 1);
    assert_eq!(
        (undrained.first[0].node, undrained.first[0].partition),
        (3, 1)
    );
}

#[test]
fn a_node_that_drained_empty_is_drained_and_lost_everything() {
    let report = report(with_records(clean(), 3, 1, &[]));
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(report.findings.coverage.undrained.count, 0);
    assert_eq!(report.findings.queue.per_node_lost.count, 2);
}

#[test]
fn a_drain_whose_record_count_disagrees_makes_the_verdict_unknown() {
    let mut events = clean();
    for event in &mut events {
        if let Event::Drained(drained) = event
            && (drained.node, drained.partition) == (2, 0)
        {
            drained.records = 4;
        }
    }
    let report = report(events);
    let incomplete = &report.findings.coverage.incomplete_drains;
    assert_eq!(report.verdict, Verdict::Unknown);
    assert_eq!(incomplete.count, 1);
    assert_eq!(
        (incomplete.first[0].node, incomplete.first[0].partition),
        (2, 0)
    );
    assert_eq!(
        (incomplete.first[0].claimed, incomplete.first[0].found),
        (4, 3)
    );
}

#[test]
fn a_history_with_only_its_header_is_unknown() {
    let report = report(vec![run()]);
    assert_eq!(report.verdict, Verdict::Unknown);
    assert!(report.findings.coverage.empty);
}

#[test]
fn a_history_without_a_header_is_unknown() {
    let mut events = clean();
    events.retain(|e| !matches!(e, Event::Run(_)));
    let report = report(events);
    assert_eq!(report.verdict, Verdict::Unknown);
    assert_eq!(report.reasons, ["no run header"]);
    assert!(report.line().starts_with("? ? seed=? |"));
}

#[test]
fn two_nodes_leading_one_partition_in_one_term_is_invalid() {
    let mut events = clean();
    events.push(leader(0, 3, 2, 800));
    let report = report(events);
    let dual = &report.findings.leadership.dual_leaders;
    assert_eq!(report.verdict, Verdict::Invalid);
    assert_eq!(dual.count, 1);
    assert_eq!((dual.first[0].partition, dual.first[0].term), (0, 2));
    assert_eq!((dual.first[0].first, dual.first[0].second), (2, 3));
}

#[test]
fn a_stale_leader_observation_is_not_a_leader_change() {
    let mut events = clean();
    events.push(leader(0, 1, 1, 800));
    let report = report(events);
    assert_eq!(report.findings.leadership.changes.get(&0), Some(&1));
    assert_eq!(report.verdict, Verdict::Valid);
}

#[test]
fn a_header_naming_no_node_makes_the_verdict_unknown() {
    let mut events = clean();
    for event in &mut events {
        if let Event::Run(run) = event {
            run.nodes.clear();
        }
    }
    let report = report(events);
    assert_eq!(report.verdict, Verdict::Unknown);
    assert_eq!(
        report.reasons,
        ["the run header names no node or no partition"]
    );
}
