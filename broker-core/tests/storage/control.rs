//! Control batches in the partition log: durable state changes that take no message offsets,
//! replayed in log order after a restart.

use broker_core::config::FsyncPolicy;
use broker_core::storage::{LogPosition, PartitionHandle};
use bytes::Bytes;

use crate::support::{self, TestLog, bare, read_all, records, small_segments, truncate_file};

fn entry(n: u64) -> Bytes {
    Bytes::from(format!("change-{n}"))
}

/// Every control entry from `from`, with the position after its frame.
fn replay(log: &PartitionHandle, from: LogPosition) -> Vec<(LogPosition, Bytes)> {
    let mut seen = Vec::new();
    log.replay_controls(from, |at, entry| {
        seen.push((at, entry));
        Ok(())
    })
    .expect("replay");
    seen
}

fn entries(seen: &[(LogPosition, Bytes)]) -> Vec<Bytes> {
    seen.iter().map(|(_, e)| e.clone()).collect()
}

#[tokio::test]
async fn control_entries_take_no_offsets_and_replay_in_log_order_across_segments_and_restarts() {
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = log.open();
    let mut sent_records = Vec::new();
    let mut sent_entries = Vec::new();
    for round in 0..40u64 {
        let batch = records(round * 3, 3, 100);
        let appended = handle.append(batch.clone()).await.expect("append");
        assert_eq!(appended.base_offset, round * 3, "offsets stay contiguous");
        sent_records.extend(batch);
        let changes = vec![entry(round * 2), entry(round * 2 + 1)];
        let committed = handle
            .queue_control(changes.clone())
            .expect("queue")
            .wait()
            .await
            .expect("commit");
        assert_eq!((committed.count, committed.base_offset), (0, round * 3 + 3));
        sent_entries.extend(changes);
    }
    assert!(log.segments().len() > 3, "the test must cross segments");
    assert_eq!(handle.end_offset(), 120);
    assert_eq!(bare(&read_all(&handle, 0, 7)), sent_records);
    assert_eq!(
        entries(&replay(&handle, LogPosition::default())),
        sent_entries
    );
    handle.shutdown();

    let reopened = log.open();
    assert_eq!(reopened.end_offset(), 120);
    assert_eq!(bare(&read_all(&reopened, 0, 1000)), sent_records);
    let seen = replay(&reopened, LogPosition::default());
    assert_eq!(entries(&seen), sent_entries);
    let (middle, _) = seen[39];
    let later = replay(&reopened, middle);
    assert_eq!(
        entries(&later),
        sent_entries[40..],
        "a replay from a position sees what follows it"
    );
    assert_eq!(
        replay(&reopened, reopened.end_position()).len(),
        0,
        "nothing after the end"
    );
    reopened.shutdown();
}

#[tokio::test]
async fn a_torn_control_frame_at_the_tail_is_cut_at_recovery_and_the_messages_stay() {
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = log.open();
    handle.append(records(0, 2, 10)).await.expect("append");
    handle
        .queue_control(vec![entry(1), entry(2)])
        .expect("queue")
        .wait()
        .await
        .expect("commit");
    handle.shutdown();
    let segment = log.last_segment();
    let len = support::file_len(&segment);
    truncate_file(&segment, len - 3);

    let reopened = log.open();
    assert_eq!(reopened.end_offset(), 2);
    assert!(replay(&reopened, LogPosition::default()).is_empty());
    reopened
        .append(records(2, 1, 10))
        .await
        .expect("append after the cut");
    assert_eq!(read_all(&reopened, 0, 10).len(), 3);
    reopened.shutdown();
}

#[tokio::test]
async fn control_batches_past_a_full_segment_without_a_message_keep_it_active_until_one_comes() {
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = log.open();
    handle.append(records(0, 2, 100)).await.expect("append");
    let mut sent = Vec::new();
    // Segments are 4 KiB: a few of these fill one, and then many more come with no message.
    for n in 0..200 {
        let changes = vec![entry(n)];
        let pending = handle.queue_control(changes.clone()).expect("queue");
        pending
            .wait()
            .await
            .expect("control batches never fail for want of an offset");
        sent.extend(changes);
    }
    let segments = log.segments().len();
    let appended = handle.append(records(2, 3, 100)).await.expect("append");
    assert_eq!(appended.base_offset, 2);
    assert_eq!(bare(&read_all(&handle, 0, 10)), records(0, 5, 100));
    assert_eq!(entries(&replay(&handle, LogPosition::default())), sent);
    handle.shutdown();

    let reopened = log.open();
    assert_eq!(reopened.end_offset(), 5);
    assert_eq!(entries(&replay(&reopened, LogPosition::default())), sent);
    assert!(log.segments().len() <= segments + 1);
    reopened.shutdown();
}
