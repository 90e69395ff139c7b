//! Acknowledged offset mismatch: an ok reply named (partition, offset), but a drained log holds
//! another value there.

use serde::Serialize;

use crate::event::{NodeId, Offset, Partition};
use crate::history::History;
use crate::index::{acked_produces, values_at};
use crate::offenders::Offenders;

/// An acknowledged position holding another value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OffsetMismatch {
    /// The acknowledged value.
    pub value: String,
    /// The partition its reply named.
    pub partition: Partition,
    /// The offset its reply named.
    pub offset: Offset,
    /// The first node (by id) holding something else there.
    pub node: NodeId,
    /// What that node holds there.
    pub found: String,
}

/// One mismatch per acknowledged operation whose position holds another value on some node.
pub fn check(history: &History) -> Offenders<OffsetMismatch> {
    let held = values_at(history);
    let mut nodes: Vec<NodeId> = held.keys().map(|&(node, _, _)| node).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let mut found = Offenders::default();
    for produce in acked_produces(history) {
        let (Some(partition), Some(offset)) = (produce.partition, produce.offset) else {
            continue;
        };
        let other = nodes.iter().find_map(|&node| {
            let value = *held.get(&(node, partition, offset))?;
            (value != produce.value).then_some((node, value))
        });
        if let Some((node, value)) = other {
            found.push(OffsetMismatch {
                value: produce.value.clone(),
                partition,
                offset,
                node,
                found: value.to_owned(),
            });
        }
    }
    found
}
