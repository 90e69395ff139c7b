//! Helpers of the cluster tests: brokers and cluster nodes in one process over the in-memory
//! [`Net`], the topic `jobs` with its subscription `work` on three nodes, and waits for the
//! nodes to agree. The network and the node starters are shared with other binaries
//! (`tests/support/raft/`), as is the temporary directory on tmpfs (`tests/support/tmpfs.rs`).

use std::path::Path;
use std::sync::Arc;

use broker_core::Broker;
use broker_core::broker::ReceiveRequest;
use broker_core::cluster_node::ClusterNode;
use broker_core::subscription::SubscriptionSpec;
use broker_core::topic::TopicSpec;

#[path = "../support/raft/net.rs"]
mod net;
#[path = "../support/raft/nodes.rs"]
mod nodes;
#[path = "../support/tmpfs.rs"]
mod tmpfs;

pub use net::Net;
pub use nodes::{
    all_registered, controller_leader, node_record, open_cluster_broker, read_own_replica,
    start_cluster_node, text_message, try_open_cluster_broker,
};
pub use tmpfs::temp_root;

/// Node `id`'s broker in cluster mode over `net`, its data under `root/node-{id}`, its
/// config as it comes.
pub async fn open_broker(id: u64, root: &Path, net: &Arc<Net>) -> Arc<Broker> {
    open_cluster_broker(id, root, net, |_| {}).await
}

/// Node `id` of 1, 2 and 3 (in a zone of its own), forming the cluster with the other two.
pub async fn start_node(id: u64, root: &Path, net: &Arc<Net>) -> Arc<ClusterNode> {
    let me = node_record(id, format!("zone-{id}"), 7000);
    start_cluster_node(me, root, net, &[1, 2, 3], false, |_| {}).await
}

/// Nodes 1, 2 and 3 (each in a zone of its own) forming a cluster over `net`, their data under
/// `root`, once every one is ready and knows all three.
pub async fn three_registered_nodes(root: &Path, net: &Arc<Net>) -> Vec<Arc<ClusterNode>> {
    let mut nodes = Vec::new();
    for id in 1..=3 {
        nodes.push(start_node(id, root, net).await);
    }
    until("every node registered and ready", || all_registered(&nodes)).await;
    nodes
}

/// The subscription `work` (leases of `ack_timeout_ms`, else the default).
pub fn work(ack_timeout_ms: Option<u64>) -> SubscriptionSpec {
    SubscriptionSpec {
        name: "work".into(),
        start: None,
        ack_timeout_ms,
        retry: None,
        max_deliveries: None,
        dead_letter_topic: None,
        filter: None,
        ordering: None,
    }
}

/// Three registered nodes serving the one-partition topic `jobs` and its subscription `work`
/// (leases of `ack_timeout_ms`, else the default), created at the controller leader.
pub async fn jobs_on_three_nodes(
    root: &Path,
    net: &Arc<Net>,
    ack_timeout_ms: Option<u64>,
) -> Vec<Arc<ClusterNode>> {
    let nodes = three_registered_nodes(root, net).await;
    let controller = nodes[0].controller_leader().expect("a controller leader");
    let admin = nodes[(controller - 1) as usize].clone();
    let topic = TopicSpec {
        name: "jobs".into(),
        partitions: Some(1),
        ..TopicSpec::default()
    };
    admin.create_topic(topic).await.expect("topic");
    admin
        .create_subscription("jobs", work(ack_timeout_ms))
        .await
        .expect("subscription");
    until("every node has the subscription", || {
        nodes
            .iter()
            .all(|n| n.broker().subscription_uid("jobs", "work").is_some())
    })
    .await;
    nodes
}

/// A receive of up to `max_messages`, waiting up to `wait_ms`, with the subscription's lease.
pub fn receive(max_messages: usize, wait_ms: u64) -> ReceiveRequest {
    ReceiveRequest {
        max_messages,
        wait_ms,
        ack_timeout_ms: None,
        attempt_id: None,
        memory: None,
    }
}

/// The one-partition topic `name` of incarnation `uid`, replicated on three nodes.
pub fn one_partition_topic(name: &str, uid: u64) -> broker_core::topic::TopicConfig {
    let spec = broker_core::topic::TopicSpec {
        name: name.into(),
        partitions: Some(1),
        ..broker_core::topic::TopicSpec::default()
    };
    spec.into_config_keeping(1_700_000_000_000, uid, 3)
        .expect("valid")
}

/// Partition 0 of `topic`'s leader once every broker agrees on it (up to 10 s).
pub async fn agreed_leader(brokers: &[Arc<Broker>], topic: &str) -> u64 {
    for _ in 0..100 {
        let seen: Vec<Option<u64>> = brokers
            .iter()
            .map(|b| b.partition_leader(topic, 0))
            .collect();
        if let Some(leader) = seen[0]
            && seen.iter().all(|s| *s == Some(leader))
        {
            return leader;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the brokers never agreed on a leader");
}

/// Waits until `done`, checking every 100 ms for up to 15 s (a loaded two-core machine);
/// panics naming `what` past it.
pub async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..150 {
        if done() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within 15 s");
}

/// A subscription named `name` with every setting at its default.
pub fn default_subscription(name: &str) -> broker_core::subscription::SubscriptionSpec {
    broker_core::subscription::SubscriptionSpec {
        name: name.into(),
        start: None,
        ack_timeout_ms: None,
        retry: None,
        max_deliveries: None,
        dead_letter_topic: None,
        filter: None,
        ordering: None,
    }
}
