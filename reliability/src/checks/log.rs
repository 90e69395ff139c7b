//! Log checks on each node's drain of each partition: one value per offset, offsets strictly
//! increasing in the order they were read, and no hole between the first and last offset read.

use std::collections::HashMap;

use serde::Serialize;

use crate::event::{Drain, NodeId, Offset, Partition};
use crate::history::History;
use crate::index::node_logs;
use crate::offenders::Offenders;

/// The log-check failures of a history.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LogChecks {
    /// One node read two different values at one offset.
    pub conflicts: Offenders<OffsetConflict>,
    /// One node's read order went back or stood still.
    pub out_of_order: Offenders<OutOfOrder>,
    /// Ranges of offsets missing between a node's first and last drained offset.
    pub holes: Offenders<Hole>,
}

impl LogChecks {
    /// How many failures of any kind were found.
    pub fn failures(&self) -> u64 {
        self.conflicts.count + self.out_of_order.count + self.holes.count
    }
}

/// Two values read at one offset of one node's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OffsetConflict {
    /// The node.
    pub node: NodeId,
    /// The partition.
    pub partition: Partition,
    /// The offset.
    pub offset: Offset,
    /// The value read there first.
    pub first: String,
    /// The different value read there later.
    pub second: String,
}

/// A drained offset not above the one read before it on the same node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutOfOrder {
    /// The node.
    pub node: NodeId,
    /// The partition.
    pub partition: Partition,
    /// The offset read before.
    pub previous: Offset,
    /// The offset read next.
    pub next: Offset,
}

/// Offsets `from..=to` missing from a node's log between offsets it does hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hole {
    /// The node.
    pub node: NodeId,
    /// The partition.
    pub partition: Partition,
    /// The first missing offset.
    pub from: Offset,
    /// The last missing offset.
    pub to: Offset,
}

/// Checks every node's drained log of every partition.
pub fn check(history: &History) -> LogChecks {
    let mut checks = LogChecks::default();
    for ((node, partition), log) in node_logs(history) {
        find_conflicts(node, partition, &log, &mut checks.conflicts);
        find_out_of_order(node, partition, &log, &mut checks.out_of_order);
        find_holes(node, partition, &log, &mut checks.holes);
    }
    checks
}

fn find_conflicts(
    node: NodeId,
    partition: Partition,
    log: &[&Drain],
    found: &mut Offenders<OffsetConflict>,
) {
    let mut first_at: HashMap<Offset, &str> = HashMap::new();
    for drain in log {
        let first = *first_at.entry(drain.offset).or_insert(&drain.value);
        if first != drain.value {
            found.push(OffsetConflict {
                node,
                partition,
                offset: drain.offset,
                first: first.to_owned(),
                second: drain.value.clone(),
            });
        }
    }
}

fn find_out_of_order(
    node: NodeId,
    partition: Partition,
    log: &[&Drain],
    found: &mut Offenders<OutOfOrder>,
) {
    for pair in log.windows(2) {
        let (previous, next) = (pair[0].offset, pair[1].offset);
        if next <= previous {
            found.push(OutOfOrder {
                node,
                partition,
                previous,
                next,
            });
        }
    }
}

fn find_holes(node: NodeId, partition: Partition, log: &[&Drain], found: &mut Offenders<Hole>) {
    let mut offsets: Vec<Offset> = log.iter().map(|drain| drain.offset).collect();
    offsets.sort_unstable();
    offsets.dedup();
    for pair in offsets.windows(2) {
        if pair[1] > pair[0] + 1 {
            found.push(Hole {
                node,
                partition,
                from: pair[0] + 1,
                to: pair[1] - 1,
            });
        }
    }
}
