//! Segment rolling, reads across segment boundaries and their limits, timestamp lookups, and
//! retention by size and by age.

use broker_core::config::FsyncPolicy;
use broker_core::message::Record;
use broker_core::storage::{LogPosition, PartitionHandle};

use crate::support::{self, TestLog, bare, read_all, records, segment_files, small_segments};

/// 60 batches of 4 records with 150-byte values over 4 KiB segments.
async fn rolled_log() -> (TestLog, PartitionHandle, Vec<Record>) {
    let log = TestLog::new(small_segments(FsyncPolicy::Never));
    let handle = log.open();
    for batch in 0..60 {
        let appended = handle
            .append(records(batch * 4, 4, 150))
            .await
            .expect("append");
        assert_eq!((appended.base_offset, appended.count), (batch * 4, 4));
    }
    (log, handle, records(0, 240, 150))
}

fn segment_bases(log: &TestLog) -> Vec<u64> {
    log.segments()
        .iter()
        .map(|p| {
            let stem = p.file_stem().and_then(|s| s.to_str()).expect("stem");
            stem.parse().expect("base")
        })
        .collect()
}

#[tokio::test]
async fn segments_roll_at_the_configured_size_and_reads_cross_their_boundaries() {
    let (log, handle, all) = rolled_log().await;
    let bases = segment_bases(&log);
    assert!(bases.len() >= 5, "{bases:?}");
    for path in &log.segments()[..bases.len() - 1] {
        let len = std::fs::metadata(path).expect("metadata").len();
        assert!(
            (4096..4096 + 1024).contains(&len),
            "a sealed segment of {len} bytes"
        );
    }
    for step in [1, 3, 7, 1000] {
        assert_eq!(bare(&read_all(&handle, 0, step)), all, "step {step}");
    }
    for &base in &bases[1..] {
        let across = handle.read(base - 2, 5, usize::MAX).expect("read");
        let offsets: Vec<u64> = across.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, (base - 2..base + 3).collect::<Vec<_>>());
        assert_eq!(bare(&across), all[base as usize - 2..base as usize + 3]);
    }
    handle.shutdown();
}

#[tokio::test]
async fn a_read_stops_before_the_value_that_would_pass_max_bytes_but_returns_at_least_one() {
    let (_log, handle, all) = rolled_log().await;
    assert_eq!(handle.read(10, 100, 450).expect("read").len(), 3);
    assert_eq!(handle.read(10, 100, 449).expect("read").len(), 2);
    let one = handle.read(10, 100, 1).expect("read");
    assert_eq!(bare(&one), all[10..11]);
    assert_eq!(handle.read(10, 0, usize::MAX).expect("read"), vec![]);
    assert_eq!(handle.read(240, 10, usize::MAX).expect("read"), vec![]);
    assert_eq!(handle.read(10_000, 10, usize::MAX).expect("read"), vec![]);
    handle.shutdown();
}

#[tokio::test]
async fn retention_by_bytes_deletes_the_oldest_whole_segments_and_moves_the_start() {
    let (log, handle, all) = rolled_log().await;
    let before = handle.size_bytes();
    let limit = before / 2;
    let deleted = handle
        .enforce_retention(0, None, Some(limit), LogPosition::MAX)
        .expect("retention");
    assert!(deleted > 0);
    assert!(handle.size_bytes() <= limit);
    let bases = segment_bases(&log);
    let start = handle.start_offset();
    assert_eq!(start, bases[0]);
    let from_zero = read_all(&handle, 0, 13);
    assert_eq!(from_zero[0].offset, start);
    assert_eq!(bare(&from_zero), all[start as usize..]);
    assert_eq!(
        handle
            .enforce_retention(0, None, Some(limit), LogPosition::MAX)
            .expect("again"),
        0
    );
    handle.shutdown();

    let handle = log.open();
    assert_eq!(handle.start_offset(), start);
    assert_eq!(bare(&read_all(&handle, 0, 13)), all[start as usize..]);
    handle.shutdown();
}

#[tokio::test]
async fn retention_keeps_the_segment_holding_state_a_checkpoint_does_not_yet_reflect() {
    let (log, handle, _) = rolled_log().await;
    let bases = segment_bases(&log);
    let checkpoint = LogPosition {
        segment_base: bases[2],
        position: 0,
    };
    let deleted = handle
        .enforce_retention(u64::MAX, Some(0), Some(0), checkpoint)
        .expect("retention");
    assert_eq!(deleted, 2, "only the segments before the checkpoint's");
    assert_eq!(segment_bases(&log), bases[2..].to_vec());
    handle.shutdown();
}

#[tokio::test]
async fn retention_never_deletes_the_active_segment_and_appends_go_on() {
    let (log, handle, _) = rolled_log().await;
    let last_base = *segment_bases(&log).last().expect("a segment");
    handle
        .enforce_retention(u64::MAX, Some(0), Some(0), LogPosition::MAX)
        .expect("retention");
    assert_eq!(segment_bases(&log), vec![last_base]);
    assert_eq!(handle.start_offset(), last_base);
    let appended = handle.append(records(240, 1, 10)).await.expect("append");
    assert_eq!(appended.base_offset, 240);
    assert_eq!(read_all(&handle, 0, 100).len() as u64, 241 - last_base);
    handle.shutdown();
}

#[tokio::test]
async fn retention_by_age_deletes_only_segments_whose_newest_record_is_too_old() {
    let (log, handle, all) = rolled_log().await;
    let bases = segment_bases(&log);
    let newest_of_second = bases[2] - 1;
    let now = all[newest_of_second as usize].timestamp_ms + 10_000;
    let deleted = handle
        .enforce_retention(now, Some(10_000), None, LogPosition::MAX)
        .expect("retention");
    assert_eq!(
        deleted, 1,
        "the second segment's newest record is exactly at the limit"
    );
    assert_eq!(handle.start_offset(), bases[1]);
    let deleted = handle
        .enforce_retention(now + 1, Some(10_000), None, LogPosition::MAX)
        .expect("retention");
    assert_eq!(deleted, 1);
    assert_eq!(handle.start_offset(), bases[2]);
    assert_eq!(segment_files(&log.dir).len(), bases.len() - 2);
    handle.shutdown();
}

#[tokio::test]
async fn offset_for_timestamp_finds_the_first_record_at_or_after_it_even_with_skewed_clocks() {
    let log = TestLog::new(small_segments(FsyncPolicy::Never));
    let handle = log.open();
    let stamps = [100, 300, 200, 50, 400, 250, 600, 500];
    for (n, pair) in stamps.chunks(2).enumerate() {
        let batch = pair
            .iter()
            .enumerate()
            .map(|(i, &ts)| {
                let mut r = support::record((n * 2 + i) as u64, 10);
                r.timestamp_ms = ts;
                r
            })
            .collect();
        handle.append(batch).await.expect("append");
    }
    for ts in [0, 100, 101, 250, 301, 450, 600, 601, u64::MAX] {
        let expected = stamps
            .iter()
            .position(|&s| s >= ts)
            .map_or(stamps.len() as u64, |p| p as u64);
        assert_eq!(
            handle.offset_for_timestamp(ts).expect("lookup"),
            expected,
            "ts {ts}"
        );
    }
    handle.shutdown();
}

#[tokio::test]
async fn offset_for_timestamp_after_retention_answers_from_the_new_start() {
    let (_log, handle, all) = rolled_log().await;
    handle
        .enforce_retention(0, None, Some(handle.size_bytes() / 2), LogPosition::MAX)
        .expect("retention");
    let start = handle.start_offset();
    assert_eq!(handle.offset_for_timestamp(0).expect("lookup"), start);
    let later = start + 17;
    let ts = all[later as usize].timestamp_ms;
    assert_eq!(handle.offset_for_timestamp(ts).expect("lookup"), later);
    assert_eq!(handle.offset_for_timestamp(u64::MAX).expect("lookup"), 240);
    handle.shutdown();
}
