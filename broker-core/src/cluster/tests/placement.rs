//! Placement: zone spread, balance of replicas and preferred leaders, determinism.

use std::collections::{BTreeMap, BTreeSet};

use super::fixtures::{accept, cluster, node, nodes, placed_topic};
use crate::cluster::{
    ClusterError, Command, NodeRecord, NodeState, PartitionPlacement, PlacementLoad,
    default_replication_factor, place, place_led_by,
};

/// Replicas and preferred leaderships per node, every given node counted (zeros too).
pub fn counts(
    members: &[NodeRecord],
    placement: &[PartitionPlacement],
) -> (BTreeMap<u64, u64>, BTreeMap<u64, u64>) {
    let mut load = PlacementLoad::default();
    for p in placement {
        load.add(p);
    }
    let replicas = members
        .iter()
        .map(|n| (n.id, load.replicas(n.id)))
        .collect();
    let leaders = members.iter().map(|n| (n.id, load.leaders(n.id))).collect();
    (replicas, leaders)
}

/// Largest minus smallest count.
pub fn spread<'a>(counts: impl IntoIterator<Item = &'a u64>) -> u64 {
    let counts: Vec<u64> = counts.into_iter().copied().collect();
    counts.iter().max().unwrap_or(&0) - counts.iter().min().unwrap_or(&0)
}

/// The distinct zones of a partition's replicas.
pub fn zones_of(members: &[NodeRecord], placement: &PartitionPlacement) -> BTreeSet<String> {
    placement
        .replicas
        .iter()
        .filter_map(|r| members.iter().find(|n| n.id == *r))
        .map(|n| n.zone.clone())
        .collect()
}

#[test]
fn three_nodes_in_three_zones_get_one_replica_per_zone_and_a_third_of_the_leaders() {
    let members = nodes(3, 3);
    let placement = place(&members, &PlacementLoad::default(), 6, 3).expect("placeable");
    for p in &placement {
        assert_eq!(zones_of(&members, p).len(), 3, "{p:?}");
    }
    let (replicas, leaders) = counts(&members, &placement);
    assert!(replicas.values().all(|r| *r == 6));
    assert!(leaders.values().all(|l| *l == 2), "{leaders:?}");
}

#[test]
fn five_nodes_in_three_zones_spread_every_partition_over_three_zones() {
    // Zones z0 {1, 4}, z1 {2, 5}, z2 {3}: with RF 3 every partition needs node 3, so replica
    // counts can only be even within each zone; leaders can be even everywhere.
    let members = nodes(5, 3);
    let placement = place(&members, &PlacementLoad::default(), 10, 3).expect("placeable");
    for p in &placement {
        assert_eq!(zones_of(&members, p).len(), 3, "{p:?}");
    }
    let (replicas, leaders) = counts(&members, &placement);
    assert_eq!(replicas[&3], 10);
    assert!(spread([&replicas[&1], &replicas[&4]]) <= 1, "{replicas:?}");
    assert!(spread([&replicas[&2], &replicas[&5]]) <= 1, "{replicas:?}");
    assert!(spread(leaders.values()) <= 1, "{leaders:?}");
}

#[test]
fn six_nodes_in_three_zones_balance_replicas_and_leaders_within_one() {
    let members = nodes(6, 3);
    for partitions in [1, 5, 7, 12] {
        let placement =
            place(&members, &PlacementLoad::default(), partitions, 3).expect("placeable");
        for p in &placement {
            assert_eq!(zones_of(&members, p).len(), 3, "{p:?}");
        }
        let (replicas, leaders) = counts(&members, &placement);
        assert!(spread(replicas.values()) <= 1, "{partitions}: {replicas:?}");
        assert!(spread(leaders.values()) <= 1, "{partitions}: {leaders:?}");
    }
}

#[test]
fn two_zones_with_three_replicas_use_both_zones_and_no_node_twice() {
    let members = nodes(4, 2);
    let placement = place(&members, &PlacementLoad::default(), 8, 3).expect("placeable");
    for p in &placement {
        assert_eq!(zones_of(&members, p).len(), 2, "{p:?}");
        let distinct: BTreeSet<_> = p.replicas.iter().collect();
        assert_eq!(distinct.len(), 3, "{p:?}");
    }
    let (replicas, leaders) = counts(&members, &placement);
    assert!(spread(replicas.values()) <= 1, "{replicas:?}");
    assert!(spread(leaders.values()) <= 1, "{leaders:?}");
}

#[test]
fn a_replication_factor_above_the_active_nodes_is_refused() {
    let mut members = nodes(4, 2);
    members[3].state = NodeState::Draining;
    assert_eq!(
        place(&members, &PlacementLoad::default(), 1, 4),
        Err(ClusterError::ReplicationFactorTooHigh {
            replication_factor: 4,
            nodes: 3
        })
    );
    let placement = place(&members, &PlacementLoad::default(), 4, 3).expect("placeable");
    assert!(placement.iter().all(|p| !p.replicas.contains(&4)));
}

#[test]
fn shapes_outside_the_limits_are_refused() {
    let members = nodes(3, 3);
    let load = PlacementLoad::default();
    assert_eq!(
        place(&members, &load, 1, 0),
        Err(ClusterError::ReplicationFactorZero)
    );
    assert!(matches!(
        place(&members, &load, 0, 1),
        Err(ClusterError::PartitionCount { partitions: 0, .. })
    ));
}

#[test]
fn a_second_topic_goes_where_the_first_left_room() {
    let mut state = cluster(&nodes(3, 1));
    let first = placed_topic(&state, "first", 4, 1);
    accept(&mut state, Command::CreateTopic(first));
    let load = PlacementLoad::of(&state);
    let heavy = (1..=3)
        .find(|id| load.replicas(*id) == 2)
        .expect("one node holds two");
    let second = placed_topic(&state, "second", 2, 1);
    assert!(
        second.placement.iter().all(|p| p.replicas != vec![heavy]),
        "{second:?}"
    );
    accept(&mut state, Command::CreateTopic(second));
    let load = PlacementLoad::of(&state);
    for id in 1..=3 {
        assert_eq!((load.replicas(id), load.leaders(id)), (2, 2), "node {id}");
    }
}

#[test]
fn topics_placed_one_after_another_stay_balanced() {
    let mut state = cluster(&nodes(3, 1));
    for name in ["a", "b", "c"] {
        let topic = placed_topic(&state, name, 1, 2);
        accept(&mut state, Command::CreateTopic(topic));
    }
    let load = PlacementLoad::of(&state);
    for id in 1..=3 {
        assert_eq!((load.replicas(id), load.leaders(id)), (2, 1), "node {id}");
    }
}

#[test]
fn the_same_input_gives_the_same_placement_whatever_the_node_order() {
    let members = nodes(7, 3);
    let mut load = PlacementLoad::default();
    load.add(&PartitionPlacement {
        replicas: vec![5, 6],
    });
    let once = place(&members, &load, 9, 3).expect("placeable");
    assert_eq!(place(&members, &load, 9, 3), Ok(once.clone()));
    let mut reversed = members.clone();
    reversed.reverse();
    assert_eq!(place(&reversed, &load, 9, 3), Ok(once));
}

#[test]
fn the_default_replication_factor_is_three_or_every_node() {
    assert_eq!(default_replication_factor(1), 1);
    assert_eq!(default_replication_factor(2), 2);
    assert_eq!(default_replication_factor(3), 3);
    assert_eq!(default_replication_factor(9), 3);
}

#[test]
fn a_single_node_takes_every_partition() {
    let members = [node(7, "only")];
    let placement = place(&members, &PlacementLoad::default(), 3, 1).expect("placeable");
    assert!(placement.iter().all(|p| p.replicas == vec![7]));
}

#[test]
fn a_partition_led_by_a_given_node_has_it_first_and_distinct_replicas_elsewhere() {
    let members = nodes(5, 3);
    for leader in 1..=5 {
        let placed =
            place_led_by(&members, &PlacementLoad::default(), 3, leader).expect("placeable");
        assert_eq!(placed.preferred_leader(), Some(leader));
        let distinct: BTreeSet<u64> = placed.replicas.iter().copied().collect();
        assert_eq!(distinct.len(), 3, "{placed:?}");
    }
    let alone = place_led_by(&members, &PlacementLoad::default(), 1, 4).expect("placeable");
    assert_eq!(alone.replicas, vec![4]);
    assert_eq!(
        place_led_by(&members, &PlacementLoad::default(), 3, 9),
        Err(ClusterError::UnknownNode { node: 9 })
    );
    assert!(matches!(
        place_led_by(&members, &PlacementLoad::default(), 6, 1),
        Err(ClusterError::ReplicationFactorTooHigh { .. })
    ));
}
