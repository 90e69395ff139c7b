//! Helpers of the Raft tests: the in-memory network of `tests/support/raft/net.rs`, shared
//! with the `cluster` and `failpoints` binaries.

#[path = "../support/raft/net.rs"]
mod net;

pub use net::{Net, NodeTransport};

use std::path::PathBuf;
use std::sync::Arc;

use broker_core::config::{FsyncPolicy, LogConfig};
use broker_core::raft::{GroupId, ReplicaSpec};
use tokio::sync::Notify;

/// Node `id`'s replica of `group` in `dir`, indexed in `index`: small segments (64 KiB),
/// every append fsynced.
pub fn replica_spec(id: u64, group: GroupId, dir: PathBuf, index: sled::Tree) -> ReplicaSpec {
    ReplicaSpec {
        node_id: id,
        group,
        dir,
        index,
        log_config: LogConfig {
            segment_bytes: 64 * 1024,
            fsync: FsyncPolicy::Always,
            leader_epoch: 0,
        },
        on_commit: Arc::new(Notify::new()),
    }
}

/// Node `id`'s side of `net`.
pub fn node_transport(id: u64, net: &Arc<Net>) -> Arc<NodeTransport> {
    Arc::new(NodeTransport {
        me: id,
        net: Arc::clone(net),
    })
}
