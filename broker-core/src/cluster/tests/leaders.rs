//! The leaders partitions report ([`Command::SetPartitionLeader`]).

use super::fixtures::{accept, cluster, nodes, placed_topic, refuse};
use crate::cluster::{ClusterError, Command, PartitionLeader};

fn report(topic: &str, uid: u64, partition: u32, node: u64, term: u64) -> Command {
    Command::SetPartitionLeader {
        topic: topic.into(),
        uid,
        partition,
        node,
        term,
    }
}

#[test]
fn a_report_is_recorded_and_an_older_term_never_overwrites_it() {
    let mut state = cluster(&nodes(5, 3));
    let topic = placed_topic(&state, "t", 2, 3);
    let uid = topic.config.uid;
    accept(&mut state, Command::CreateTopic(topic));
    assert_eq!(state.partition_leader("t", 1), None);
    accept(&mut state, report("t", uid, 1, 4, 3));
    let recorded = Some(PartitionLeader { node: 4, term: 3 });
    assert_eq!(state.partition_leader("t", 1), recorded);
    // A deposed leader's late report changes nothing.
    let stale = refuse(&mut state, report("t", uid, 1, 2, 2));
    assert!(
        matches!(stale, ClusterError::StaleLeaderReport { term: 2, .. }),
        "{stale:?}"
    );
    assert_eq!(state.partition_leader("t", 1), recorded);
    accept(&mut state, report("t", uid, 1, 2, 4));
    assert_eq!(
        state.partition_leader("t", 1),
        Some(PartitionLeader { node: 2, term: 4 })
    );
    assert_eq!(state.partition_leader("t", 0), None);
}

#[test]
fn a_report_about_another_topic_incarnation_an_unknown_partition_or_node_is_refused() {
    let mut state = cluster(&nodes(5, 3));
    let topic = placed_topic(&state, "t", 2, 3);
    let uid = topic.config.uid;
    accept(&mut state, Command::CreateTopic(topic));
    let other_uid = refuse(&mut state, report("t", uid + 1, 0, 1, 1));
    assert!(
        matches!(other_uid, ClusterError::StaleLeaderReport { .. }),
        "{other_uid:?}"
    );
    let partition = refuse(&mut state, report("t", uid, 2, 1, 1));
    assert!(
        matches!(partition, ClusterError::PartitionNotFound { .. }),
        "{partition:?}"
    );
    let node = refuse(&mut state, report("t", uid, 0, 9, 1));
    assert!(
        matches!(node, ClusterError::UnknownNode { node: 9 }),
        "{node:?}"
    );
    let topic = refuse(&mut state, report("u", uid, 0, 1, 1));
    assert!(
        matches!(topic, ClusterError::TopicNotFound { .. }),
        "{topic:?}"
    );
}

#[test]
fn deleting_a_topic_forgets_its_leaders() {
    let mut state = cluster(&nodes(5, 3));
    let topic = placed_topic(&state, "t", 1, 3);
    let uid = topic.config.uid;
    accept(&mut state, Command::CreateTopic(topic));
    accept(&mut state, report("t", uid, 0, 1, 1));
    accept(&mut state, Command::DeleteTopic { name: "t".into() });
    assert_eq!(state.partition_leader("t", 0), None);
    assert_eq!(state.validate(), Ok(()));
}
