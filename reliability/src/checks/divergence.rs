//! Divergence: two nodes holding different values at the same (partition, offset).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::event::{NodeId, Offset, Partition};
use crate::history::History;
use crate::index::values_at;
use crate::offenders::Offenders;

/// One offset at which the replicas disagree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// The partition.
    pub partition: Partition,
    /// The offset.
    pub offset: Offset,
    /// What each node holds there, by ascending node id.
    pub held: Vec<NodeValue>,
}

/// The value one node holds at an offset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeValue {
    /// The node.
    pub node: NodeId,
    /// The value it holds (the first it read there, if it read several).
    pub value: String,
}

/// Every (partition, offset) at which two nodes hold different values, ascending.
pub fn check(history: &History) -> Offenders<Divergence> {
    let mut by_offset: BTreeMap<(Partition, Offset), BTreeMap<NodeId, &str>> = BTreeMap::new();
    for ((node, partition, offset), value) in values_at(history) {
        by_offset
            .entry((partition, offset))
            .or_default()
            .insert(node, value);
    }
    by_offset
        .into_iter()
        .filter(|(_, held)| disagree(held))
        .map(|((partition, offset), held)| Divergence {
            partition,
            offset,
            held: held
                .into_iter()
                .map(|(node, value)| NodeValue {
                    node,
                    value: value.to_owned(),
                })
                .collect(),
        })
        .collect()
}

fn disagree(held: &BTreeMap<NodeId, &str>) -> bool {
    let mut values = held.values();
    let first = values.next();
    values.any(|value| Some(value) != first)
}
