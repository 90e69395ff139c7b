//! Where a topic's partitions go: replicas spread over zones, balanced over nodes.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::node::NodeRecord;
use super::state::{ClusterState, check_shape};
use crate::error::ClusterError;

/// The nodes holding one partition; the first is its preferred leader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionPlacement {
    /// Distinct node ids, the preferred leader first.
    pub replicas: Vec<u64>,
}

impl PartitionPlacement {
    /// The node that should lead the partition when it is Active.
    pub fn preferred_leader(&self) -> Option<u64> {
        self.replicas.first().copied()
    }
}

/// How many replicas and preferred leaderships each node holds already, so that a new
/// placement evens them out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlacementLoad {
    replicas: BTreeMap<u64, u64>,
    leaders: BTreeMap<u64, u64>,
}

impl PlacementLoad {
    /// The load of every placement in the state.
    pub fn of(state: &ClusterState) -> Self {
        let mut load = Self::default();
        for placement in state.topics().values().flat_map(|t| &t.placement) {
            load.add(placement);
        }
        load
    }

    /// Counts one more placement.
    pub fn add(&mut self, placement: &PartitionPlacement) {
        for node in &placement.replicas {
            *self.replicas.entry(*node).or_default() += 1;
        }
        if let Some(leader) = placement.preferred_leader() {
            *self.leaders.entry(leader).or_default() += 1;
        }
    }

    /// Stops counting a placement counted before.
    pub fn remove(&mut self, placement: &PartitionPlacement) {
        for node in &placement.replicas {
            decrement(&mut self.replicas, *node);
        }
        if let Some(leader) = placement.preferred_leader() {
            decrement(&mut self.leaders, leader);
        }
    }

    /// Replicas on a node.
    pub fn replicas(&self, node: u64) -> u64 {
        self.replicas.get(&node).copied().unwrap_or(0)
    }

    /// Partitions whose preferred leader is the node.
    pub fn leaders(&self, node: u64) -> u64 {
        self.leaders.get(&node).copied().unwrap_or(0)
    }
}

/// The chain that reached `end` from `source`, as (partition index, new leader) pairs.
fn unwind(reached_by: &BTreeMap<u64, (usize, u64)>, end: u64, source: u64) -> Vec<(usize, u64)> {
    let mut chain = Vec::new();
    let mut node = end;
    while node != source {
        match reached_by.get(&node) {
            Some(&(index, previous)) => {
                chain.push((index, node));
                node = previous;
            }
            None => break,
        }
    }
    chain
}

fn decrement(counts: &mut BTreeMap<u64, u64>, node: u64) {
    if let Some(count) = counts.get_mut(&node) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            counts.remove(&node);
        }
    }
}

/// Places one partition of `replication_factor` replicas with `leader` (one of the Active
/// `nodes`) as its preferred leader and the other replicas placed by [`place`] over the
/// other nodes: for a topic that belongs to one node (its synthetic probe's).
pub fn place_led_by(
    nodes: &[NodeRecord],
    load: &PlacementLoad,
    replication_factor: u32,
    leader: u64,
) -> Result<PartitionPlacement, ClusterError> {
    check_shape(1, replication_factor)?;
    if !nodes.iter().any(|n| n.id == leader && n.is_active()) {
        return Err(ClusterError::UnknownNode { node: leader });
    }
    let mut replicas = vec![leader];
    if replication_factor > 1 {
        let others: Vec<NodeRecord> = nodes.iter().filter(|n| n.id != leader).cloned().collect();
        let rest = place(&others, load, 1, replication_factor - 1)?;
        replicas.extend(rest.into_iter().flat_map(|p| p.replicas));
    }
    Ok(PartitionPlacement { replicas })
}

/// Places `partitions` partitions of `replication_factor` replicas on the Active `nodes`.
///
/// Each partition's replicas are distinct nodes spread over as many zones as possible
/// (`min(replication_factor, zones)`); within that, replicas go to the zones and nodes with
/// the fewest per node, counting `load` and the partitions placed before. Zone spread comes
/// first: with uneven zones (a zone of one node and RF 3 over 3 zones) that node holds every
/// partition, and counts are even only within each zone. The preferred leader is the
/// replica with the fewest preferred leaderships (then the zone with the fewest per node);
/// leaderships are then shifted between replicas of the new partitions until no node leads
/// two more than one it could hand to. Ties go to the smaller zone name and node id: the
/// same input always gives the same placement.
pub fn place(
    nodes: &[NodeRecord],
    load: &PlacementLoad,
    partitions: u32,
    replication_factor: u32,
) -> Result<Vec<PartitionPlacement>, ClusterError> {
    check_shape(partitions, replication_factor)?;
    let mut placer = Placer::new(nodes, load.clone());
    let active = placer.zones.values().map(Vec::len).sum::<usize>();
    if replication_factor as usize > active {
        return Err(ClusterError::ReplicationFactorTooHigh {
            replication_factor,
            nodes: active,
        });
    }
    let mut placement: Vec<PartitionPlacement> = (0..partitions)
        .map(|_| placer.place_one(replication_factor as usize))
        .collect();
    placer.balance_leaders(&mut placement);
    Ok(placement)
}

/// Chooses replacement and new replicas against a running load.
pub(super) struct Placer<'a> {
    /// The Active nodes of each zone, in id order: the candidates.
    zones: BTreeMap<&'a str, Vec<u64>>,
    /// The zone of every node given, Active or not, to count the zones a partition uses.
    zone_of: BTreeMap<u64, &'a str>,
    pub(super) load: PlacementLoad,
}

impl<'a> Placer<'a> {
    /// A placer choosing among the Active nodes of `nodes` (the first record of an id
    /// counts).
    pub(super) fn new(nodes: &'a [NodeRecord], load: PlacementLoad) -> Self {
        let mut records = BTreeMap::new();
        for node in nodes {
            records.entry(node.id).or_insert(node);
        }
        let mut zones: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        for node in records.values().filter(|n| n.is_active()) {
            zones.entry(node.zone.as_str()).or_default().push(node.id);
        }
        let zone_of = records
            .iter()
            .map(|(id, node)| (*id, node.zone.as_str()))
            .collect();
        Self {
            zones,
            zone_of,
            load,
        }
    }

    fn place_one(&mut self, replication_factor: usize) -> PartitionPlacement {
        let mut replicas = Vec::new();
        while replicas.len() < replication_factor {
            match self.pick_replica(&replicas) {
                Some(node) => replicas.push(node),
                None => break,
            }
        }
        let leader = replicas
            .iter()
            .copied()
            .min_by(|a, b| self.compare_leaders(*a, *b));
        if let Some(index) = leader.and_then(|l| replicas.iter().position(|r| *r == l)) {
            let leader = replicas.remove(index);
            replicas.insert(0, leader);
        }
        let placement = PartitionPlacement { replicas };
        self.load.add(&placement);
        placement
    }

    /// Shifts preferred leaderships along chains of partitions (A leads one that B
    /// replicates, B leads one that C replicates, …) from a node to one with at least two
    /// fewer, until no such chain is left; then no node can lead fewer without another
    /// leading more. Partitions placed early chose their leader before later ones were
    /// known; this evens that out without moving any replica. Each shift lowers the sum of
    /// squared leader counts, so the loop ends.
    fn balance_leaders(&mut self, placement: &mut [PartitionPlacement]) {
        while let Some(chain) = self.leader_chain(placement) {
            for (index, leader) in chain {
                let partition = &mut placement[index];
                self.load.remove(partition);
                partition.replicas.retain(|r| *r != leader);
                partition.replicas.insert(0, leader);
                self.load.add(partition);
            }
        }
    }

    /// A chain of (partition index, its new leader) that takes one leadership from the
    /// busiest leader that has one to a node with at least two fewer, found breadth first.
    fn leader_chain(&self, placement: &[PartitionPlacement]) -> Option<Vec<(usize, u64)>> {
        let mut sources: Vec<u64> = placement
            .iter()
            .filter_map(PartitionPlacement::preferred_leader)
            .collect();
        sources.sort_by_key(|n| (Reverse(self.load.leaders(*n)), *n));
        sources.dedup();
        sources
            .into_iter()
            .find_map(|source| self.chain_from(source, placement))
    }

    fn chain_from(
        &self,
        source: u64,
        placement: &[PartitionPlacement],
    ) -> Option<Vec<(usize, u64)>> {
        let limit = self.load.leaders(source);
        let mut reached_by: BTreeMap<u64, (usize, u64)> = BTreeMap::new();
        let mut queue = VecDeque::from([source]);
        while let Some(node) = queue.pop_front() {
            let led = placement
                .iter()
                .enumerate()
                .filter(|(_, p)| p.preferred_leader() == Some(node));
            for (index, partition) in led {
                for &next in partition.replicas.iter().skip(1) {
                    if next == source || reached_by.contains_key(&next) {
                        continue;
                    }
                    reached_by.insert(next, (index, node));
                    if self.load.leaders(next) + 2 <= limit {
                        return Some(unwind(&reached_by, next, source));
                    }
                    queue.push_back(next);
                }
            }
        }
        None
    }

    /// The best Active node to join a partition that has `chosen` (which may name
    /// non-Active nodes too): the zone least used by `chosen`, then the zone with the fewest
    /// replicas per node, then the node with the fewest replicas and leaderships.
    pub(super) fn pick_replica(&self, chosen: &[u64]) -> Option<u64> {
        let zone_uses = |zone: &str| {
            chosen
                .iter()
                .filter(|c| self.zone_of.get(c).is_some_and(|z| *z == zone))
                .count()
        };
        let (_, members) = self
            .zones
            .iter()
            .filter(|(_, members)| members.iter().any(|m| !chosen.contains(m)))
            .min_by(|(za, ma), (zb, mb)| {
                zone_uses(za)
                    .cmp(&zone_uses(zb))
                    .then_with(|| self.per_node(ma, mb, |n| self.load.replicas(n)))
                    .then_with(|| za.cmp(zb))
            })?;
        members
            .iter()
            .copied()
            .filter(|m| !chosen.contains(m))
            .min_by_key(|m| (self.load.replicas(*m), self.load.leaders(*m), *m))
    }

    /// An Active node of `node`'s zone, not in `holding`, with at least two replicas fewer
    /// than `node`: the one with the fewest (then fewest leaderships, then smallest id).
    pub(super) fn lighter_in_zone(&self, node: u64, holding: &[u64]) -> Option<u64> {
        let members = self.zone_of.get(&node).and_then(|z| self.zones.get(z))?;
        let limit = self.load.replicas(node);
        members
            .iter()
            .copied()
            .filter(|m| !holding.contains(m) && self.load.replicas(*m) + 2 <= limit)
            .min_by_key(|m| (self.load.replicas(*m), self.load.leaders(*m), *m))
    }

    /// Orders candidate leaders: fewest preferred leaderships, then the zone with the
    /// fewest per node, then the smaller id.
    pub(super) fn compare_leaders(&self, a: u64, b: u64) -> Ordering {
        let members = |n: u64| {
            self.zone_of
                .get(&n)
                .and_then(|z| self.zones.get(z))
                .map_or(&[][..], Vec::as_slice)
        };
        self.load
            .leaders(a)
            .cmp(&self.load.leaders(b))
            .then_with(|| self.per_node(members(a), members(b), |n| self.load.leaders(n)))
            .then_with(|| a.cmp(&b))
    }

    /// Compares two zones' `count` per member node, exactly (cross-multiplied).
    fn per_node(&self, a: &[u64], b: &[u64], count: impl Fn(u64) -> u64) -> Ordering {
        let total = |zone: &[u64]| zone.iter().map(|n| count(*n)).sum::<u64>();
        let (a_total, b_total) = (total(a), total(b));
        (u128::from(a_total) * b.len() as u128).cmp(&(u128::from(b_total) * a.len() as u128))
    }
}
