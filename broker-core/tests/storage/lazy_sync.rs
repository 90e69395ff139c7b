//! A control batch nobody waits for (a delivery's trace event, `ControlSlot::send_detached`)
//! gets no fsync of its own under `fsync = always`: it becomes durable, and so visible (under
//! `always` a write is visible once fsynced), with the next write's fsync, or at the latest
//! after `LAZY_SYNC_MS`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use broker_core::LogConfig;
use broker_core::config::FsyncPolicy;
use broker_core::limits::LAZY_SYNC_MS;
use broker_core::storage::PartitionHandle;
use bytes::Bytes;

use crate::support::visible_controls;

fn open(dir: &std::path::Path) -> (PartitionHandle, sled::Db) {
    let db = sled::open(dir.join("index")).expect("sled");
    let log = PartitionHandle::open(
        dir.join("log"),
        db.open_tree("index").expect("tree"),
        LogConfig {
            fsync: FsyncPolicy::Always,
            ..LogConfig::default()
        },
        Arc::new(tokio::sync::Notify::new()),
    )
    .expect("open the log");
    (log, db)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_control_batch_waits_for_a_later_fsync_and_the_next_write_carries_it() {
    let dir = tempfile::tempdir().expect("dir");
    let (log, _db) = open(dir.path());

    // Alone, it is written but not fsynced: not visible at once...
    let lazy = Bytes::from_static(b"lazy-1");
    log.reserve_control()
        .expect("slot")
        .send_detached(vec![lazy.clone()]);
    tokio::time::sleep(Duration::from_millis(LAZY_SYNC_MS / 4)).await;
    assert_eq!(
        visible_controls(&log),
        Vec::<Bytes>::new(),
        "fsynced without being waited for"
    );
    // ...and fsynced by the deadline.
    let deadline = Instant::now() + Duration::from_millis(LAZY_SYNC_MS * 10);
    while visible_controls(&log).is_empty() {
        assert!(Instant::now() < deadline, "never fsynced");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(visible_controls(&log), vec![lazy.clone()]);

    // A batch someone waits for right after another lazy one: one fsync covers both.
    let second = Bytes::from_static(b"lazy-2");
    let awaited = Bytes::from_static(b"awaited");
    log.reserve_control()
        .expect("slot")
        .send_detached(vec![second.clone()]);
    let written = log
        .reserve_control()
        .expect("slot")
        .send(vec![awaited.clone()])
        .wait()
        .await
        .expect("written");
    assert!(written.fsynced, "{written:?}");
    assert_eq!(visible_controls(&log), vec![lazy, second, awaited]);
    log.shutdown();
}
