//! Coverage: did the run do what it set out to do? Declared faults installed, leaders changed
//! when required, every node drained for every partition. Unmet coverage makes a run `unknown`.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde::Serialize;

use crate::checks::leaders::Leadership;
use crate::event::{NodeId, Partition, Phase, Run};
use crate::history::History;
use crate::offenders::Offenders;

/// What a run covered, and what it failed to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Coverage {
    /// Whether the history had a `run` header.
    pub run_header: bool,
    /// Whether the history had no event besides its header.
    pub empty: bool,
    /// Whether the header names no node or no partition, so nothing could be drained.
    pub empty_cluster: bool,
    /// Fault starts in the history.
    pub fault_injections: u64,
    /// Fault starts that took effect.
    pub installed: u64,
    /// Fault starts the harness could not carry out.
    pub skipped: u64,
    /// Faults the header declared that never took effect.
    pub never_installed: Vec<String>,
    /// Partitions without a leader change, when the header requires one.
    pub without_leader_change: Offenders<Partition>,
    /// (node, partition) pairs of the header's cluster with no finished drain.
    pub undrained: Offenders<NodePartition>,
    /// Finished drains whose record count differs from the `drain` lines in the history.
    pub incomplete_drains: Offenders<DrainCount>,
}

/// A node and a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct NodePartition {
    /// The node.
    pub node: NodeId,
    /// The partition.
    pub partition: Partition,
}

/// A drain whose `drained` line disagrees with its `drain` lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DrainCount {
    /// The node.
    pub node: NodeId,
    /// The partition.
    pub partition: Partition,
    /// The records the `drained` line claims.
    pub claimed: u64,
    /// The `drain` lines in the history.
    pub found: u64,
}

impl Coverage {
    /// Each unmet condition, in words; empty when coverage is met.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !self.run_header {
            problems.push("no run header".to_owned());
        }
        if self.empty {
            problems.push("the history holds no events".to_owned());
        }
        if self.empty_cluster {
            problems.push("the run header names no node or no partition".to_owned());
        }
        for fault in &self.never_installed {
            problems.push(format!("fault {fault} was declared but never installed"));
        }
        push_count(
            &mut problems,
            &self.without_leader_change,
            "partitions without a leader change",
        );
        push_count(
            &mut problems,
            &self.undrained,
            "(node, partition) pairs never drained",
        );
        push_count(
            &mut problems,
            &self.incomplete_drains,
            "drains with a wrong record count",
        );
        problems
    }
}

fn push_count<T>(problems: &mut Vec<String>, offenders: &Offenders<T>, what: &str) {
    if !offenders.is_empty() {
        problems.push(format!("{} {what}", offenders.count));
    }
}

/// Checks what `history` covered; `leadership` holds its leader changes.
pub fn check(history: &History, leadership: &Leadership) -> Coverage {
    let mut coverage = Coverage {
        run_header: history.run.is_some(),
        empty: history.is_empty(),
        incomplete_drains: incomplete_drains(history),
        ..Coverage::default()
    };
    count_faults(history, &mut coverage);
    if let Some(run) = &history.run {
        coverage.empty_cluster = run.nodes.is_empty() || run.partitions == 0;
        coverage.never_installed = never_installed(history, run);
        coverage.undrained = undrained(history, run);
        if run.require_leader_change {
            coverage.without_leader_change = without_leader_change(run, leadership);
        }
    }
    coverage
}

fn count_faults(history: &History, coverage: &mut Coverage) {
    for fault in history.faults.iter().filter(|f| f.phase == Phase::Start) {
        coverage.fault_injections += 1;
        if fault.installed {
            coverage.installed += 1;
        } else {
            coverage.skipped += 1;
        }
    }
}

fn never_installed(history: &History, run: &Run) -> Vec<String> {
    let installed: HashSet<&str> = history
        .faults
        .iter()
        .filter(|fault| fault.phase == Phase::Start && fault.installed)
        .map(|fault| fault.name.as_str())
        .collect();
    let declared: BTreeSet<&str> = run.faults.iter().map(String::as_str).collect();
    declared
        .into_iter()
        .filter(|name| !installed.contains(name))
        .map(str::to_owned)
        .collect()
}

/// Pairs are listed in (node, partition) order; the walk stops once the first few are found, and
/// the count is computed, so a header claiming a huge partition count costs nothing.
fn undrained(history: &History, run: &Run) -> Offenders<NodePartition> {
    let nodes: BTreeSet<NodeId> = run.nodes.iter().copied().collect();
    // A partition held by some nodes only (the replication factor below the node count) is
    // drained from those.
    let holds = |node: NodeId, partition: Partition| {
        run.replicas
            .get(partition as usize)
            .is_none_or(|replicas| replicas.contains(&node))
    };
    let drained: HashSet<NodePartition> = history
        .drained
        .iter()
        .filter(|d| nodes.contains(&d.node) && d.partition < run.partitions)
        .filter(|d| holds(d.node, d.partition))
        .map(|d| NodePartition {
            node: d.node,
            partition: d.partition,
        })
        .collect();
    let expected = match run.replicas.is_empty() {
        true => nodes.len() as u64 * u64::from(run.partitions),
        false => (0..run.partitions)
            .map(|p| nodes.iter().filter(|&&n| holds(n, p)).count() as u64)
            .sum(),
    };
    let pairs = nodes.iter().flat_map(|&node| {
        (0..run.partitions).map(move |partition| NodePartition { node, partition })
    });
    let missing = pairs.filter(|pair| holds(pair.node, pair.partition) && !drained.contains(pair));
    Offenders::counted(expected.saturating_sub(drained.len() as u64), missing)
}

fn without_leader_change(run: &Run, leadership: &Leadership) -> Offenders<Partition> {
    let changed = leadership
        .changes
        .iter()
        .filter(|&(&partition, &count)| partition < run.partitions && count > 0)
        .count() as u64;
    let missing = (0..run.partitions).filter(|p| leadership.changes.get(p).is_none_or(|&c| c == 0));
    Offenders::counted(u64::from(run.partitions) - changed, missing)
}

fn incomplete_drains(history: &History) -> Offenders<DrainCount> {
    let mut found: HashMap<(NodeId, Partition), u64> = HashMap::new();
    for drain in &history.drains {
        *found.entry((drain.node, drain.partition)).or_default() += 1;
    }
    history
        .drained
        .iter()
        .filter_map(|drained| {
            let lines = found.get(&(drained.node, drained.partition)).copied();
            let lines = lines.unwrap_or_default();
            (lines != drained.records).then_some(DrainCount {
                node: drained.node,
                partition: drained.partition,
                claimed: drained.records,
                found: lines,
            })
        })
        .collect()
}
