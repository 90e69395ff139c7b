//! A replica moved off a node is dropped there: four cluster nodes in one process, a
//! one-partition topic on three. Draining one of its replicas moves the replica to the fourth
//! node; the drained node then stops its group, no longer holds the partition (its requests
//! are refused naming the leader, which the gateway forwards to) and keeps only the empty log
//! a node that never held the partition keeps. Moving the replica back seats a fresh group,
//! which catches up with the leader's data.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use broker_core::BrokerError;
use broker_core::broker::AckMode;
use broker_core::cluster_node::ClusterNode;
use broker_core::topic::TopicSpec;

mod raft_support;
use raft_support::Net;
use raft_support::nodes::{node_record, read_own_replica, start_cluster_node, text_message};

const NODES: u64 = 4;
const TOPIC: &str = "moving";
const MESSAGES: usize = 10;

async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..150 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within 15 s");
}

/// Each file of `dir` (a partition's directory), with whether it holds any data (a byte
/// other than zero: a new segment is zeroed ahead of its writes).
fn listing(dir: &Path) -> BTreeMap<String, bool> {
    std::fs::read_dir(dir)
        .expect("a partition directory")
        .map(|entry| {
            let entry = entry.expect("an entry");
            let bytes = std::fs::read(entry.path()).expect("readable");
            let name = entry.file_name().to_string_lossy().into_owned();
            (name, bytes.iter().any(|b| *b != 0))
        })
        .collect()
}

fn replicas(node: &ClusterNode) -> Vec<u64> {
    node.state().topic(TOPIC).expect("placed").placement[0]
        .replicas
        .clone()
}

/// The values of partition 0 as `node`'s own replica holds them.
async fn values(node: &ClusterNode) -> Vec<Vec<u8>> {
    read_own_replica(node.broker(), TOPIC, 0, 0, 1_000)
        .await
        .messages
        .iter()
        .map(|m| m.record.value.to_vec())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_moved_away_is_dropped_and_a_move_back_catches_up() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let peers: Vec<u64> = (1..=NODES).collect();
    let mut nodes = Vec::new();
    for id in 1..=NODES {
        let me = node_record(id, format!("zone-{id}"), 7300);
        nodes.push(start_cluster_node(me, root.path(), &net, &peers, false, |_| {}).await);
    }
    until("every node registered and ready", || {
        nodes
            .iter()
            .all(|n| n.ready() && n.state().nodes().len() == NODES as usize)
    })
    .await;
    let by_id = |id: u64| Arc::clone(&nodes[(id - 1) as usize]);
    let controller = nodes
        .iter()
        .find(|n| n.controller_leader() == Some(n.node_id()))
        .cloned()
        .expect("a controller leader");
    let spec = TopicSpec {
        name: TOPIC.into(),
        partitions: Some(1),
        ..TopicSpec::default()
    };
    controller.create_topic(spec).await.expect("created");
    let before = replicas(&controller);
    let outsider = by_id(
        *peers
            .iter()
            .find(|p| !before.contains(p))
            .expect("outsider"),
    );
    let moved = by_id(
        *before
            .iter()
            .find(|r| **r != controller.node_id())
            .expect("a replica that does not lead the controller"),
    );
    until("the replicas agree on a leader", || {
        before
            .iter()
            .all(|r| by_id(*r).broker().partition_leader(TOPIC, 0).is_some())
    })
    .await;
    let leader = moved.broker().partition_leader(TOPIC, 0).expect("leader");
    for i in 0..MESSAGES {
        by_id(leader)
            .broker()
            .produce(TOPIC, vec![text_message(format!("m{i}"))], AckMode::All)
            .await
            .expect("produced");
    }
    let never_held = listing(&outsider.broker().partition_dir(TOPIC, 0).expect("dir"));
    let dir = moved.broker().partition_dir(TOPIC, 0).expect("dir");
    assert_ne!(
        listing(&dir),
        never_held,
        "the replica has data before the move"
    );

    let report = controller
        .drain_node(moved.node_id())
        .await
        .expect("drained");
    assert!(report.leaders.failed.is_empty(), "{report:?}");
    assert_eq!(report.replicas_kept, 0, "{report:?}");
    let after = replicas(&controller);
    assert!(!after.contains(&moved.node_id()), "{after:?}");
    until("the moved-off node drops its replica", || {
        !moved.broker().holds_partition(TOPIC, 0)
            && moved.broker().partition_status(TOPIC, 0).is_none()
            && listing(&dir) == never_held
    })
    .await;

    // Requests through the node are refused naming a leader among the new replicas (the
    // gateway forwards them there), and write nothing here.
    until("the moved-off node knows the leader", || {
        moved
            .broker()
            .partition_leader(TOPIC, 0)
            .is_some_and(|l| after.contains(&l))
    })
    .await;
    match moved
        .broker()
        .produce(TOPIC, vec![text_message("late".into())], AckMode::All)
        .await
    {
        Err(BrokerError::NotLeader {
            leader: Some(leader),
            ..
        }) => assert!(after.contains(&leader), "{leader} not in {after:?}"),
        other => panic!("a produce on the moved-off node: {other:?}"),
    }
    match moved
        .broker()
        .read_partition(TOPIC, 0, 0, 10, 0, None)
        .await
    {
        Err(BrokerError::NotLeader {
            leader: Some(_), ..
        }) => {}
        other => panic!("a read on the moved-off node: {other:?}"),
    }
    assert_eq!(listing(&dir), never_held, "a refused request wrote nothing");

    // Back: the node is Active again, and draining another replica (not the controller's
    // leader) moves that replica to it, the only Active node outside the group.
    controller
        .undrain_node(moved.node_id())
        .await
        .expect("active again");
    let leaving = *after
        .iter()
        .find(|r| **r != controller.node_id())
        .expect("a replica that does not lead the controller");
    let report = controller.drain_node(leaving).await.expect("drained");
    assert!(report.leaders.failed.is_empty(), "{report:?}");
    assert!(replicas(&controller).contains(&moved.node_id()));
    until("the node holds the partition again", || {
        moved.broker().holds_partition(TOPIC, 0)
    })
    .await;
    let leader = moved.broker().partition_leader(TOPIC, 0).expect("leader");
    let expected = values(&by_id(leader)).await;
    assert_eq!(expected.len(), MESSAGES);
    let mut caught_up = Vec::new();
    for _ in 0..100 {
        caught_up = values(&moved).await;
        if caught_up == expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(caught_up, expected, "the replica moved back caught up");

    for node in &nodes {
        node.shutdown().await;
        node.broker().shutdown().await;
    }
}
