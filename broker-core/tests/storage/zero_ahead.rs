//! Zeros ahead of the log's end (`fsync always`): the active segment keeps zeros written past
//! its last frame so that appends overwrite blocks the file has; a clean shutdown trims them,
//! and a crash image that still has them (or a torn frame followed by them) recovers every
//! record that was written whole.

use std::path::Path;
use std::time::{Duration, Instant};

use broker_core::config::{FsyncPolicy, LogConfig};

use crate::support::{TestLog, bare, file_len, read_all, records};

/// `fsync always` with segments big enough for the whole 1 MiB of zeros ahead.
fn four_mib_segments(fsync: FsyncPolicy) -> LogConfig {
    LogConfig {
        segment_bytes: 4 * 1024 * 1024,
        fsync,
        leader_epoch: 3,
    }
}

/// Whether every byte of `path` from `from` on is zero.
fn zeros_from(path: &Path, from: u64) -> bool {
    let bytes = std::fs::read(path).expect("read segment");
    bytes[from as usize..].iter().all(|b| *b == 0)
}

/// Waits (up to 5 s) until `path` is longer than `than`: the writer zeroes after answering.
fn wait_longer(path: &Path, than: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let len = file_len(path);
        if len > than || Instant::now() > deadline {
            return len;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test]
async fn under_fsync_always_the_active_segment_keeps_zeros_ahead_and_a_clean_shutdown_trims_them() {
    let log = TestLog::new(four_mib_segments(FsyncPolicy::Always));
    let handle = log.open();
    for n in 0..10 {
        handle.append(records(n * 5, 5, 100)).await.expect("append");
    }
    let frames = handle.size_bytes();
    let path = log.last_segment();
    let len = wait_longer(&path, frames);
    assert!(
        len >= frames + 256 * 1024,
        "{len} bytes for {frames} of frames"
    );
    assert!(zeros_from(&path, frames), "past the frames: zeros only");
    handle.shutdown();
    assert_eq!(file_len(&path), frames, "a clean shutdown trims the zeros");
}

#[tokio::test]
async fn without_fsync_always_nothing_is_written_ahead() {
    for fsync in [FsyncPolicy::Never, FsyncPolicy::IntervalMs(5)] {
        let log = TestLog::new(four_mib_segments(fsync));
        let handle = log.open();
        for n in 0..10 {
            handle.append(records(n * 5, 5, 100)).await.expect("append");
        }
        let frames = handle.size_bytes();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(file_len(&log.last_segment()), frames, "{fsync:?}");
        handle.shutdown();
    }
}

#[tokio::test]
async fn a_crash_image_with_zeros_after_the_last_frame_recovers_every_record_and_appends_after_them()
 {
    for torn in [0, 1, 30] {
        let log = TestLog::new(four_mib_segments(FsyncPolicy::Always));
        let handle = log.open();
        handle.append(records(0, 5, 100)).await.expect("append");
        handle.append(records(5, 5, 100)).await.expect("append");
        let two = handle.size_bytes();
        handle.append(records(10, 5, 100)).await.expect("append");
        let three = handle.size_bytes();
        handle.shutdown();
        // The image a crash leaves: the third frame whole, or torn after `torn` bytes with
        // its pages past that still zeros; then the zeros written ahead.
        let path = log.last_segment();
        let mut bytes = std::fs::read(&path).expect("read");
        let kept = if torn == 0 { three } else { two + torn };
        bytes.truncate(kept as usize);
        bytes.resize(kept as usize + 1024 * 1024, 0);
        std::fs::write(&path, &bytes).expect("write");

        let expected = if torn == 0 { 15 } else { 10 };
        let handle = log.open();
        assert_eq!(handle.end_offset(), expected, "torn after {torn} bytes");
        assert_eq!(bare(&read_all(&handle, 0, 4)), records(0, expected, 100));
        let next = handle.append(records(100, 3, 100)).await.expect("append");
        assert_eq!(next.base_offset, expected);
        handle.shutdown();
        let handle = log.open();
        let mut all = records(0, expected, 100);
        all.extend(records(100, 3, 100));
        assert_eq!(
            bare(&read_all(&handle, 0, 7)),
            all,
            "after a second restart"
        );
        handle.shutdown();
    }
}
