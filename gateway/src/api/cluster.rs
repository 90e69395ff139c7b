//! The cluster view's wire types: `GET /v1/cluster`'s answer.

use serde::Serialize;
use utoipa::ToSchema;

/// The cluster as the answering node sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClusterView {
    /// `cluster`, or `single` for a node run without cluster settings (a cluster of one: no
    /// nodes, controller or replicas to show, its partitions all led by itself).
    pub mode: &'static str,
    /// The answering node's id (none on a single node).
    pub node_id: Option<u64>,
    /// The controller group: its leader and term.
    pub controller: Option<GroupView>,
    /// Every registered node.
    pub nodes: Vec<NodeView>,
    /// Every partition of every topic: leader, term, replicas and their lag.
    pub partitions: Vec<PartitionView>,
}

/// A node of the cluster.
#[derive(Debug, Serialize, ToSchema)]
pub struct NodeView {
    /// Its id.
    pub id: u64,
    /// Its zone.
    pub zone: String,
    /// Its public (HTTP API) address.
    pub public_addr: String,
    /// Its cluster port.
    pub cluster_addr: String,
    /// `active`, or `draining` (its replicas are moving away).
    pub state: String,
    /// Heard from (either way) within the last 3 s by the answering node; the answering node
    /// itself is always live.
    pub live: bool,
    /// Milliseconds since the answering node last heard from it, if ever.
    pub last_seen_ms: Option<u64>,
}

/// A Raft group's leader and term.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupView {
    /// The leader's node id, none during an election.
    pub leader: Option<u64>,
    /// The current term.
    pub term: u64,
}

/// One partition's group.
#[derive(Debug, Serialize, ToSchema)]
pub struct PartitionView {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: u32,
    /// Its leader's node id, as the answering node knows it (none during an election).
    pub leader: Option<u64>,
    /// The current term (none when the answering node holds no replica).
    pub term: Option<u64>,
    /// Its replicas, the preferred leader first.
    pub replicas: Vec<ReplicaView>,
}

/// One replica of a partition.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReplicaView {
    /// The node holding it.
    pub node: u64,
    /// Entries it is behind the leader's log; known only when the answering node leads the
    /// partition (ask the leader for every replica's lag).
    pub lag: Option<u64>,
}
