//! The drain and leader-balance planners.

use std::collections::{BTreeMap, BTreeSet};

use super::fixtures::{accept, cluster, nodes, placed_topic};
use super::placement::{spread, zones_of};
use crate::cluster::{
    ClusterState, Command, LeaderMove, PlacementLoad, plan_drain, plan_leader_balance,
};

fn with_topic(members: u64, zones: u64, partitions: u32, rf: u32) -> ClusterState {
    let mut state = cluster(&nodes(members, zones));
    let topic = placed_topic(&state, "t", partitions, rf);
    accept(&mut state, Command::CreateTopic(topic));
    state
}

/// Drains `node`, applies its plan and removes it; returns the state before and after.
fn drain_and_remove(state: &mut ClusterState, node: u64) -> ClusterState {
    accept(state, Command::DrainNode { id: node });
    let before = state.clone();
    for command in plan_drain(state, node) {
        accept(state, command);
    }
    assert_eq!(state.first_replica_on(node), None);
    accept(state, Command::RemoveNode { id: node });
    before
}

#[test]
fn a_drain_plan_moves_every_replica_to_the_same_zone_in_place() {
    let mut state = with_topic(6, 3, 6, 3);
    let before = drain_and_remove(&mut state, 1);
    let all = nodes(6, 3);
    let (old, new) = (before.topic("t").expect("t"), state.topic("t").expect("t"));
    for (was, now) in old.placement.iter().zip(&new.placement) {
        assert_eq!(zones_of(&all, now).len(), 3, "{now:?}");
        for (a, b) in was.replicas.iter().zip(&now.replicas) {
            let expected = if *a == 1 { 4 } else { *a };
            assert_eq!(*b, expected, "{was:?} became {now:?}");
        }
    }
}

#[test]
fn a_drain_plan_spreads_the_moved_replicas_over_the_other_nodes() {
    let mut state = with_topic(4, 1, 10, 1);
    drain_and_remove(&mut state, 1);
    let load = PlacementLoad::of(&state);
    let replicas: Vec<u64> = (2..=4).map(|id| load.replicas(id)).collect();
    assert!(spread(&replicas) <= 1, "{replicas:?}");
    assert_eq!(replicas.iter().sum::<u64>(), 10);
}

#[test]
fn a_drain_plan_avoids_the_nodes_a_partition_holds_and_uses_the_others() {
    // Node 1 shares three partitions with node 3, so those can only go to 2 or 4.
    let mut state = with_topic(4, 1, 9, 2);
    accept(&mut state, Command::DrainNode { id: 1 });
    let old = state.topic("t").expect("t").placement.clone();
    let mut targets = BTreeMap::<u64, u32>::new();
    for command in plan_drain(&state, 1) {
        let Command::SetPlacement {
            partition,
            replicas,
            ..
        } = command
        else {
            panic!("a drain plan only sets placements: {command:?}");
        };
        let was = &old[partition as usize].replicas;
        for added in replicas.iter().filter(|r| !was.contains(r)) {
            *targets.entry(*added).or_default() += 1;
        }
    }
    assert_eq!(targets.values().sum::<u32>(), 4, "{targets:?}");
    assert!(targets.values().all(|n| *n <= 2), "{targets:?}");
    drain_and_remove(&mut state, 1);
    let load = PlacementLoad::of(&state);
    let replicas: Vec<u64> = (2..=4).map(|id| load.replicas(id)).collect();
    assert!(spread(&replicas) <= 2, "{replicas:?}");
}

#[test]
fn a_drained_preferred_leader_is_replaced_in_its_position() {
    let mut state = with_topic(3, 3, 3, 2);
    accept(
        &mut state,
        Command::UpsertNode(super::fixtures::node(4, "z3")),
    );
    let led_by_one: BTreeSet<u32> = (0u32..)
        .zip(&state.topic("t").expect("t").placement)
        .filter(|(_, p)| p.preferred_leader() == Some(1))
        .map(|(i, _)| i)
        .collect();
    assert!(!led_by_one.is_empty());
    drain_and_remove(&mut state, 1);
    let placement = &state.topic("t").expect("t").placement;
    for partition in led_by_one {
        let leader = placement[partition as usize].preferred_leader();
        assert_eq!(leader, Some(4), "partition {partition}");
    }
}

#[test]
fn a_node_without_replicas_needs_no_moves() {
    let mut state = with_topic(4, 2, 2, 1);
    let idle = (1..=4)
        .find(|id| state.first_replica_on(*id).is_none())
        .expect("an idle node");
    accept(&mut state, Command::DrainNode { id: idle });
    assert_eq!(plan_drain(&state, idle), vec![]);
}

#[test]
fn draining_one_node_after_another_keeps_the_state_valid() {
    let mut state = with_topic(7, 3, 12, 3);
    for node in [2, 5, 7, 1] {
        drain_and_remove(&mut state, node);
    }
    // Zone z1 held nodes 2 and 5 only: two zones remain.
    let remaining: Vec<_> = state.nodes().values().cloned().collect();
    for p in &state.topic("t").expect("t").placement {
        assert_eq!(zones_of(&remaining, p).len(), 2, "{p:?}");
    }
}

fn leaders(entries: &[(u32, u64)]) -> BTreeMap<(String, u32), u64> {
    entries
        .iter()
        .map(|(partition, leader)| (("t".to_owned(), *partition), *leader))
        .collect()
}

fn preferred(state: &ClusterState, partition: u32) -> u64 {
    state.topic("t").expect("t").placement[partition as usize]
        .preferred_leader()
        .expect("a replica")
}

#[test]
fn leaders_move_to_their_preferred_replica() {
    let state = with_topic(3, 3, 3, 3);
    let current = leaders(&[(0, 1), (1, 1), (2, 1)]);
    let moves = plan_leader_balance(&state, &current);
    let expected: Vec<LeaderMove> = (0..3)
        .filter(|p| preferred(&state, *p) != 1)
        .map(|partition| LeaderMove {
            topic: "t".into(),
            partition,
            from: 1,
            to: preferred(&state, partition),
        })
        .collect();
    assert_eq!(moves, expected);
    assert_eq!(moves.len(), 2);
}

#[test]
fn leaders_already_preferred_and_unknown_partitions_are_left_alone() {
    let state = with_topic(3, 3, 2, 3);
    let mut current = leaders(&[(0, preferred(&state, 0)), (7, 2)]);
    current.insert(("gone".into(), 0), 3);
    assert_eq!(plan_leader_balance(&state, &current), vec![]);
}

#[test]
fn a_draining_preferred_leader_gives_way_to_an_active_replica() {
    let mut state = with_topic(4, 4, 1, 3);
    let replicas = state.topic("t").expect("t").placement[0].replicas.clone();
    accept(&mut state, Command::DrainNode { id: replicas[0] });
    let moves = plan_leader_balance(&state, &leaders(&[(0, replicas[0])]));
    assert_eq!(
        moves,
        vec![LeaderMove {
            topic: "t".into(),
            partition: 0,
            from: replicas[0],
            to: replicas[1]
        }]
    );
    assert_eq!(
        plan_leader_balance(&state, &leaders(&[(0, replicas[2])])),
        vec![],
        "an active replica leading stays"
    );
}
