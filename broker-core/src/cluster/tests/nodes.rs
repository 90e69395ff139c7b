//! Node rules: join, drain, remove.

use super::fixtures::{accept, cluster, node, nodes, placed_topic, refuse};
use crate::cluster::{ClusterError, ClusterState, Command, NodeState};

#[test]
fn a_new_node_joins_and_an_upsert_replaces_its_record() {
    let mut state = cluster(&nodes(2, 2));
    let mut moved = node(2, "z9");
    moved.public_addr = "example:443".into();
    accept(&mut state, Command::UpsertNode(moved.clone()));
    assert_eq!(state.node(2), Some(&moved));
    assert_eq!(state.nodes().len(), 2);
}

#[test]
fn a_node_cannot_take_a_cluster_address_another_node_uses() {
    let mut state = cluster(&nodes(2, 1));
    let mut thief = node(3, "z0");
    thief.cluster_addr = node(1, "z0").cluster_addr;
    let error = refuse(&mut state, Command::UpsertNode(thief));
    assert_eq!(
        error,
        ClusterError::AddressInUse {
            node: 3,
            addr: "10.0.0.1:7001".into(),
            holder: 1
        }
    );
}

#[test]
fn the_first_node_cannot_join_draining() {
    let mut state = ClusterState::new();
    let mut first = node(1, "z0");
    first.state = NodeState::Draining;
    assert_eq!(
        refuse(&mut state, Command::UpsertNode(first)),
        ClusterError::LastNode { node: 1 }
    );
}

#[test]
fn draining_marks_the_node_and_is_idempotent() {
    let mut state = cluster(&nodes(2, 1));
    accept(&mut state, Command::DrainNode { id: 2 });
    assert_eq!(state.node(2).map(|n| n.state), Some(NodeState::Draining));
    accept(&mut state, Command::DrainNode { id: 2 });
    assert_eq!(state.active_count(), 1);
}

#[test]
fn draining_an_unknown_node_is_refused() {
    let mut state = cluster(&nodes(1, 1));
    assert_eq!(
        refuse(&mut state, Command::DrainNode { id: 9 }),
        ClusterError::UnknownNode { node: 9 }
    );
}

#[test]
fn the_last_active_node_cannot_drain() {
    let mut state = cluster(&nodes(2, 1));
    accept(&mut state, Command::DrainNode { id: 1 });
    assert_eq!(
        refuse(&mut state, Command::DrainNode { id: 2 }),
        ClusterError::LastNode { node: 2 }
    );
}

#[test]
fn a_drain_that_leaves_fewer_active_nodes_than_a_replication_factor_is_refused() {
    let mut state = cluster(&nodes(3, 3));
    let topic = placed_topic(&state, "orders", 2, 3);
    accept(&mut state, Command::CreateTopic(topic));
    assert_eq!(
        refuse(&mut state, Command::DrainNode { id: 3 }),
        ClusterError::TooFewActiveNodes {
            node: 3,
            topic: "orders".into(),
            replication_factor: 3,
            active_after: 2
        }
    );
    accept(&mut state, Command::UpsertNode(node(4, "z0")));
    accept(&mut state, Command::DrainNode { id: 3 });
}

#[test]
fn an_upsert_to_draining_is_held_to_the_drain_rules_and_back_to_active_cancels_a_drain() {
    let mut state = cluster(&nodes(2, 1));
    let topic = placed_topic(&state, "orders", 1, 2);
    accept(&mut state, Command::CreateTopic(topic));
    let mut draining = node(2, "z1");
    draining.state = NodeState::Draining;
    assert!(matches!(
        refuse(&mut state, Command::UpsertNode(draining.clone())),
        ClusterError::TooFewActiveNodes { node: 2, .. }
    ));
    accept(&mut state, Command::UpsertNode(node(3, "z2")));
    accept(&mut state, Command::UpsertNode(draining));
    accept(&mut state, Command::UpsertNode(node(2, "z1")));
    assert_eq!(state.active_count(), 3);
}

#[test]
fn a_node_without_replicas_is_removed() {
    let mut state = cluster(&nodes(2, 1));
    accept(&mut state, Command::RemoveNode { id: 2 });
    assert_eq!(state.node(2), None);
}

#[test]
fn removing_an_unknown_node_is_refused() {
    let mut state = cluster(&nodes(2, 1));
    assert_eq!(
        refuse(&mut state, Command::RemoveNode { id: 7 }),
        ClusterError::UnknownNode { node: 7 }
    );
}

#[test]
fn a_node_named_by_a_placement_cannot_be_removed() {
    let mut state = cluster(&nodes(3, 3));
    let topic = placed_topic(&state, "orders", 3, 1);
    accept(&mut state, Command::CreateTopic(topic));
    accept(&mut state, Command::DrainNode { id: 2 });
    let (topic, partition) = state.first_replica_on(2).expect("node 2 holds a replica");
    let (topic, partition) = (topic.to_owned(), partition);
    assert_eq!(
        refuse(&mut state, Command::RemoveNode { id: 2 }),
        ClusterError::NodeStillHoldsReplicas {
            node: 2,
            topic,
            partition
        }
    );
}

#[test]
fn the_last_node_cannot_be_removed() {
    let mut state = cluster(&nodes(1, 1));
    assert_eq!(
        refuse(&mut state, Command::RemoveNode { id: 1 }),
        ClusterError::LastNode { node: 1 }
    );
}

#[test]
fn the_last_active_node_cannot_be_removed_while_draining_ones_remain() {
    let mut state = cluster(&nodes(2, 1));
    accept(&mut state, Command::DrainNode { id: 2 });
    assert_eq!(
        refuse(&mut state, Command::RemoveNode { id: 1 }),
        ClusterError::LastNode { node: 1 }
    );
    accept(&mut state, Command::RemoveNode { id: 2 });
}

#[test]
fn removing_an_active_node_may_not_leave_fewer_than_a_replication_factor() {
    let mut state = cluster(&nodes(4, 2));
    let topic = placed_topic(&state, "orders", 1, 3);
    accept(&mut state, Command::CreateTopic(topic));
    let idle = (1..=4)
        .find(|id| state.first_replica_on(*id).is_none())
        .expect("one node holds nothing");
    let holder = state.topic("orders").expect("created").placement[0].replicas[0];
    accept(&mut state, Command::DrainNode { id: holder });
    assert!(matches!(
        refuse(&mut state, Command::RemoveNode { id: idle }),
        ClusterError::TooFewActiveNodes {
            replication_factor: 3,
            active_after: 2,
            ..
        }
    ));
}
