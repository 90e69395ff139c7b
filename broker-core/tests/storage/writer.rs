//! The writer thread: group commit under concurrent producers, what an answer says about
//! fsync, commit notifications, fire-and-forget appends and shutdown.

use std::collections::BTreeMap;
use std::time::Duration;

use broker_core::config::FsyncPolicy;
use broker_core::error::BrokerError;

use crate::support::{self, TestLog, read_all, record, records, small_segments};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_get_distinct_consecutive_offsets_and_all_read_back() {
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = log.open();
    let mut tasks = Vec::new();
    for producer in 0..32u64 {
        let handle = handle.clone();
        tasks.push(tokio::spawn(async move {
            let mut sent = Vec::new();
            for i in 0..10u64 {
                let first = producer * 1_000 + i * 10;
                let batch = records(first, 1 + (producer + i) % 4, 60);
                let appended = handle.append(batch.clone()).await.expect("append");
                assert!(appended.fsynced);
                sent.push((appended, batch));
            }
            sent
        }));
    }
    let mut by_offset = BTreeMap::new();
    for task in tasks {
        for (appended, batch) in task.await.expect("producer") {
            assert_eq!(appended.count as usize, batch.len());
            by_offset.insert(appended.base_offset, batch);
        }
    }
    let mut expected = Vec::new();
    for (base, batch) in &by_offset {
        assert_eq!(*base, expected.len() as u64, "batches tile the offsets");
        expected.extend(batch.iter().cloned());
    }
    assert_eq!(handle.end_offset(), expected.len() as u64);
    let read = read_all(&handle, 0, 100);
    assert_eq!(support::bare(&read), expected);
    assert!(log.segments().len() > 1);
    handle.shutdown();
}

#[tokio::test]
async fn an_answer_says_fsynced_only_under_the_always_policy() {
    for (policy, fsynced) in [
        (FsyncPolicy::Always, true),
        (FsyncPolicy::IntervalMs(60_000), false),
        (FsyncPolicy::Never, false),
    ] {
        let log = TestLog::new(small_segments(policy));
        let handle = log.open();
        let appended = handle.append(records(0, 2, 10)).await.expect("append");
        assert_eq!(appended.fsynced, fsynced, "{policy:?}");
        handle.shutdown();
    }
}

#[tokio::test]
async fn a_commit_wakes_readers_waiting_on_the_notify() {
    let log = TestLog::new(small_segments(FsyncPolicy::Never));
    let handle = log.open();
    let notified = log.on_commit.notified();
    tokio::pin!(notified);
    notified.as_mut().enable();
    handle.append(records(0, 1, 10)).await.expect("append");
    tokio::time::timeout(Duration::from_secs(5), notified)
        .await
        .expect("woken by the commit");
    handle.shutdown();
}

#[tokio::test]
async fn a_fire_and_forget_append_is_committed_in_queue_order() {
    let log = TestLog::new(small_segments(FsyncPolicy::Never));
    let handle = log.open();
    handle.append_detached(records(0, 3, 10)).expect("queued");
    let appended = handle.append(records(3, 1, 10)).await.expect("append");
    assert_eq!(appended.base_offset, 3);
    assert_eq!(support::bare(&read_all(&handle, 0, 10)), records(0, 4, 10));
    handle.shutdown();
}

#[tokio::test]
async fn an_empty_append_is_an_invalid_argument() {
    let log = TestLog::new(small_segments(FsyncPolicy::Never));
    let handle = log.open();
    let error = handle.append(vec![]).await.expect_err("refused");
    assert!(matches!(
        error,
        BrokerError::InvalidArgument {
            field: "records",
            ..
        }
    ));
    let error = handle.append_detached(vec![]).expect_err("refused");
    assert!(matches!(error, BrokerError::InvalidArgument { .. }));
    handle.shutdown();
}

#[tokio::test]
async fn shutdown_is_idempotent_refuses_new_appends_and_keeps_reads_working() {
    let log = TestLog::new(small_segments(FsyncPolicy::IntervalMs(60_000)));
    let handle = log.open();
    let other = handle.clone();
    handle.append(records(0, 2, 10)).await.expect("append");
    handle.shutdown();
    other.shutdown();
    let error = other.append(vec![record(9, 1)]).await.expect_err("closed");
    assert!(matches!(error, BrokerError::ShuttingDown));
    let error = other
        .append_detached(vec![record(9, 1)])
        .expect_err("closed");
    assert!(matches!(error, BrokerError::ShuttingDown));
    assert_eq!(other.read(0, 10, usize::MAX).expect("read").len(), 2);
    let reopened = log.open();
    assert_eq!(reopened.end_offset(), 2);
    reopened.shutdown();
}

#[tokio::test]
async fn shutdown_finishes_what_is_queued_before_it_returns() {
    let log = TestLog::new(small_segments(FsyncPolicy::Never));
    let handle = log.open();
    for batch in 0..50 {
        handle
            .append_detached(records(batch * 2, 2, 10))
            .expect("queued");
    }
    handle.shutdown();
    assert_eq!(handle.end_offset(), 100);
    let reopened = log.open();
    assert_eq!(
        support::bare(&read_all(&reopened, 0, 30)),
        records(0, 100, 10)
    );
    reopened.shutdown();
}

#[tokio::test]
async fn under_an_fsync_interval_writes_become_visible_only_once_fsynced() {
    let log = TestLog::new(small_segments(FsyncPolicy::IntervalMs(400)));
    let handle = log.open();
    let appended = handle.append(records(0, 2, 10)).await.expect("append");
    assert!(!appended.fsynced);
    assert_eq!(
        handle.end_offset(),
        0,
        "written but not fsynced: no consumer may see it yet"
    );
    assert!(handle.read(0, 10, usize::MAX).expect("read").is_empty());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while handle.end_offset() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never became visible"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(read_all(&handle, 0, 10).len(), 2);
    handle.shutdown();
}

#[tokio::test]
async fn under_fsync_never_writes_are_visible_at_once() {
    let log = TestLog::new(small_segments(FsyncPolicy::Never));
    let handle = log.open();
    handle.append(records(0, 2, 10)).await.expect("append");
    assert_eq!(handle.end_offset(), 2);
    handle.shutdown();
}

#[tokio::test]
async fn the_index_is_sparse_and_reaches_sled_after_the_commits_not_with_each() {
    let mut config = small_segments(FsyncPolicy::Always);
    config.segment_bytes = 1024 * 1024;
    let log = TestLog::new(config);
    let handle = log.open();
    for n in 0..200 {
        handle.append(records(n, 1, 100)).await.expect("append");
    }
    let entries = || log.tree().scan_prefix([b'o']).count() as u64;
    let written = handle.size_bytes();
    assert!(
        entries() <= written / 4096 + 1,
        "200 commits of {written} bytes left {} index entries in sled",
        entries()
    );
    for offset in [0, 1, 57, 130, 199] {
        let found = handle.read(offset, 1, usize::MAX).expect("read");
        assert_eq!(found[0].offset, offset, "found through the in-memory index");
    }
    handle.shutdown();
    let bytes = support::file_len(&log.last_segment());
    assert!(
        entries() <= bytes / 4096 + 1,
        "{} entries for {bytes} bytes: the index is sparse",
        entries()
    );
    let reopened = log.open();
    assert_eq!(read_all(&reopened, 0, 7).len(), 200);
    assert_eq!(
        reopened.read(133, 1, usize::MAX).expect("read")[0].offset,
        133
    );
    reopened.shutdown();
}

#[tokio::test]
async fn reads_of_a_few_records_at_a_time_match_one_whole_read_across_batches_and_segments() {
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = log.open();
    for n in 0..12 {
        handle
            .append(records(n * 50, 50, 30))
            .await
            .expect("append");
    }
    assert!(log.segments().len() > 3, "the reads must cross segments");
    let whole = read_all(&handle, 0, 1_000);
    assert_eq!(whole.len(), 600);
    for step in [1, 3, 7, 49, 50, 51] {
        assert_eq!(read_all(&handle, 0, step), whole, "{step} at a time");
    }
    let from_the_middle = handle.read(125, 3, usize::MAX).expect("read");
    assert_eq!(from_the_middle, whole[125..128].to_vec());
    let back_in_an_earlier_batch = handle.read(10, 2, usize::MAX).expect("read");
    assert_eq!(back_in_an_earlier_batch, whole[10..12].to_vec());
    handle.shutdown();
}

#[tokio::test]
async fn a_reader_walking_an_old_batch_is_served_from_memory_and_its_next_frame_is_read_ahead() {
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = log.open();
    // 1 MiB of 100-record batches: far past the tail cache, so old batches live on disk only.
    for n in 0..10 {
        let batch = records(n * 100, 100, 1024);
        handle.append(batch).await.expect("append");
    }
    let whole = read_all(&handle, 0, 1_000);
    assert_eq!(whole.len(), 1_000);
    let first = handle.read(0, 10, usize::MAX).expect("read from disk");
    assert_eq!(first, whole[..10].to_vec());
    assert!(!handle.prefetch_due(), "nothing drained yet");
    for from in (10..100).step_by(10) {
        let from_memory = handle.read_cached(from as u64, 10, usize::MAX);
        assert_eq!(
            from_memory,
            Some(whole[from..from + 10].to_vec()),
            "from {from}"
        );
    }
    assert!(
        handle.prefetch_due(),
        "taking the batch's last record asks for the next frame"
    );
    assert_eq!(
        handle.read_cached(100, 10, usize::MAX),
        None,
        "not read ahead yet"
    );
    handle.prefetch().expect("read ahead");
    let ahead = handle.read_cached(100, 10, usize::MAX);
    assert_eq!(ahead, Some(whole[100..110].to_vec()));
    // A read the batch cannot complete goes to the files.
    assert_eq!(handle.read_cached(195, 10, usize::MAX), None);
    handle.shutdown();
}
