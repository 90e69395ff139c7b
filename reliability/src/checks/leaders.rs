//! Leader changes per partition, and two nodes observed leading one partition in one term.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::event::{Leader, NodeId, Partition};
use crate::history::History;
use crate::offenders::Offenders;

/// What the leader observations show.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Leadership {
    /// Leader changes per partition: an observation with a higher term or another node than the
    /// one before it (observations of an older term are stale and skipped).
    pub changes: BTreeMap<Partition, u64>,
    /// Terms in which two nodes were observed leading one partition, which Raft forbids.
    pub dual_leaders: Offenders<DualLeader>,
}

impl Leadership {
    /// Leader changes over all partitions.
    pub fn total_changes(&self) -> u64 {
        self.changes.values().sum()
    }
}

/// Two nodes observed leading one partition in one term.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DualLeader {
    /// The partition.
    pub partition: Partition,
    /// The term.
    pub term: u64,
    /// The node observed first.
    pub first: NodeId,
    /// The other node.
    pub second: NodeId,
}

/// Reads the leader observations of `history`.
pub fn check(history: &History) -> Leadership {
    let mut by_partition: BTreeMap<Partition, Vec<&Leader>> = BTreeMap::new();
    for leader in &history.leaders {
        by_partition
            .entry(leader.partition)
            .or_default()
            .push(leader);
    }
    let mut leadership = Leadership::default();
    for (partition, mut observed) in by_partition {
        observed.sort_by_key(|leader| leader.at_ms);
        leadership.changes.insert(partition, changes(&observed));
        find_dual_leaders(&observed, &mut leadership.dual_leaders);
    }
    leadership
}

fn changes(observed: &[&Leader]) -> u64 {
    let mut current: Option<&Leader> = None;
    let mut count = 0;
    for &leader in observed {
        match current {
            Some(now) if leader.term < now.term => continue,
            Some(now) if leader.term > now.term || leader.node != now.node => count += 1,
            _ => {}
        }
        current = Some(leader);
    }
    count
}

fn find_dual_leaders(observed: &[&Leader], found: &mut Offenders<DualLeader>) {
    let mut leader_of_term: HashMap<u64, NodeId> = HashMap::new();
    for leader in observed {
        let first = *leader_of_term.entry(leader.term).or_insert(leader.node);
        if first != leader.node {
            found.push(DualLeader {
                partition: leader.partition,
                term: leader.term,
                first,
                second: leader.node,
            });
        }
    }
}
