//! Plans for the controller leader: what to propose to drain a node or even out leaders.
//! Planning applies nothing; the commands it returns are checked again when applied.

use std::collections::BTreeMap;

use super::command::Command;
use super::node::NodeRecord;
use super::placement::{PartitionPlacement, PlacementLoad, Placer};
use super::state::ClusterState;

/// Hand a partition's leadership from one node to another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderMove {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: u32,
    /// The node leading it now.
    pub from: u64,
    /// The node that should lead it.
    pub to: u64,
}

/// The placement changes that move every replica off `node` onto other Active nodes.
///
/// Each replica of the node is replaced in place by the Active node the partition lacks
/// most: a zone the partition does not use yet, then the zone and node with the fewest
/// replicas, counting the moves planned before. The other replicas keep their positions,
/// so the preferred leader stays unless it was `node` (then the new replica takes its
/// place). A partition with no Active node left to take the replica is skipped; that cannot
/// happen for a draining node, since the state always keeps at least as many Active nodes as
/// any replication factor. Apply the commands in order.
pub fn plan_drain(state: &ClusterState, node: u64) -> Vec<Command> {
    let others: Vec<NodeRecord> = state
        .nodes()
        .values()
        .map(|n| as_draining_if(n, n.id == node))
        .collect();
    let mut placer = Placer::new(&others, PlacementLoad::of(state));
    let mut moves = Vec::new();
    for (name, topic) in state.topics() {
        for (partition, placement) in (0u32..).zip(&topic.placement) {
            let Some(position) = placement.replicas.iter().position(|r| *r == node) else {
                continue;
            };
            let staying: Vec<u64> = placement
                .replicas
                .iter()
                .copied()
                .filter(|r| *r != node)
                .collect();
            let Some(replacement) = placer.pick_replica(&staying) else {
                continue;
            };
            let mut moved = placement.clone();
            moved.replicas[position] = replacement;
            placer.load.remove(placement);
            placer.load.add(&moved);
            moves.push(Move {
                topic: name.clone(),
                partition,
                position,
                placement: moved,
            });
        }
    }
    even_out(&mut placer, &mut moves);
    moves
        .into_iter()
        .map(|m| Command::SetPlacement {
            topic: m.topic,
            partition: m.partition,
            replicas: m.placement.replicas,
        })
        .collect()
}

/// One planned replacement of the drained node.
struct Move {
    topic: String,
    partition: u32,
    /// Where in the replica list the drained node was.
    position: usize,
    /// The partition's replicas after the move.
    placement: PartitionPlacement,
}

/// Hands planned replacements from a node to a less loaded one of the same zone (so the
/// zone spread stays) that the partition does not hold, while one has at least two fewer
/// replicas. Earlier partitions chose their replacement before later ones were known; each
/// hand-over lowers the sum of squared replica counts, so the loop ends.
fn even_out(placer: &mut Placer<'_>, moves: &mut [Move]) {
    let mut changed = true;
    while changed {
        changed = false;
        for planned in moves.iter_mut() {
            let current = planned.placement.replicas[planned.position];
            let Some(better) = placer.lighter_in_zone(current, &planned.placement.replicas) else {
                continue;
            };
            placer.load.remove(&planned.placement);
            planned.placement.replicas[planned.position] = better;
            placer.load.add(&planned.placement);
            changed = true;
        }
    }
}

/// A copy of the record, Draining when `drain` so it takes nothing new.
fn as_draining_if(node: &NodeRecord, drain: bool) -> NodeRecord {
    let mut node = node.clone();
    if drain {
        node.state = super::node::NodeState::Draining;
    }
    node
}

/// The leadership moves that bring each partition's leader to where its placement wants it.
///
/// `current_leaders` names each partition's leader now; partitions missing from it (no
/// leader, an election under way) or unknown to the state are left alone. A partition should
/// be led by its preferred leader (the first replica) when that node is Active; when it is
/// not, a leader that is an Active replica stays, and any other leader hands over to the
/// first Active replica. Placement balances preferred leaders over nodes and zones, so these
/// moves balance the leaders.
pub fn plan_leader_balance(
    state: &ClusterState,
    current_leaders: &BTreeMap<(String, u32), u64>,
) -> Vec<LeaderMove> {
    current_leaders
        .iter()
        .filter_map(|((topic, partition), &from)| {
            let placement = state.topic(topic)?.placement.get(*partition as usize)?;
            let to = wanted_leader(state, placement, from)?;
            (to != from).then(|| LeaderMove {
                topic: topic.clone(),
                partition: *partition,
                from,
                to,
            })
        })
        .collect()
}

fn wanted_leader(
    state: &ClusterState,
    placement: &PartitionPlacement,
    current: u64,
) -> Option<u64> {
    let active = |node: u64| state.node(node).is_some_and(NodeRecord::is_active);
    let preferred = placement.preferred_leader()?;
    if active(preferred) {
        return Some(preferred);
    }
    if active(current) && placement.replicas.contains(&current) {
        return Some(current);
    }
    placement.replicas.iter().copied().find(|n| active(*n))
}
