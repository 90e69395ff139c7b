//! Recovery: a torn, garbled or junk-extended tail is cut at the last valid batch, bad records
//! are never served, appends continue at the right offset, and a lost index is rebuilt.

use broker_core::config::FsyncPolicy;
use broker_core::error::BrokerError;
use broker_core::storage::PartitionHandle;

use crate::support::{
    TestLog, bare, file_len, read_all, record, records, small_segments, truncate_file,
};

/// Three batches of five records in one segment; returns the log and where batch 3 starts.
async fn three_batches() -> (TestLog, u64) {
    let log = TestLog::new(small_segments(FsyncPolicy::Always).with_big_segments());
    let handle = log.open();
    handle.append(records(0, 5, 40)).await.expect("append");
    handle.append(records(5, 5, 40)).await.expect("append");
    let third_at = handle.size_bytes();
    handle.append(records(10, 5, 40)).await.expect("append");
    handle.shutdown();
    (log, third_at)
}

trait BigSegments {
    fn with_big_segments(self) -> Self;
}

impl BigSegments for broker_core::config::LogConfig {
    fn with_big_segments(mut self) -> Self {
        self.segment_bytes = 1024 * 1024;
        self
    }
}

/// After recovery the log must hold exactly `expected` records and take new appends after them.
async fn assert_recovered_to(log: &TestLog, expected: u64) -> PartitionHandle {
    let handle = log.open();
    assert_eq!(handle.end_offset(), expected);
    assert_eq!(bare(&read_all(&handle, 0, 4)), records(0, expected, 40));
    let appended = handle.append(records(100, 3, 40)).await.expect("append");
    assert_eq!(appended.base_offset, expected);
    let tail = handle.read(expected, 10, usize::MAX).expect("read");
    assert_eq!(bare(&tail), records(100, 3, 40));
    assert_eq!(tail[0].offset, expected);
    handle.shutdown();
    log.tree().clear().expect("clear index");
    let rebuilt = log.open();
    let mut all = records(0, expected, 40);
    all.extend(records(100, 3, 40));
    assert_eq!(
        bare(&read_all(&rebuilt, 0, 4)),
        all,
        "the files alone hold the log"
    );
    rebuilt
}

#[tokio::test]
async fn a_last_segment_cut_anywhere_inside_the_last_batch_ends_the_log_at_the_batch_before() {
    let (probe, third_at) = three_batches().await;
    let full = file_len(&probe.last_segment());
    for cut in [
        third_at + 1,
        third_at + 7,
        third_at + 8,
        third_at + 50,
        full - 1,
    ] {
        let (log, _) = three_batches().await;
        truncate_file(&log.last_segment(), cut);
        let handle = assert_recovered_to(&log, 10).await;
        handle.shutdown();
    }
}

#[tokio::test]
async fn garbled_bytes_inside_the_last_batch_are_never_served() {
    let (probe, third_at) = three_batches().await;
    let full = file_len(&probe.last_segment());
    for at in [third_at, third_at + 5, third_at + 30, full - 1] {
        let (log, _) = three_batches().await;
        let path = log.last_segment();
        let mut bytes = std::fs::read(&path).expect("read segment");
        bytes[at as usize] ^= 0x40;
        std::fs::write(&path, bytes).expect("write segment");
        let handle = assert_recovered_to(&log, 10).await;
        handle.shutdown();
    }
}

#[tokio::test]
async fn junk_after_the_last_batch_is_cut_and_every_batch_before_it_kept() {
    let junks: [&[u8]; 4] = [
        &[0xab; 3],
        &[0xab; 100],
        &[0; 64],
        &[60, 0, 0, 0, 1, 2, 3, 4, 1, 15, 0, 0, 0, 0, 0, 0, 0],
    ];
    for junk in junks {
        let (log, _) = three_batches().await;
        let path = log.last_segment();
        let mut bytes = std::fs::read(&path).expect("read segment");
        let valid_len = bytes.len() as u64;
        bytes.extend_from_slice(junk);
        std::fs::write(&path, bytes).expect("write segment");
        let handle = assert_recovered_to(&log, 15).await;
        handle.shutdown();
        assert!(
            file_len(&path) > valid_len,
            "the new batch follows the valid ones"
        );
    }
}

#[tokio::test]
async fn a_lost_index_is_rebuilt_from_the_segment_files() {
    let log = TestLog::new(small_segments(FsyncPolicy::Never));
    let handle = log.open();
    for batch in 0..40 {
        handle
            .append(records(batch * 4, 4, 150))
            .await
            .expect("append");
    }
    let before = read_all(&handle, 0, 9);
    handle.shutdown();
    assert!(log.segments().len() > 3);
    log.tree().clear().expect("clear index");

    let handle = log.open();
    assert_eq!(handle.end_offset(), 160);
    assert_eq!(read_all(&handle, 0, 9), before);
    assert_eq!(handle.offset_for_timestamp(1_000 + 77).expect("lookup"), 77);
    let appended = handle.append(records(160, 2, 150)).await.expect("append");
    assert_eq!(appended.base_offset, 160);
    handle.shutdown();
}

#[tokio::test]
async fn index_entries_lost_after_some_batch_are_rebuilt_by_scanning_forward_from_it() {
    let log = TestLog::new(small_segments(FsyncPolicy::Never));
    let handle = log.open();
    for batch in 0..40 {
        handle
            .append(records(batch * 4, 4, 150))
            .await
            .expect("append");
    }
    let before = read_all(&handle, 0, 9);
    handle.shutdown();
    let tree = log.tree();
    for key in tree.iter().keys() {
        let key = key.expect("key");
        let offset_at_or_past_50 = key[0] == b'o' && key[1..] >= 50u64.to_be_bytes()[..];
        if offset_at_or_past_50 || key[0] == b't' {
            tree.remove(key).expect("remove");
        }
    }

    let handle = log.open();
    assert_eq!(handle.end_offset(), 160);
    assert_eq!(read_all(&handle, 0, 9), before);
    assert_eq!(
        handle.offset_for_timestamp(1_000 + 131).expect("lookup"),
        131
    );
    handle.shutdown();
}

/// Thirty batches over several 4 KiB segments; returns the log and the last segment's base.
async fn thirty_batches_over_segments() -> (TestLog, u64) {
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = log.open();
    for batch in 0..30 {
        handle
            .append(records(batch * 5, 5, 100))
            .await
            .expect("append");
    }
    handle.shutdown();
    let last_base = file_stem_offset(&log.last_segment());
    assert!(
        last_base > 0 && last_base < 145,
        "the last segment holds several batches"
    );
    (log, last_base)
}

async fn assert_ends_at_and_continues(log: &TestLog, end: u64) {
    let handle = log.open();
    assert_eq!(handle.end_offset(), end);
    assert_eq!(bare(&read_all(&handle, 0, 50)), records(0, end, 100));
    assert_eq!(
        handle.offset_for_timestamp(1_000 + end).expect("lookup"),
        end
    );
    assert_eq!(handle.read(end, 5, usize::MAX).expect("read"), vec![]);
    let appended = handle.append(records(500, 1, 10)).await.expect("append");
    assert_eq!(appended.base_offset, end);
    let read = handle.read(end, 5, usize::MAX).expect("read");
    assert_eq!(bare(&read), vec![record(500, 10)]);
    handle.shutdown();
}

#[tokio::test]
async fn index_entries_of_batches_cut_from_the_tail_are_dropped() {
    let (log, last_base) = thirty_batches_over_segments().await;
    truncate_file(&log.last_segment(), 10);
    assert_ends_at_and_continues(&log, last_base).await;
}

#[tokio::test]
async fn a_vanished_last_segment_ends_the_log_at_the_segment_before() {
    let (log, last_base) = thirty_batches_over_segments().await;
    std::fs::remove_file(log.last_segment()).expect("remove");
    assert_ends_at_and_continues(&log, last_base).await;
}

#[tokio::test]
async fn a_corrupt_frame_in_an_older_segment_fails_the_read_instead_of_serving_garbage() {
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = log.open();
    for batch in 0..20 {
        handle
            .append(records(batch * 5, 5, 100))
            .await
            .expect("append");
    }
    handle.shutdown();
    let first = &log.segments()[0];
    let mut bytes = std::fs::read(first).expect("read segment");
    bytes[60] ^= 0xff;
    std::fs::write(first, bytes).expect("write segment");

    let handle = log.open();
    assert_eq!(
        handle.end_offset(),
        100,
        "only the tail is checked at startup"
    );
    let error = handle.read(0, 10, usize::MAX).expect_err("a corrupt read");
    assert!(matches!(error, BrokerError::Corrupt { .. }), "{error:?}");
    let second_base = file_stem_offset(&log.segments()[1]);
    let later = handle
        .read(second_base, 10, usize::MAX)
        .expect("later segments read");
    assert_eq!(bare(&later), records(second_base, 10, 100));
    handle.shutdown();
}

#[tokio::test]
async fn a_log_reopened_without_damage_keeps_every_record_and_its_epoch() {
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = log.open();
    handle.append(records(0, 3, 10)).await.expect("append");
    handle.shutdown();
    let handle = log.open();
    let read = handle.read(0, 10, usize::MAX).expect("read");
    assert_eq!(bare(&read), records(0, 3, 10));
    assert!(read.iter().all(|r| r.leader_epoch == 7));
    assert_eq!(handle.start_offset(), 0);
    handle.shutdown();
}

fn file_stem_offset(path: &std::path::Path) -> u64 {
    let stem = path.file_stem().and_then(|s| s.to_str()).expect("stem");
    stem.parse().expect("a segment base offset")
}

#[tokio::test]
async fn a_torn_frame_before_the_newest_written_one_is_cut_at_recovery_under_fsync_never() {
    // Under `never` (or an interval) a power loss can keep a later page of the segment and lose
    // an earlier one: the second batch is torn while the third is intact.
    let log = TestLog::new(small_segments(FsyncPolicy::Never).with_big_segments());
    let handle = log.open();
    handle.append(records(0, 5, 40)).await.expect("append");
    let second_at = handle.size_bytes();
    handle.append(records(5, 5, 40)).await.expect("append");
    handle.append(records(10, 5, 40)).await.expect("append");
    // The process dies: no shutdown, the index is as the crash left it.
    std::mem::forget(handle);
    let segment = log.last_segment();
    let mut bytes = std::fs::read(&segment).expect("read segment");
    bytes[second_at as usize + 20] ^= 0xff;
    std::fs::write(&segment, &bytes).expect("write segment");

    let recovered = log.open();
    assert_eq!(
        recovered.end_offset(),
        5,
        "the log ends before the torn frame, whatever follows it"
    );
    assert_eq!(bare(&read_all(&recovered, 0, 100)), records(0, 5, 40));
    let appended = recovered.append(records(100, 2, 40)).await.expect("append");
    assert_eq!(appended.base_offset, 5);
    recovered.shutdown();
}
