//! Topic and placement rules.

use super::fixtures::{accept, cluster, nodes, placed_topic, refuse, topic_config};
use crate::cluster::{
    ClusterError, Command, NodeRecord, NodeState, PartitionPlacement, PlacementFault, TopicRecord,
};
use crate::limits::MAX_PARTITIONS;

/// An edit of a topic config.
type Change = fn(&mut crate::topic::TopicConfig);

fn record(name: &str, replicas: &[&[u64]]) -> TopicRecord {
    let rf = replicas.first().map_or(1, |r| r.len() as u32);
    TopicRecord {
        config: topic_config(name, replicas.len() as u32, rf),
        placement: replicas
            .iter()
            .map(|r| PartitionPlacement {
                replicas: r.to_vec(),
            })
            .collect(),
    }
}

fn bad(topic: &str, partition: u32, reason: PlacementFault) -> ClusterError {
    ClusterError::BadPlacement {
        topic: topic.into(),
        partition,
        reason,
    }
}

#[test]
fn a_topic_placed_on_active_nodes_is_created() {
    let mut state = cluster(&nodes(3, 3));
    accept(
        &mut state,
        Command::CreateTopic(record("t", &[&[1, 2], &[2, 3]])),
    );
    assert_eq!(state.topic("t").map(|t| t.placement.len()), Some(2));
}

#[test]
fn a_second_topic_of_the_same_name_is_refused() {
    let mut state = cluster(&nodes(3, 3));
    accept(&mut state, Command::CreateTopic(record("t", &[&[1]])));
    assert_eq!(
        refuse(&mut state, Command::CreateTopic(record("t", &[&[2]]))),
        ClusterError::TopicExists { topic: "t".into() }
    );
}

#[test]
fn a_placement_list_must_have_one_entry_per_partition() {
    let mut state = cluster(&nodes(3, 3));
    let mut topic = record("t", &[&[1], &[2]]);
    topic.config.partitions = 3;
    assert_eq!(
        refuse(&mut state, Command::CreateTopic(topic)),
        ClusterError::PlacementCount {
            topic: "t".into(),
            partitions: 3,
            placements: 2
        }
    );
}

#[test]
fn partition_counts_are_bounded_on_both_sides() {
    let mut state = cluster(&nodes(1, 1));
    for partitions in [0, MAX_PARTITIONS + 1] {
        let replicas: Vec<&[u64]> = vec![&[1]; partitions as usize];
        let topic = record("t", &replicas);
        assert_eq!(
            refuse(&mut state, Command::CreateTopic(topic)),
            ClusterError::PartitionCount {
                partitions,
                max: MAX_PARTITIONS
            }
        );
    }
    let replicas: Vec<&[u64]> = vec![&[1]; MAX_PARTITIONS as usize];
    accept(&mut state, Command::CreateTopic(record("t", &replicas)));
}

#[test]
fn a_replication_factor_of_zero_is_refused() {
    let mut state = cluster(&nodes(1, 1));
    assert_eq!(
        refuse(&mut state, Command::CreateTopic(record("t", &[&[]]))),
        ClusterError::ReplicationFactorZero
    );
}

#[test]
fn a_replication_factor_above_the_active_nodes_is_refused() {
    let mut state = cluster(&nodes(3, 3));
    accept(&mut state, Command::DrainNode { id: 3 });
    assert_eq!(
        refuse(&mut state, Command::CreateTopic(record("t", &[&[1, 2, 3]]))),
        ClusterError::ReplicationFactorTooHigh {
            replication_factor: 3,
            nodes: 2
        }
    );
    accept(&mut state, Command::CreateTopic(record("t", &[&[1, 2]])));
}

#[test]
fn each_partition_needs_replication_factor_distinct_known_active_replicas() {
    let mut state = cluster(&nodes(4, 2));
    accept(&mut state, Command::DrainNode { id: 4 });
    let cases: [(&[u64], PlacementFault); 4] = [
        (
            &[1],
            PlacementFault::ReplicaCount {
                expected: 2,
                got: 1,
            },
        ),
        (&[1, 1], PlacementFault::DuplicateReplica { node: 1 }),
        (&[1, 9], PlacementFault::UnknownNode { node: 9 }),
        (&[1, 4], PlacementFault::NodeNotActive { node: 4 }),
    ];
    for (replicas, reason) in cases {
        let mut topic = record("t", &[&[1, 2], replicas]);
        topic.config.replication_factor = 2;
        assert_eq!(
            refuse(&mut state, Command::CreateTopic(topic)),
            bad("t", 1, reason)
        );
    }
}

#[test]
fn an_update_replaces_the_settings_but_not_the_fixed_ones() {
    let mut state = cluster(&nodes(2, 2));
    accept(&mut state, Command::CreateTopic(record("t", &[&[1, 2]])));
    let stored = state.topic("t").expect("created").config.clone();
    let mut config = stored.clone();
    config.retention_ms = Some(3_600_000);
    accept(
        &mut state,
        Command::UpdateTopic {
            config: config.clone(),
        },
    );
    assert_eq!(state.topic("t").map(|t| &t.config), Some(&config));
    let changes: [(&str, Change); 4] = [
        ("partitions", |c| c.partitions += 1),
        ("replication_factor", |c| c.replication_factor = 1),
        ("uid", |c| c.uid += 1),
        ("created_ms", |c| c.created_ms += 1),
    ];
    for (field, change) in changes {
        let mut changed = config.clone();
        change(&mut changed);
        let error = refuse(&mut state, Command::UpdateTopic { config: changed });
        assert!(
            matches!(error, ClusterError::ImmutableTopicField { field: f, .. } if f == field),
            "{field}: {error:?}"
        );
    }
}

#[test]
fn updating_or_deleting_an_unknown_topic_is_refused() {
    let mut state = cluster(&nodes(1, 1));
    let missing = ClusterError::TopicNotFound { topic: "t".into() };
    let config = topic_config("t", 1, 1);
    assert_eq!(refuse(&mut state, Command::UpdateTopic { config }), missing);
    assert_eq!(
        refuse(&mut state, Command::DeleteTopic { name: "t".into() }),
        missing
    );
}

#[test]
fn set_placement_replaces_one_partition() {
    let mut state = cluster(&nodes(3, 3));
    accept(
        &mut state,
        Command::CreateTopic(record("t", &[&[1, 2], &[2, 3]])),
    );
    accept(
        &mut state,
        Command::SetPlacement {
            topic: "t".into(),
            partition: 1,
            replicas: vec![3, 1],
        },
    );
    let topic = state.topic("t").expect("created");
    assert_eq!(topic.placement[1].replicas, vec![3, 1]);
    assert_eq!(topic.placement[0].replicas, vec![1, 2]);
}

#[test]
fn set_placement_may_keep_a_draining_replica_but_not_add_one() {
    let mut state = cluster(&nodes(4, 2));
    accept(&mut state, Command::CreateTopic(record("t", &[&[1, 2]])));
    accept(&mut state, Command::DrainNode { id: 2 });
    accept(&mut state, Command::DrainNode { id: 4 });
    let set = |replicas: Vec<u64>| Command::SetPlacement {
        topic: "t".into(),
        partition: 0,
        replicas,
    };
    accept(&mut state, set(vec![2, 1]));
    assert_eq!(
        refuse(&mut state, set(vec![2, 4])),
        bad("t", 0, PlacementFault::NodeNotActive { node: 4 })
    );
    accept(&mut state, set(vec![3, 1]));
}

#[test]
fn set_placement_checks_topic_partition_and_replicas() {
    let mut state = cluster(&nodes(3, 3));
    accept(&mut state, Command::CreateTopic(record("t", &[&[1, 2]])));
    let set = |topic: &str, partition, replicas: Vec<u64>| Command::SetPlacement {
        topic: topic.into(),
        partition,
        replicas,
    };
    assert_eq!(
        refuse(&mut state, set("u", 0, vec![1, 2])),
        ClusterError::TopicNotFound { topic: "u".into() }
    );
    assert_eq!(
        refuse(&mut state, set("t", 1, vec![1, 2])),
        ClusterError::PartitionNotFound {
            topic: "t".into(),
            partition: 1,
            partitions: 1
        }
    );
    assert_eq!(
        refuse(&mut state, set("t", 0, vec![1, 2, 3])),
        bad(
            "t",
            0,
            PlacementFault::ReplicaCount {
                expected: 2,
                got: 3
            }
        )
    );
    assert_eq!(
        refuse(&mut state, set("t", 0, vec![3, 3])),
        bad("t", 0, PlacementFault::DuplicateReplica { node: 3 })
    );
    assert_eq!(
        refuse(&mut state, set("t", 0, vec![3, 8])),
        bad("t", 0, PlacementFault::UnknownNode { node: 8 })
    );
}

#[test]
fn validate_finds_a_state_that_commands_cannot_produce() {
    let mut state = cluster(&nodes(2, 1));
    let topic = placed_topic(&state, "t", 1, 2);
    accept(&mut state, Command::CreateTopic(topic));
    let mut broken = state.clone();
    if let Some(topic) = broken.topics.get_mut("t") {
        topic.placement[0].replicas = vec![1, 1];
    }
    assert!(matches!(
        broken.validate(),
        Err(ClusterError::BadPlacement { .. })
    ));
    let mut broken = state.clone();
    broken.nodes.insert(
        5,
        NodeRecord {
            state: NodeState::Draining,
            ..super::fixtures::node(6, "z0")
        },
    );
    assert!(matches!(
        broken.validate(),
        Err(ClusterError::KeyMismatch { .. })
    ));
}

#[test]
fn a_changed_placement_marks_its_partition_moved_until_the_topic_is_deleted() {
    let mut state = cluster(&nodes(4, 4));
    accept(
        &mut state,
        Command::CreateTopic(record("t", &[&[1, 2], &[2, 3]])),
    );
    assert!(state.moved_partitions("t").is_empty());
    // The same replicas again change nothing.
    let same = Command::SetPlacement {
        topic: "t".into(),
        partition: 0,
        replicas: vec![1, 2],
    };
    accept(&mut state, same);
    assert!(state.moved_partitions("t").is_empty());
    let moved = Command::SetPlacement {
        topic: "t".into(),
        partition: 1,
        replicas: vec![2, 4],
    };
    accept(&mut state, moved);
    assert_eq!(
        state.moved_partitions("t").into_iter().collect::<Vec<_>>(),
        vec![1]
    );
    accept(&mut state, Command::DeleteTopic { name: "t".into() });
    assert!(state.moved_partitions("t").is_empty());
}
