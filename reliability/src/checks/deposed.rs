//! Acks by a deposed leader: produces a paused node answered `ok` after it resumed (it slept
//! through an election and woke up believing it led), checked against every drained log. An
//! ack whose acknowledged position holds its value on every drained node is a true ack (the
//! node forwarded it, or committed it in a newer term); one that does not is an ack by a
//! deposed leader, the zombie-leader bug of RELIABILITY.md R5.

use serde::Serialize;

use crate::event::{NodeId, Outcome, Phase};
use crate::history::History;
use crate::index::values_at;
use crate::offenders::Offenders;

/// The fault names that put a node to sleep (SIGSTOP) and wake it up.
const PAUSE_PREFIX: &str = "pause";

/// An ack the drained logs do not back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeposedAck {
    /// The acknowledged value.
    pub value: String,
    /// The node that answered, after it resumed.
    pub node: NodeId,
    /// When the answer arrived.
    pub complete_ms: u64,
}

/// What the check counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeposedAcks {
    /// Pauses that ended (the node was resumed).
    pub resumes: u64,
    /// `ok` produces answered by a node after it resumed from a pause.
    pub checked: u64,
    /// Those whose value is missing from a drained node's log at the acknowledged position.
    pub unbacked: Offenders<DeposedAck>,
}

/// Counts the acks paused nodes gave after they resumed, and those the drained logs do not back.
pub fn check(history: &History) -> DeposedAcks {
    let resumed: Vec<(NodeId, u64)> = history
        .faults
        .iter()
        .filter(|f| f.name.starts_with(PAUSE_PREFIX) && f.phase == Phase::End && f.installed)
        .filter_map(|f| Some((f.node?, f.at_ms)))
        .collect();
    let held = values_at(history);
    let mut nodes: Vec<NodeId> = history.drained.iter().map(|d| d.node).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let mut found = DeposedAcks {
        resumes: resumed.len() as u64,
        ..DeposedAcks::default()
    };
    for produce in &history.produces {
        let after_resume = resumed
            .iter()
            .any(|&(node, at)| node == produce.node && produce.complete_ms >= at);
        if produce.outcome != Outcome::Ok || !after_resume {
            continue;
        }
        found.checked += 1;
        let backed = match (produce.partition, produce.offset) {
            (Some(partition), Some(offset)) => nodes
                .iter()
                .all(|&node| held.get(&(node, partition, offset)) == Some(&produce.value.as_str())),
            _ => false,
        };
        if !backed {
            found.unbacked.push(DeposedAck {
                value: produce.value.clone(),
                node: produce.node,
                complete_ms: produce.complete_ms,
            });
        }
    }
    found
}
