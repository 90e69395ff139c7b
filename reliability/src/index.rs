//! Lookups several checks share, built from a history's events.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::event::{Drain, NodeId, Offset, Outcome, Partition, Produce};
use crate::history::History;

/// The best outcome of each produced value over all its operations (`ok` over `info` over
/// `fail`): a value retried after a timeout counts as acknowledged if any attempt was.
pub(crate) fn value_outcomes(history: &History) -> HashMap<&str, Outcome> {
    let mut outcomes: HashMap<&str, Outcome> = HashMap::new();
    for produce in &history.produces {
        let best = outcomes.entry(&produce.value).or_insert(produce.outcome);
        *best = (*best).max(produce.outcome);
    }
    outcomes
}

/// The first acknowledged operation of each value, in history order.
pub(crate) fn acked_produces(history: &History) -> Vec<&Produce> {
    let mut seen = HashSet::new();
    history
        .produces
        .iter()
        .filter(|produce| produce.outcome == Outcome::Ok && seen.insert(produce.value.as_str()))
        .collect()
}

/// Each node's drained records of each partition, in the order they were read.
pub(crate) fn node_logs(history: &History) -> BTreeMap<(NodeId, Partition), Vec<&Drain>> {
    let mut logs: BTreeMap<(NodeId, Partition), Vec<&Drain>> = BTreeMap::new();
    for drain in &history.drains {
        logs.entry((drain.node, drain.partition))
            .or_default()
            .push(drain);
    }
    logs
}

/// The value each node holds at each (partition, offset): the first one read there.
pub(crate) fn values_at(history: &History) -> HashMap<(NodeId, Partition, Offset), &str> {
    let mut values = HashMap::new();
    for drain in &history.drains {
        values
            .entry((drain.node, drain.partition, drain.offset))
            .or_insert(drain.value.as_str());
    }
    values
}

/// Which values the drains found, per partition and per node.
#[derive(Debug, Default)]
pub(crate) struct Presence<'h> {
    on_node: HashSet<(NodeId, Partition, &'h str)>,
    in_partition: HashSet<(Partition, &'h str)>,
    anywhere: HashSet<&'h str>,
    drained: HashSet<(NodeId, Partition)>,
}

impl<'h> Presence<'h> {
    /// Indexes every drained record and every finished drain.
    pub(crate) fn of(history: &'h History) -> Self {
        let mut presence = Self::default();
        for drain in &history.drains {
            let value = drain.value.as_str();
            presence
                .on_node
                .insert((drain.node, drain.partition, value));
            presence.in_partition.insert((drain.partition, value));
            presence.anywhere.insert(value);
            presence.drained.insert((drain.node, drain.partition));
        }
        for drained in &history.drained {
            presence.drained.insert((drained.node, drained.partition));
        }
        presence
    }

    /// Whether some node holds `value` in `partition` (in any partition when it is unknown).
    pub(crate) fn in_partition(&self, partition: Option<Partition>, value: &str) -> bool {
        match partition {
            Some(partition) => self.in_partition.contains(&(partition, value)),
            None => self.anywhere.contains(value),
        }
    }

    /// Whether `node` holds `value` in `partition` (in any drained partition when it is unknown).
    pub(crate) fn on_node(&self, node: NodeId, partition: Option<Partition>, value: &str) -> bool {
        match partition {
            Some(partition) => self.on_node.contains(&(node, partition, value)),
            None => self
                .drained
                .iter()
                .any(|&(n, p)| n == node && self.on_node.contains(&(node, p, value))),
        }
    }

    /// Whether any node holds `value` anywhere.
    pub(crate) fn anywhere(&self, value: &str) -> bool {
        self.anywhere.contains(value)
    }

    /// The nodes whose drain of `partition` produced records or finished (any partition's when
    /// it is unknown), in ascending order.
    pub(crate) fn drained_nodes(&self, partition: Option<Partition>) -> Vec<NodeId> {
        let mut nodes: Vec<NodeId> = self
            .drained
            .iter()
            .filter(|&&(_, p)| partition.is_none_or(|wanted| wanted == p))
            .map(|&(node, _)| node)
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes
    }

    /// How many distinct values the drains found.
    pub(crate) fn distinct_values(&self) -> usize {
        self.anywhere.len()
    }
}
