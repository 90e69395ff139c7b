//! Cluster brokers and nodes in one process over the in-memory [`Net`] (`net.rs`, included
//! beside this file as `super::net`), shared by the `cluster` and `failpoints` binaries.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use broker_core::cluster::{NodeRecord, NodeState};
use broker_core::cluster_node::{ClusterNode, NodeStart};
use broker_core::raft::Replication;
use broker_core::raft::{NodeInfo, RaftGroups, raft_config};
use broker_core::{Broker, BrokerConfig};

use super::net::{Net, NodeTransport};

/// Whether every node of `nodes` is ready and knows all of them (registered).
pub fn all_registered(nodes: &[Arc<ClusterNode>]) -> bool {
    nodes
        .iter()
        .all(|n| n.ready() && n.state().nodes().len() == nodes.len())
}

/// The node of `nodes` leading the controller group.
pub fn controller_leader(nodes: &[Arc<ClusterNode>]) -> Arc<ClusterNode> {
    nodes
        .iter()
        .find(|n| n.controller_leader() == Some(n.node_id()))
        .cloned()
        .expect("a controller leader")
}

/// Node `id`'s record: in `zone`, its addresses from `port_base` (never bound in process).
pub fn node_record(id: u64, zone: String, port_base: u16) -> NodeRecord {
    NodeRecord {
        id,
        zone,
        cluster_addr: format!("127.0.0.1:{}", u64::from(port_base) + id),
        public_addr: format!("127.0.0.1:{}", u64::from(port_base) + 1000 + id),
        state: NodeState::Active,
        joined_ms: 0,
    }
}

/// Node `id`'s broker in cluster mode over `net`, its data under `root/node-{id}`, its
/// config changed by `tune` first.
pub async fn open_cluster_broker(
    id: u64,
    root: &Path,
    net: &Arc<Net>,
    tune: impl FnOnce(&mut BrokerConfig),
) -> Arc<Broker> {
    try_open_cluster_broker(id, root, net, tune)
        .await
        .expect("opens")
}

/// [`open_cluster_broker`], with the error of an open that failed (a data folder a
/// simulated power loss made fail).
pub async fn try_open_cluster_broker(
    id: u64,
    root: &Path,
    net: &Arc<Net>,
    tune: impl FnOnce(&mut BrokerConfig),
) -> broker_core::error::Result<Arc<Broker>> {
    let groups = Arc::new(RaftGroups::default());
    net.nodes
        .lock()
        .expect("lock")
        .insert(id, Arc::clone(&groups));
    let mut config = BrokerConfig::new(root.join(format!("node-{id}")));
    tune(&mut config);
    let replication = Replication {
        node_id: id,
        transport: Arc::new(NodeTransport {
            me: id,
            net: Arc::clone(net),
        }),
        groups,
        receipt_key: [7; 32],
        raft: raft_config().expect("config"),
    };
    Broker::open_replicated(config, replication).await
}

/// A cluster node as `me`, its broker opened by [`open_cluster_broker`]: with `peers` the
/// initial voters it forms the cluster with, or (`join`) the nodes it reaches to join one.
pub async fn start_cluster_node(
    me: NodeRecord,
    root: &Path,
    net: &Arc<Net>,
    peers: &[u64],
    join: bool,
    tune: impl FnOnce(&mut BrokerConfig),
) -> Arc<ClusterNode> {
    let id = me.id;
    let broker = open_cluster_broker(id, root, net, tune).await;
    let log_config = broker.log_config().clone();
    let voters: BTreeMap<u64, NodeInfo> = peers.iter().map(|i| (*i, NodeInfo::default())).collect();
    let start = NodeStart {
        me,
        voters,
        controller_dir: root.join(format!("node-{id}")).join("controller"),
        log_config,
        join,
    };
    ClusterNode::start(broker, start).await.expect("starts")
}

/// Partition `partition` of `topic` as `broker`'s own replica holds it, from `offset`: a
/// follower out of sync with its leader (not heard from it lately, e.g. on a loaded machine)
/// sends reads to the leader ([`broker_core::BrokerError::NotLeader`]), so this asks again
/// for up to 10 s until the replica serves the read itself.
pub async fn read_own_replica(
    broker: &Broker,
    topic: &str,
    partition: u32,
    offset: u64,
    max: usize,
) -> broker_core::broker::PartitionRead {
    for _ in 0..100 {
        match broker
            .read_partition(topic, partition, offset, max, 0, None)
            .await
        {
            Ok(read) => return read,
            Err(broker_core::BrokerError::NotLeader { .. }) => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(other) => panic!("reads: {other:?}"),
        }
    }
    panic!("the replica of {topic} partition {partition} never served a read itself");
}

/// A plain text message: no key, headers, tags, id or delay.
pub fn text_message(value: String) -> broker_core::broker::NewMessage {
    broker_core::broker::NewMessage {
        key: None,
        value: bytes::Bytes::from(value),
        binary: false,
        headers: Vec::new(),
        tags: Vec::new(),
        id: None,
        delay: None,
        trace: None,
    }
}
