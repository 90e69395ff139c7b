//! Builders of valid records for the tests.

use crate::cluster::{
    ClusterState, Command, NodeRecord, NodeState, PlacementLoad, TopicRecord, place,
};
use crate::subscription::{SubscriptionConfig, SubscriptionSpec};
use crate::topic::{TopicConfig, TopicSpec};

/// An Active node in a zone.
pub fn node(id: u64, zone: &str) -> NodeRecord {
    NodeRecord {
        id,
        zone: zone.to_owned(),
        cluster_addr: format!("10.0.0.{id}:7001"),
        public_addr: format!("10.0.0.{id}:8080"),
        state: NodeState::Active,
        joined_ms: 1_000 + id,
    }
}

/// `count` nodes with ids from 1, over `zones` zones named z0, z1, … in turn.
pub fn nodes(count: u64, zones: u64) -> Vec<NodeRecord> {
    (1..=count)
        .map(|id| node(id, &format!("z{}", (id - 1) % zones)))
        .collect()
}

/// A topic config valid but for the shape, which is set as given (the controller checks it).
pub fn topic_config(name: &str, partitions: u32, replication_factor: u32) -> TopicConfig {
    let mut config = TopicSpec {
        name: name.to_owned(),
        ..TopicSpec::default()
    }
    .into_config(5_000, 42)
    .expect("a valid spec");
    config.partitions = partitions;
    config.replication_factor = replication_factor;
    config
}

/// A topic record placed by [`place`] on the state's Active nodes, counting its load.
pub fn placed_topic(
    state: &ClusterState,
    name: &str,
    partitions: u32,
    replication_factor: u32,
) -> TopicRecord {
    let placement = place(
        &state.active_nodes(),
        &PlacementLoad::of(state),
        partitions,
        replication_factor,
    )
    .expect("placeable");
    TopicRecord {
        config: topic_config(name, partitions, replication_factor),
        placement,
    }
}

/// A valid subscription config.
pub fn subscription(topic: &str, name: &str) -> SubscriptionConfig {
    SubscriptionSpec {
        name: name.to_owned(),
        ..SubscriptionSpec::default()
    }
    .into_config(topic, 6_000, 7)
    .expect("a valid spec")
}

/// Applies a command that must be accepted, then checks the invariants.
pub fn accept(state: &mut ClusterState, command: Command) {
    state
        .apply(&command)
        .unwrap_or_else(|e| panic!("{command:?} refused: {e}"));
    state.validate().expect("valid after an accepted command");
}

/// Applies a command that must be refused, checks the state is unchanged, returns the error.
pub fn refuse(state: &mut ClusterState, command: Command) -> crate::cluster::ClusterError {
    let before = serde_json::to_string(state).expect("serializable");
    let error = state
        .apply(&command)
        .expect_err("the command should be refused");
    assert_eq!(
        serde_json::to_string(state).expect("serializable"),
        before,
        "a refused {command:?} changed the state"
    );
    state.validate().expect("valid after a refused command");
    error
}

/// A cluster of these nodes, all Active.
pub fn cluster(members: &[NodeRecord]) -> ClusterState {
    let mut state = ClusterState::new();
    for member in members {
        accept(&mut state, Command::UpsertNode(member.clone()));
    }
    state
}
