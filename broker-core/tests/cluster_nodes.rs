//! Three cluster nodes in one process (brokers, controller replicas, reconcilers) over the
//! in-memory transport: nodes register, a topic created at the controller leader is served
//! by every node, a node that does not lead the controller refuses admin naming the leader,
//! and a deleted topic is gone everywhere.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use broker_core::broker::{AckMode, NewMessage};
use broker_core::cluster::{NodeRecord, NodeState};
use broker_core::cluster_node::{ClusterNode, NodeStart};
use broker_core::config::Replication;
use broker_core::raft::{NodeInfo, RaftGroups, raft_config};
use broker_core::topic::TopicSpec;
use broker_core::{Broker, BrokerConfig, BrokerError};
use bytes::Bytes;

mod raft_support;
use raft_support::{Net, NodeTransport};

fn record(id: u64) -> NodeRecord {
    NodeRecord {
        id,
        zone: format!("zone-{id}"),
        cluster_addr: format!("127.0.0.1:{}", 7000 + id),
        public_addr: format!("127.0.0.1:{}", 8000 + id),
        state: NodeState::Active,
        joined_ms: 0,
    }
}

async fn start_node(id: u64, root: &Path, net: &Arc<Net>) -> Arc<ClusterNode> {
    let groups = Arc::new(RaftGroups::default());
    net.nodes
        .lock()
        .expect("lock")
        .insert(id, Arc::clone(&groups));
    let dir = root.join(format!("node-{id}"));
    let mut config = BrokerConfig::new(&dir);
    config.replication = Some(Replication {
        node_id: id,
        transport: Arc::new(NodeTransport {
            me: id,
            net: Arc::clone(net),
        }),
        groups,
        raft: raft_config().expect("config"),
    });
    let log_config = config.log.clone();
    let broker = Broker::open(config).await.expect("opens");
    let voters: BTreeMap<u64, NodeInfo> = (1..=3).map(|i| (i, NodeInfo::default())).collect();
    let start = NodeStart {
        me: record(id),
        voters,
        controller_dir: dir.join("controller"),
        log_config,
    };
    ClusterNode::start(broker, start).await.expect("starts")
}

async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..150 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within 15 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_created_at_the_controller_leader_is_served_by_every_node() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let mut nodes = Vec::new();
    for id in 1..=3 {
        nodes.push(start_node(id, root.path(), &net).await);
    }
    until("every node registered and ready", || {
        nodes.iter().all(|n| n.ready())
    })
    .await;
    until("every node sees all three", || {
        nodes.iter().all(|n| n.state().nodes().len() == 3)
    })
    .await;
    let leader_id = nodes[0].controller_leader().expect("a controller leader");
    let leader = &nodes[(leader_id - 1) as usize];
    let follower = nodes
        .iter()
        .find(|n| n.node_id() != leader_id)
        .expect("follower");
    let spec = || TopicSpec {
        name: "orders".into(),
        partitions: Some(3),
        ..TopicSpec::default()
    };
    match follower.create_topic(spec()).await {
        Err(BrokerError::NotLeader { leader, .. }) => assert_eq!(leader, Some(leader_id)),
        other => panic!("a follower created a topic: {other:?}"),
    }
    let info = leader.create_topic(spec()).await.expect("created");
    assert_eq!(info.config.replication_factor, 3);
    match leader.create_topic(spec()).await {
        Err(BrokerError::TopicExists { .. }) => {}
        other => panic!("a second topic of the same name: {other:?}"),
    }
    let too_few = TopicSpec {
        name: "few".into(),
        replication_factor: Some(2),
        ..TopicSpec::default()
    };
    assert!(matches!(
        leader.create_topic(too_few).await,
        Err(BrokerError::InvalidArgument { .. })
    ));
    until("every node serves the topic", || {
        nodes.iter().all(|n| n.state().topic("orders").is_some())
    })
    .await;
    // A produce on a partition leader is committed; every node reads it.
    let broker_of = |id: u64| nodes[(id - 1) as usize].clone();
    let mut writer = None;
    for _ in 0..100 {
        if let Some(l) = broker_of(1).broker_leader("orders", 0) {
            writer = Some(l);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let writer = broker_of(writer.expect("partition 0 has a leader"));
    let message = NewMessage {
        key: None,
        value: Bytes::from_static(b"hello"),
        binary: false,
        headers: Vec::new(),
        tags: Vec::new(),
        id: None,
        delay: None,
    };
    let produced = writer
        .broker()
        .produce("orders", vec![message], AckMode::All)
        .await
        .expect("produced");
    let partition = produced.messages[0].partition;
    for node in &nodes {
        let mut seen = 0;
        for _ in 0..100 {
            let read = node
                .broker()
                .read_partition("orders", partition, 0, 10, 0, None)
                .await
                .expect("reads");
            seen = read.messages.len();
            if seen == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(seen, 1, "node {} did not get the message", node.node_id());
    }
    leader.delete_topic("orders").await.expect("deleted");
    until("every node dropped the topic", || {
        nodes
            .iter()
            .all(|n| n.broker().topic_uid("orders").is_none())
    })
    .await;
    for node in &nodes {
        node.shutdown().await;
        node.broker().shutdown().await;
    }
}
