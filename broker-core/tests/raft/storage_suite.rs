//! openraft's own storage conformance suite (`openraft::testing::Suite`) run against Wharf's
//! Raft log storage on segment files ([`LogStore`]) and the partition state machine as a
//! cluster node opens it (its snapshots kept in a file).

use std::sync::Arc;

use broker_core::config::{FsyncPolicy, LogConfig};
use broker_core::raft::{LogStore, NoDerivedState, PartitionMachine, TypeConfig};
use broker_core::storage::PartitionHandle;
use openraft::StorageError;
use openraft::testing::{StoreBuilder, Suite};
use tokio::sync::Notify;

/// Keeps a store's directory and sled db alive for the test that uses it.
struct Guard {
    _root: tempfile::TempDir,
    _db: sled::Db,
}

struct SegmentStores;

impl StoreBuilder<TypeConfig, LogStore, PartitionMachine, Guard> for SegmentStores {
    async fn build(&self) -> Result<(Guard, LogStore, PartitionMachine), StorageError<u64>> {
        let root = tempfile::tempdir().expect("temp dir");
        let db = sled::Config::new()
            .path(root.path().join("meta"))
            .open()
            .expect("sled");
        let dir = root.path().join("p0");
        let config = LogConfig {
            // Small segments: the suite's ten entries span several, so purges delete some.
            segment_bytes: 4 * 1024,
            fsync: FsyncPolicy::Always,
            leader_epoch: 0,
        };
        let on_commit = Arc::new(Notify::new());
        let tree = db.open_tree("p0").expect("tree");
        let log = PartitionHandle::open_replicated(
            dir.clone(),
            tree,
            config,
            Arc::clone(&on_commit),
            None,
        )
        .expect("opens");
        let store = LogStore::open(log.clone(), dir).expect("state");
        let machine =
            PartitionMachine::open(log, on_commit, Arc::new(NoDerivedState)).expect("machine");
        Ok((
            Guard {
                _root: root,
                _db: db,
            },
            store,
            machine,
        ))
    }
}

#[test]
fn the_segment_log_storage_passes_openrafts_storage_suite() {
    Suite::test_all(SegmentStores).expect("every suite test passes");
}
