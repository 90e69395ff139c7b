//! A replication factor below the node count, in one process: five cluster nodes over the
//! in-memory transport and a topic of two partitions with three replicas each. Each node
//! holds (starts the group of) exactly the partitions placed on it, each group's voters are
//! that partition's replicas, every node knows every partition's leader (those outside its
//! group from the leaders' reports), and a node outside a partition's group refuses its
//! produce and reads with `NotLeader` naming that leader, writing nothing. Draining a node
//! moves its leadership and its replica to a node outside the group, which then serves the
//! same offsets and subscription state, and the drained node can be removed. A node outside
//! a partition's group knows whether its leader is in its zone (from the metadata).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use broker_core::BrokerError;
use broker_core::broker::{AckMode, LeaderNear, NewMessage, ReceiveRequest};
use broker_core::cluster_node::ClusterNode;
use broker_core::topic::TopicSpec;
use bytes::Bytes;

use crate::support::{
    Net, all_registered, controller_leader, default_subscription, node_record, read_own_replica,
    start_cluster_node, three_registered_nodes, until,
};

const NODES: u64 = 5;
const TOPIC: &str = "orders";
const PARTITIONS: u32 = 2;
const REPLICATION_FACTOR: u32 = 3;

async fn start_node(id: u64, root: &Path, net: &Arc<Net>) -> Arc<ClusterNode> {
    let me = node_record(id, format!("zone-{}", id % 3), 7100);
    let peers: Vec<u64> = (1..=NODES).collect();
    start_cluster_node(me, root, net, &peers, false, |_| {}).await
}

fn message(key: &str) -> NewMessage {
    NewMessage {
        key: Some(key.to_owned()),
        value: Bytes::from_static(b"hello"),
        binary: false,
        headers: Vec::new(),
        tags: Vec::new(),
        id: None,
        delay: None,
        trace: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_node_holds_only_its_partitions_and_forwards_the_others_to_their_leaders() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let mut nodes = Vec::new();
    for id in 1..=NODES {
        nodes.push(start_node(id, root.path(), &net).await);
    }
    until("every node registered and ready", || all_registered(&nodes)).await;
    let leader = controller_leader(&nodes);
    let spec = TopicSpec {
        name: TOPIC.into(),
        partitions: Some(PARTITIONS),
        ..TopicSpec::default()
    };
    let info = leader.create_topic(spec).await.expect("created");
    assert_eq!(info.config.replication_factor, REPLICATION_FACTOR);
    let placement = leader
        .state()
        .topic(TOPIC)
        .expect("placed")
        .placement
        .clone();
    let replicas = |p: u32| placement[p as usize].replicas.clone();
    until("every node opened the topic", || {
        nodes.iter().all(|n| n.broker().topic_uid(TOPIC).is_some())
    })
    .await;
    // Each partition's leader as its replicas know it, and as every node knows it.
    until("every node knows every partition's leader", || {
        (0..PARTITIONS).all(|p| {
            let led = nodes
                .iter()
                .find(|n| replicas(p).contains(&n.node_id()))
                .and_then(|n| n.broker_leader(TOPIC, p));
            led.is_some() && nodes.iter().all(|n| n.broker_leader(TOPIC, p) == led)
        })
    })
    .await;
    for p in 0..PARTITIONS {
        let holders = replicas(p);
        assert_eq!(holders.len(), REPLICATION_FACTOR as usize);
        for node in &nodes {
            let holds = node.broker().holds_partition(TOPIC, p);
            assert_eq!(
                holds,
                holders.contains(&node.node_id()),
                "node {} p{p}",
                node.node_id()
            );
            match node.broker().partition_status(TOPIC, p) {
                Some(status) => {
                    let mut voters = status.voters.clone();
                    voters.sort_unstable();
                    let mut expected = holders.clone();
                    expected.sort_unstable();
                    assert_eq!(voters, expected, "the voters of partition {p}");
                }
                None => assert!(!holds, "node {} holds p{p} without a group", node.node_id()),
            }
        }
    }
    // A key of each partition, found by the partitioner every node shares.
    let key_of = |p: u32| {
        (0..1000)
            .map(|i| format!("k{i}"))
            .find(|k| nodes[0].broker().partition_for_key(TOPIC, k).ok() == Some(p))
            .expect("a key of the partition")
    };
    for p in 0..PARTITIONS {
        let holders = replicas(p);
        let led_by = nodes[0].broker_leader(TOPIC, p).expect("a leader");
        let outsider = nodes
            .iter()
            .find(|n| !holders.contains(&n.node_id()))
            .expect("a node outside the group");
        match outsider
            .broker()
            .produce(TOPIC, vec![message(&key_of(p))], AckMode::All)
            .await
        {
            Err(BrokerError::NotLeader { leader, .. }) => assert_eq!(leader, Some(led_by)),
            other => panic!("a node outside partition {p}'s group produced: {other:?}"),
        }
        match outsider
            .broker()
            .read_partition(TOPIC, p, 0, 10, 0, None)
            .await
        {
            Err(BrokerError::NotLeader { leader, .. }) => assert_eq!(leader, Some(led_by)),
            other => panic!("a node outside partition {p}'s group read: {other:?}"),
        }
        let writer = &nodes[(led_by - 1) as usize];
        let produced = writer
            .broker()
            .produce(TOPIC, vec![message(&key_of(p))], AckMode::All)
            .await
            .expect("the leader produces");
        assert_eq!(produced.messages[0].partition, p);
        for node in nodes.iter().filter(|n| holders.contains(&n.node_id())) {
            let mut seen = 0;
            for _ in 0..100 {
                let read = read_own_replica(node.broker(), TOPIC, p, 0, 10).await;
                seen = read.messages.len();
                if seen == 1 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert_eq!(seen, 1, "replica {} of partition {p}", node.node_id());
        }
    }
    // Nearness of a partition a node does not hold comes from the metadata's zones: with its
    // leader moved into the outsider's zone it is near, moved out of it it is not (and an
    // offset read there then goes first to the replica in the outsider's zone).
    let holders = replicas(0);
    let outsider = nodes
        .iter()
        .find(|n| !holders.contains(&n.node_id()))
        .expect("a node outside the group");
    let zone = |id: u64| id % 3;
    let in_zone = *holders
        .iter()
        .find(|h| zone(**h) == zone(outsider.node_id()))
        .expect("a replica in the outsider's zone (replicas spread over the three zones)");
    let elsewhere = *holders
        .iter()
        .find(|h| zone(**h) != zone(outsider.node_id()))
        .expect("a replica in another zone");
    for (target, near) in [(in_zone, true), (elsewhere, false)] {
        leader
            .move_leader(TOPIC, 0, target)
            .await
            .expect("the leadership moved");
        let expected = LeaderNear {
            leader: Some(target),
            near,
        };
        until("the outsider knows the new leader", || {
            outsider
                .broker()
                .partition_leaders_near(TOPIC)
                .is_ok_and(|leaders| leaders[0] == expected)
        })
        .await;
        let read_first = outsider.broker().read_replica_near(TOPIC, 0);
        assert_eq!(read_first, (!near).then_some(in_zone), "leader {target}");
    }
    for node in &nodes {
        node.shutdown().await;
        node.broker().shutdown().await;
    }
}

async fn five_nodes(root: &Path, net: &Arc<Net>) -> Vec<Arc<ClusterNode>> {
    let mut nodes = Vec::new();
    for id in 1..=NODES {
        nodes.push(start_node(id, root, net).await);
    }
    until("every node registered and ready", || all_registered(&nodes)).await;
    nodes
}

fn receive(max_messages: usize) -> ReceiveRequest {
    ReceiveRequest {
        max_messages,
        wait_ms: 1_000,
        ack_timeout_ms: None,
        attempt_id: None,
        memory: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draining_a_partition_leader_moves_its_replica_with_its_offsets_and_acks() {
    const MESSAGES: usize = 20;
    const ACKED: usize = 5;
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = five_nodes(root.path(), &net).await;
    let by_id = |id: u64| Arc::clone(&nodes[(id - 1) as usize]);
    let controller = controller_leader(&nodes);
    let spec = TopicSpec {
        name: TOPIC.into(),
        partitions: Some(1),
        ..TopicSpec::default()
    };
    controller.create_topic(spec).await.expect("created");
    controller
        .create_subscription(TOPIC, default_subscription("work"))
        .await
        .expect("subscribed");
    let before = controller.state().topic(TOPIC).expect("placed").placement[0]
        .replicas
        .clone();
    let leader = controller.broker_leader(TOPIC, 0).expect("a leader");
    // The node to drain: the partition's leader, unless it leads the controller (which
    // drains, and cannot remove itself), then another replica.
    let drained = match leader == controller.node_id() {
        false => leader,
        true => *before.iter().find(|r| **r != leader).expect("a follower"),
    };
    let writer = by_id(leader);
    for i in 0..MESSAGES {
        writer
            .broker()
            .produce(TOPIC, vec![message(&format!("k{i}"))], AckMode::All)
            .await
            .expect("produced");
    }
    let got = writer
        .broker()
        .receive(TOPIC, "work", receive(ACKED))
        .await
        .expect("received");
    assert_eq!(got.len(), ACKED);
    let receipts: Vec<String> = got.iter().map(|d| d.receipt.clone()).collect();
    let acked = writer
        .broker()
        .ack(TOPIC, "work", &receipts)
        .await
        .expect("acked");
    assert_eq!(acked.succeeded, ACKED);
    let acked_offsets: Vec<u64> = got.iter().map(|d| d.message.offset).collect();

    let report = controller.drain_node(drained).await.expect("drained");
    assert!(report.leaders.failed.is_empty(), "{report:?}");
    assert_eq!(report.replicas_kept, 0, "{report:?}");
    let after = controller.state().topic(TOPIC).expect("placed").placement[0]
        .replicas
        .clone();
    assert!(!after.contains(&drained), "{after:?}");
    let target = *after
        .iter()
        .find(|r| !before.contains(r))
        .expect("a new replica");
    let new_replica = by_id(target);
    until("the new replica holds the partition", || {
        new_replica.broker().holds_partition(TOPIC, 0)
    })
    .await;
    // The leader committed the final membership before the drain answered; the new
    // replica learns of that commit on a later append, so its own view may still be the
    // joint one for a moment (a fresh-clone CI saw [1, 2, 3, 4] here once).
    let mut expected = after.clone();
    expected.sort_unstable();
    let voters_now = || {
        let mut voters = new_replica
            .broker()
            .partition_status(TOPIC, 0)
            .expect("the new replica's group")
            .voters;
        voters.sort_unstable();
        voters
    };
    until("the new replica sees the final membership", || {
        voters_now() == expected
    })
    .await;
    assert_eq!(voters_now(), expected);
    let read = read_own_replica(new_replica.broker(), TOPIC, 0, 0, 100).await;
    let offsets: Vec<u64> = read.messages.iter().map(|m| m.offset).collect();
    let old_replica = *after
        .iter()
        .find(|r| before.contains(r))
        .expect("an old replica");
    let kept: Vec<u64> = read_own_replica(by_id(old_replica).broker(), TOPIC, 0, 0, 100)
        .await
        .messages
        .iter()
        .map(|m| m.offset)
        .collect();
    assert_eq!(offsets, kept, "the new replica's offsets");
    assert_eq!(offsets.len(), MESSAGES);

    // The new replica leads: its table followed the log, so the acked messages stay acked.
    controller
        .move_leader(TOPIC, 0, target)
        .await
        .expect("leadership moved to the new replica");
    let mut delivered = Vec::new();
    for _ in 0..10 {
        match new_replica
            .broker()
            .receive(TOPIC, "work", receive(100))
            .await
        {
            Ok(got) => delivered.extend(got.iter().map(|d| d.message.offset)),
            Err(BrokerError::NotLeader { .. }) => {}
            Err(other) => panic!("receive on the new replica: {other:?}"),
        }
        if delivered.len() >= MESSAGES - ACKED {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    delivered.sort_unstable();
    assert_eq!(delivered.len(), MESSAGES - ACKED, "{delivered:?}");
    assert!(
        delivered.iter().all(|o| !acked_offsets.contains(o)),
        "an acked message came back: {delivered:?} acked {acked_offsets:?}"
    );

    controller.remove_node(drained).await.expect("removed");
    assert!(controller.state().node(drained).is_none());
    for node in &nodes {
        node.shutdown().await;
        node.broker().shutdown().await;
    }
}

/// A drain right after a topic is made moves every replica. The new groups may not have
/// committed their first membership yet, and Raft refuses a change until they have: a
/// fresh-clone CI (three processes, a loaded machine) saw a drain keep a replica of a topic
/// made a moment before ("already undergoing a configuration change at log index 0"), and
/// a membership step now waits for the group. In process the window is narrower: this test
/// passed 3 of 3 runs on the old code too, so it guards the scenario, not that race.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_right_after_a_topic_is_made_moves_every_replica() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = five_nodes(root.path(), &net).await;
    let controller = controller_leader(&nodes);
    let spec = TopicSpec {
        name: "fresh".into(),
        partitions: Some(NODES as u32),
        ..TopicSpec::default()
    };
    controller.create_topic(spec).await.expect("created");
    let drained = (1..=NODES)
        .find(|n| *n != controller.node_id())
        .expect("a node to drain");
    let report = controller.drain_node(drained).await.expect("drained");
    assert!(report.leaders.failed.is_empty(), "{report:?}");
    assert_eq!(report.replicas_kept, 0, "{report:?}");
    let state = controller.state();
    let placement = &state.topic("fresh").expect("placed").placement;
    assert!(
        placement.iter().all(|p| !p.replicas.contains(&drained)),
        "{placement:?}"
    );
    for node in &nodes {
        node.shutdown().await;
        node.broker().shutdown().await;
    }
}

/// A new topic's partitions come to be led by their preferred replicas, which the placement
/// spreads over the nodes (each of three leads two of six): the preferred replica forms the
/// group and campaigns first, the others only after a grace without a leader. Before, every
/// replica formed the group at once and whichever won the race led: a three-partition topic
/// of a `loadtest/cluster` run was led by one node alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_topics_partitions_are_led_by_their_preferred_replicas_spread_over_the_nodes() {
    const SPREAD: u32 = 6;
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = three_registered_nodes(root.path(), &net).await;
    let controller = controller_leader(&nodes);
    let spec = TopicSpec {
        name: "spread".into(),
        partitions: Some(SPREAD),
        ..TopicSpec::default()
    };
    controller.create_topic(spec).await.expect("created");
    let preferred: Vec<u64> = controller
        .state()
        .topic("spread")
        .expect("placed")
        .placement
        .iter()
        .map(|p| p.preferred_leader().expect("a preferred leader"))
        .collect();
    for node in 1..=3 {
        let leads = preferred.iter().filter(|p| **p == node).count();
        assert_eq!(leads, 2, "node {node} is preferred for {preferred:?}");
    }
    until("every partition has a leader every node agrees on", || {
        (0..SPREAD).all(|p| {
            let led = nodes[0].broker_leader("spread", p);
            led.is_some() && nodes.iter().all(|n| n.broker_leader("spread", p) == led)
        })
    })
    .await;
    let leaders: Vec<Option<u64>> = (0..SPREAD)
        .map(|p| nodes[0].broker_leader("spread", p))
        .collect();
    let expected: Vec<Option<u64>> = preferred.iter().copied().map(Some).collect();
    assert_eq!(
        leaders, expected,
        "each partition's leader, then its preferred replica"
    );
    for node in &nodes {
        node.shutdown().await;
        node.broker().shutdown().await;
    }
}
