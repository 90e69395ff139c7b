//! Storage failures injected with the `fail` crate: what producers and readers of a partition
//! see when an fsync fails, a write is cut short, or the writer dies between writing a group
//! and indexing it, and what the partition holds once reopened. Each test holds a
//! [`FailScenario`], which clears every failpoint before and after it and makes the tests of
//! this binary run one at a time (the failpoints are global to the process).
//!
//! Failpoints in the storage code:
//! - `segment::sync`: the fdatasync of a segment fails with EIO.
//! - `segment::append`: a short write: the first half of the frame reaches the file, then
//!   the write fails as on a full disk.
//! - `partition_log::before_index`: a group is written (and fsynced as the policy asks) but
//!   neither indexed nor published; `panic` there is a crash of the writer at that point.
//! - `index::apply`: the sled write of the sparse index fails.

use std::time::Duration;

use broker_core::config::{FsyncPolicy, LogConfig};
use broker_core::error::BrokerError;
use broker_core::message::Record;
use broker_core::storage::PartitionHandle;
use fail::FailScenario;
use wharf_reliability::CaseLine;

use crate::support::{
    TestLog, append_acknowledged, bare, file_len, read_all, records, small_segments,
};

/// How long a test waits for something that takes milliseconds when all is well.
const DEADLINE: Duration = Duration::from_secs(10);
/// How often a test polls while it waits: the index persist it waits for comes once a second.
const POLL: Duration = Duration::from_millis(20);
/// Records a read takes at a time: few, so reads cross batches and segments.
const READ_STEP: usize = 7;

/// Settings of a log that stays in one segment file, whose length a test can check.
fn one_segment() -> LogConfig {
    LogConfig {
        segment_bytes: 1024 * 1024,
        ..small_segments(FsyncPolicy::Always)
    }
}

/// Whether the last segment file holds only zeros (or nothing) past byte `end`.
fn zeros_past(log: &TestLog, end: u64) -> bool {
    let file = std::fs::read(log.last_segment()).expect("read segment");
    let end = usize::try_from(end).expect("size");
    file.len() >= end && file[end..].iter().all(|b| *b == 0)
}

/// Asserts `error` is the refusal of a poisoned partition, caused by `cause`.
fn assert_refused_until_reopened(error: &BrokerError, cause: &str) {
    let message = error.to_string();
    assert!(
        matches!(error, BrokerError::Io { .. })
            && message.contains(cause)
            && message.contains("refuses writes until it is reopened"),
        "expected a refusal after {cause:?}, got {error:?}"
    );
}

/// Checks a reopened log: offsets from 0 with no gap, every acknowledged record byte for byte,
/// then `unacknowledged` whole or not at all, and the next append right after. Whether
/// `unacknowledged` survived.
async fn assert_consistent(
    handle: &PartitionHandle,
    acked: &[Record],
    unacknowledged: &[Record],
) -> bool {
    let stored = read_all(handle, 0, READ_STEP);
    for (expected, record) in stored.iter().enumerate() {
        assert_eq!(record.offset, expected as u64, "offsets follow on");
    }
    let survived = [acked, unacknowledged].concat();
    let found = bare(&stored);
    assert!(
        found == acked || found == survived,
        "expected the {} acknowledged records, then {} unacknowledged ones whole or not at all; found {}",
        acked.len(),
        unacknowledged.len(),
        found.len()
    );
    let end = stored.len() as u64;
    assert_eq!(handle.end_offset(), end);
    let next = records(10_000, 3, 10);
    let appended = handle
        .append(next.clone())
        .await
        .expect("append after reopening");
    assert_eq!(appended.base_offset, end, "appends continue at the end");
    // Under an interval the append becomes visible with the fsync that follows.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while handle.end_offset() == end && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(POLL).await;
    }
    assert_eq!(bare(&read_all(handle, end, READ_STEP)), next);
    found == survived
}

#[tokio::test]
async fn a_failed_fsync_fails_its_group_and_the_partition_refuses_appends_until_reopened() {
    let scenario = FailScenario::setup();
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = log.open();
    let acked = append_acknowledged(&handle, 4).await;
    // One failed fsync: the next one would succeed, and the partition must refuse anyway.
    fail::cfg("segment::sync", "1*return").expect("failpoint");

    let failed = records(100, 5, 100);
    let error = handle
        .append(failed.clone())
        .await
        .expect_err("the group's fsync failed, so it is not acknowledged");
    assert_refused_until_reopened(&error, "fsync failed");
    let later = handle
        .append(records(200, 5, 100))
        .await
        .expect_err("the partition is poisoned");
    assert_refused_until_reopened(&later, "fsync failed");
    assert_eq!(handle.end_offset(), acked.len() as u64);
    assert_eq!(
        bare(&read_all(&handle, 0, READ_STEP)),
        acked,
        "readers see nothing of the failed group"
    );
    handle.shutdown();

    let reopened = log.open();
    assert_consistent(&reopened, &acked, &failed).await;
    reopened.shutdown();
    scenario.teardown();
}

#[tokio::test]
async fn a_short_write_fails_its_append_and_leaves_no_partial_frame_behind() {
    let scenario = FailScenario::setup();
    let log = TestLog::new(one_segment());
    let handle = log.open();
    let acked = append_acknowledged(&handle, 2).await;
    // The frames' end: under `fsync always` zeros follow it in the file.
    let good_end = handle.size_bytes();
    fail::cfg("segment::append", "1*return").expect("failpoint");

    let error = handle
        .append(records(100, 20, 100))
        .await
        .expect_err("only half the frame was written");
    assert!(
        matches!(error, BrokerError::StorageFull { .. }),
        "a disk that filled up mid-write is StorageFull, got {error:?}"
    );
    assert!(
        zeros_past(&log, good_end),
        "the half-written frame is cut off the file (zeros may be written ahead again)"
    );
    // Smaller than half the failed frame: bytes left of it would show past this one's end.
    let next = records(200, 1, 10);
    let appended = handle.append(next.clone()).await.expect("append after");
    assert_eq!(appended.base_offset, acked.len() as u64);
    assert!(
        zeros_past(&log, handle.size_bytes()),
        "past the last frame: zeros written ahead at most, nothing of the failed frame"
    );
    let written = [acked.as_slice(), &next].concat();
    assert_eq!(bare(&read_all(&handle, 0, READ_STEP)), written);
    handle.shutdown();

    let length = file_len(&log.last_segment());
    let reopened = log.open();
    assert_eq!(
        file_len(&log.last_segment()),
        length,
        "recovery had nothing to cut"
    );
    assert_consistent(&reopened, &written, &[]).await;
    reopened.shutdown();
    scenario.teardown();
}

#[tokio::test]
async fn a_batch_written_but_not_indexed_when_the_writer_dies_is_recovered_whole_on_reopening() {
    let scenario = FailScenario::setup();
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = log.open();
    let acked = append_acknowledged(&handle, 12).await;
    assert!(log.segments().len() > 1, "the log spans segments");
    fail::cfg("partition_log::before_index", "1*panic").expect("failpoint");

    let crashed = records(100, 5, 100);
    let error = handle
        .append(crashed.clone())
        .await
        .expect_err("the writer died before answering");
    assert!(
        matches!(error, BrokerError::Panicked { .. }),
        "expected Panicked, got {error:?}"
    );
    assert_eq!(
        handle.end_offset(),
        acked.len() as u64,
        "the batch was never published"
    );
    assert_eq!(bare(&read_all(&handle, 0, READ_STEP)), acked);

    // Reopened while the dead writer's handle still holds its files, as after a crash.
    let reopened = log.open();
    let survived = assert_consistent(&reopened, &acked, &crashed).await;
    assert!(
        survived,
        "the batch was written whole and fsynced before the crash: the tail scan must find it"
    );
    reopened.shutdown();
    handle.shutdown();
    scenario.teardown();
}

#[tokio::test]
async fn a_failed_index_write_keeps_what_was_acknowledged_and_refuses_appends_until_reopened() {
    let scenario = FailScenario::setup();
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = log.open();
    fail::cfg("index::apply", "return").expect("failpoint");

    // The writer persists the index at most once a second, after answering the group.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let mut acked = Vec::new();
    let refused = loop {
        let batch = records(acked.len() as u64, 5, 100);
        match handle.append(batch.clone()).await {
            Ok(appended) => {
                assert_eq!(appended.base_offset, acked.len() as u64);
                acked.extend(batch);
            }
            Err(error) => break error,
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out: the failed index write never refused an append"
        );
        tokio::time::sleep(POLL).await;
    };
    assert_refused_until_reopened(&refused, "indexing failed");
    assert_eq!(
        bare(&read_all(&handle, 0, READ_STEP)),
        acked,
        "what was acknowledged stays readable"
    );
    fail::remove("index::apply");
    handle.shutdown();

    let reopened = log.open();
    assert_consistent(&reopened, &acked, &[]).await;
    reopened.shutdown();
    scenario.teardown();
}

/// The failing fsync is the n-th after the partition opened, for n in `1..=` this: the
/// failure lands on a group's fsync, on the fsync of the zeros written ahead (`always`), or on
/// the interval's timer.
const FAILING_FSYNCS: usize = 8;
/// Appends a run of D7 tries at most while waiting for the failing fsync.
const MAX_APPENDS: u64 = 200;
/// Appends a run of D7 tries once the fsync failed (then as many with the disk healthy
/// again), each of which must be refused.
const APPENDS_AFTER: usize = 5;
/// The fsync interval of D7's interval runs: short, so the timer's fsyncs come often.
const D7_INTERVAL_MS: u64 = 2;

/// What D7's runs counted.
#[derive(Debug, Default)]
struct FsyncFailures {
    injected: u64,
    appends_after: u64,
    acks_after: u64,
    acked: u64,
}

/// Appends until the `n`-th fsync fails, then [`APPENDS_AFTER`] more with the failpoint on and
/// as many with it off: counts the answers after the failure, then reopens and checks that
/// every acknowledged record is there.
async fn fail_the_nth_fsync(fsync: FsyncPolicy, n: usize, counts: &mut FsyncFailures) {
    let log = TestLog::new(small_segments(fsync));
    let handle = log.open();
    fail::cfg("segment::sync", &format!("{}*off->1*return", n - 1)).expect("failpoint");
    let (mut acked, mut refused_batch) = (Vec::new(), None);
    for i in 0..MAX_APPENDS {
        let batch = records(i * 5, 5, 100);
        match handle.append(batch.clone()).await {
            Ok(appended) => {
                assert_eq!(appended.base_offset, acked.len() as u64);
                acked.extend(batch);
            }
            Err(error) => {
                assert_refused_until_reopened(&error, "fsync failed");
                refused_batch = Some(batch);
                break;
            }
        }
        if matches!(fsync, FsyncPolicy::IntervalMs(_)) {
            tokio::time::sleep(Duration::from_millis(D7_INTERVAL_MS)).await;
        }
    }
    let refused_batch = refused_batch.expect("coverage: the failing fsync came");
    // Under an interval, what was acknowledged unsynced never becomes visible: its fsync failed.
    let visible = handle.end_offset();
    counts.injected += 1;
    counts.acked += acked.len() as u64;
    for healthy in [false, true] {
        if healthy {
            fail::remove("segment::sync");
        }
        for i in 0..APPENDS_AFTER {
            counts.appends_after += 1;
            match handle.append(records(10_000 + i as u64, 1, 10)).await {
                Ok(_) => counts.acks_after += 1,
                Err(error) => assert_refused_until_reopened(&error, "fsync failed"),
            }
        }
    }
    assert_eq!(handle.end_offset(), visible, "nothing more became visible");
    if fsync == FsyncPolicy::Always {
        assert_eq!(
            visible,
            acked.len() as u64,
            "every ack was fsynced and visible"
        );
    }
    handle.shutdown();
    let reopened = log.open();
    assert_consistent(&reopened, &acked, &refused_batch).await;
    reopened.shutdown();
}

#[tokio::test]
async fn after_an_fsync_fails_at_any_point_no_append_is_acknowledged_until_reopened() {
    let scenario = FailScenario::setup();
    let mut counts = FsyncFailures::default();
    for fsync in [FsyncPolicy::Always, FsyncPolicy::IntervalMs(D7_INTERVAL_MS)] {
        for n in 1..=FAILING_FSYNCS {
            fail_the_nth_fsync(fsync, n, &mut counts).await;
        }
    }
    CaseLine::new("D7", "failing-fsync")
        .figure("failed fsyncs injected", counts.injected)
        .must_be_zero(
            "acks after a failed fsync",
            counts.acks_after,
            counts.appends_after,
        )
        .figure(
            "acked before the failure kept",
            format!("{0} of {0}", counts.acked),
        )
        .record();
    assert_eq!(
        counts.acks_after, 0,
        "an append was acknowledged after a failed fsync"
    );
    assert_eq!(counts.injected, 2 * FAILING_FSYNCS as u64);
    scenario.teardown();
}
