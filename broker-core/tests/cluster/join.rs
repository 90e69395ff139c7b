//! A node added to a running cluster (`join`): it does not form a controller group of its
//! own, it registers through a peer, and the controller leader makes it a learner, then a
//! voter. Once it votes, the cluster metadata commits with one original node cut off only
//! because the joined node acknowledges.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use broker_core::cluster_node::ClusterNode;
use broker_core::topic::TopicSpec;

use crate::support::{Net, node_record, start_cluster_node};

/// Node `id`, started with `peers` as the voters it forms the cluster with, or (`join`) as
/// the nodes it reaches to join.
async fn start(
    id: u64,
    root: &Path,
    net: &Arc<Net>,
    peers: &[u64],
    join: bool,
) -> Arc<ClusterNode> {
    let me = node_record(id, format!("zone-{id}"), 7000);
    start_cluster_node(me, root, net, peers, join, |_| {}).await
}

async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within 20 s");
}

fn topic(name: &str) -> TopicSpec {
    TopicSpec {
        name: name.into(),
        partitions: Some(1),
        replication_factor: Some(3),
        ..TopicSpec::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joined_node_becomes_a_voter_of_the_cluster_metadata() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let mut nodes = Vec::new();
    for id in 1..=3 {
        nodes.push(start(id, root.path(), &net, &[1, 2, 3], false).await);
    }
    until("three nodes ready", || nodes.iter().all(|n| n.ready())).await;
    let leader_of = |nodes: &[Arc<ClusterNode>]| {
        let id = nodes[0].controller_leader()?;
        nodes.iter().find(|n| n.node_id() == id).cloned()
    };
    let leader = leader_of(&nodes).expect("a controller leader");
    leader.create_topic(topic("before")).await.expect("created");

    // Node 4 reaches node 2 only (which may or may not lead): it forms no group of its own.
    let joined = start(4, root.path(), &net, &[2, 4], true).await;
    nodes.push(Arc::clone(&joined));
    until("node 4 votes on the metadata", || {
        nodes[..3]
            .iter()
            .all(|n| n.controller_status().voters.contains(&4))
    })
    .await;
    until("node 4 is registered and ready", || {
        joined.ready() && joined.state().node(4).is_some()
    })
    .await;
    assert!(
        joined.state().topic("before").is_some(),
        "the joined node caught up with the metadata"
    );
    assert_eq!(joined.controller_status().voters, vec![1, 2, 3, 4]);

    // Four voters need three acknowledgements: with one original node cut off, a command
    // commits only because node 4 votes.
    let leader = leader_of(&nodes).expect("a controller leader");
    let cut = nodes
        .iter()
        .find(|n| n.node_id() != leader.node_id() && n.node_id() != 4)
        .expect("another original node")
        .node_id();
    net.cut.lock().expect("lock").insert(cut);
    leader
        .delete_topic("before")
        .await
        .expect("committed by the leader, node 4 and one more");
    until("node 4 applied the deletion", || {
        joined.state().topic("before").is_none()
    })
    .await;
    net.cut.lock().expect("lock").remove(&cut);
    for node in &nodes {
        node.shutdown().await;
        node.broker().shutdown().await;
    }
}
