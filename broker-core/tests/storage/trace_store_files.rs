//! The trace index's files on disk: a store never recreates the folder of a partition that
//! was deleted under it (a topic deleted while its follower or a lookup was indexing).

use broker_core::config::FsyncPolicy;
use broker_core::trace_store::TraceStore;

use crate::support::{TestLog, append_acknowledged, small_segments};

/// Batches appended: enough 4 KiB segments that indexing them seals runs into files.
const BATCHES: u64 = 40;

#[tokio::test]
async fn indexing_a_partition_whose_folder_was_deleted_does_not_recreate_it() {
    let test_log = TestLog::new(small_segments(FsyncPolicy::Never));
    let log = test_log.open();
    append_acknowledged(&log, BATCHES).await;
    assert!(log.segment_bases().len() > 2, "several segments to index");
    let store = TraceStore::new(&test_log.dir);

    std::fs::remove_dir_all(&test_log.dir).expect("delete the partition's folder");
    let indexed = store.catch_up(&log);

    assert!(
        !test_log.dir.exists(),
        "indexing recreated the deleted folder {} (catch_up: {indexed:?})",
        test_log.dir.display()
    );
    log.shutdown();
}
