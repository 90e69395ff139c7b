//! Helpers of the failpoint tests, shared with the binaries of their areas: the broker with
//! its topic `t` (`tests/support/broker/topic.rs`), the partition on a temporary directory
//! (`tests/support/storage.rs`), and cluster nodes over the in-memory network
//! (`tests/support/raft/`).

#[path = "../support/raft/net.rs"]
mod net;
#[path = "../support/raft/nodes.rs"]
mod nodes;
#[path = "../support/storage.rs"]
mod storage;
#[path = "../support/broker/topic.rs"]
mod topic;

pub use net::Net;
pub use nodes::{
    all_registered, controller_leader, node_record, read_own_replica, start_cluster_node,
    text_message,
};
pub use storage::{
    TestLog, append_acknowledged, bare, file_len, read_all, record, records, small_segments,
};
pub use topic::{broker_with_topic, create_topic, text};

/// An empty replicated partition (1 MiB segments, fsync always) whose Raft state machine has
/// applied nothing, opened; the [`TestLog`] keeps its files.
pub fn replicated_log() -> (TestLog, broker_core::storage::PartitionHandle) {
    let partition = TestLog::new(broker_core::config::LogConfig {
        segment_bytes: 1024 * 1024,
        fsync: broker_core::config::FsyncPolicy::Always,
        leader_epoch: 0,
    });
    let log = broker_core::storage::PartitionHandle::open_replicated(
        partition.dir.clone(),
        partition.tree(),
        partition.config.clone(),
        std::sync::Arc::clone(&partition.on_commit),
        None,
    )
    .expect("open replicated partition");
    (partition, log)
}

/// Waits up to 15 s for `done`, asking every 100 ms; panics naming `what` if it never is.
pub async fn until(what: &str, done: impl AsyncFn() -> bool) {
    for _ in 0..150 {
        if done().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within 15 s");
}
