//! A member of the cluster as the controller records it.

use serde::{Deserialize, Serialize};

/// One node of the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRecord {
    /// The node's id, unique in the cluster (its Raft node id).
    pub id: u64,
    /// The failure domain it runs in (an availability zone or rack); placement spreads a
    /// partition's replicas over as many zones as it can.
    pub zone: String,
    /// Where peers reach it (the cluster port).
    pub cluster_addr: String,
    /// Where clients reach it (the public port).
    pub public_addr: String,
    /// Whether it takes new replicas.
    pub state: NodeState,
    /// When it joined, Unix epoch milliseconds.
    pub joined_ms: u64,
}

impl NodeRecord {
    /// Whether the node takes new replicas and preferred leaderships.
    pub fn is_active(&self) -> bool {
        self.state == NodeState::Active
    }
}

/// Whether a node takes new replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    /// A full member: placement may put replicas and preferred leaders on it.
    Active,
    /// Being removed: it takes nothing new and its replicas move away before it may leave.
    Draining,
}
