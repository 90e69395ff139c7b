//! [`Replication`]: what a node of a cluster hands its broker to replicate its partitions.
//! Apart from the broker's settings ([`crate::config::BrokerConfig`]), which stay plain
//! values: the handles here tie a broker to its transport and groups.

use std::sync::Arc;

use super::{RaftGroups, Transport};

/// What a node of a cluster needs to replicate its partitions: its id, the transport to
/// other nodes, the registry answering their RPCs, and the Raft settings.
#[derive(Clone)]
pub struct Replication {
    /// This node's id.
    pub node_id: u64,
    /// RPCs to other nodes.
    pub transport: Arc<dyn Transport>,
    /// This node's groups, which answer other nodes' RPCs.
    pub groups: Arc<RaftGroups>,
    /// The Raft settings of every group.
    pub raft: Arc<openraft::Config>,
    /// The key every node of the cluster signs receipts with (derived from the cluster
    /// secret), so a receipt stays good when its partition's leader changes.
    pub receipt_key: [u8; crate::subscription::receipt::RECEIPT_KEY_BYTES],
}

impl std::fmt::Debug for Replication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replication")
            .field("node_id", &self.node_id)
            .finish_non_exhaustive()
    }
}
