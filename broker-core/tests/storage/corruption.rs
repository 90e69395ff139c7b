//! Damage on disk while the broker is stopped (`RELIABILITY.md` D5): every single-bit flip and
//! every cut inside the last batch, zeroed runs of bytes in it, junk after it, and a bit flip in
//! an older segment, each with the sparse index kept, lost, or partly lost. Each damage must be
//! detected, by recovery (the log ends at the batch before, and takes appends there) or, in an
//! older segment that recovery does not scan, by the read (`Corrupt`, never the bad records);
//! no record served may differ from what was written.

use broker_core::config::{FsyncPolicy, LogConfig};
use broker_core::error::BrokerError;
use broker_core::storage::PartitionHandle;
use wharf_reliability::CaseLine;

use crate::support::{TestLog, append_acknowledged, bare, read_all, records, small_segments};

/// Records a read takes at a time: few, so reads cross batches.
const READ_STEP: usize = 4;
/// Bytes of a record's value in the three-batch log: a batch of five is over the 4 KiB between
/// two index entries, so the index holds an entry for the second batch and recovery starts
/// there when it is kept.
const VALUE_BYTES: usize = 1000;
/// Bytes at the head of the last frame (prefix and header) where every byte is damaged; past
/// them, one byte in [`STRIDE`].
const HEAD_BYTES: usize = 64;
/// The step between damaged bytes past the head.
const STRIDE: usize = 61;
/// Length of a zeroed run: a torn sector's worth of lost bytes, scaled down to a small frame.
const ZEROED_RUN: usize = 16;

/// What a set of damages counted.
#[derive(Debug, Default)]
struct Tally {
    cases: u64,
    detected: u64,
    served: u64,
    corrupt_served: u64,
}

/// One segment of three batches of five records; where the third batch starts.
async fn three_batches() -> (TestLog, usize) {
    let log = TestLog::on_tmpfs(LogConfig {
        segment_bytes: 1024 * 1024,
        ..small_segments(FsyncPolicy::Always)
    });
    let handle = log.open();
    handle
        .append(records(0, 5, VALUE_BYTES))
        .await
        .expect("append");
    handle
        .append(records(5, 5, VALUE_BYTES))
        .await
        .expect("append");
    let third_at = handle.size_bytes() as usize;
    handle
        .append(records(10, 5, VALUE_BYTES))
        .await
        .expect("append");
    handle.shutdown();
    (log, third_at)
}

/// How much of the sparse index a case keeps.
#[derive(Debug, Clone, Copy)]
enum Index {
    Kept,
    Lost,
}

/// Writes `damaged` as the log's segment (its index as `index` says), reopens, and counts:
/// detected if the log ends after the second batch and takes an append there.
async fn check_tail_damage(log: &TestLog, damaged: &[u8], index: Index, tally: &mut Tally) {
    std::fs::write(log.last_segment(), damaged).expect("write segment");
    if let Index::Lost = index {
        log.tree().clear().expect("clear index");
    }
    let handle = log.open();
    let served = read_all(&handle, 0, READ_STEP);
    tally.cases += 1;
    tally.served += served.len() as u64;
    let expected = records(0, served.len() as u64, VALUE_BYTES);
    let offsets_follow = served.iter().zip(0..).all(|(s, o)| s.offset == o);
    tally.corrupt_served += u64::from(bare(&served) != expected || !offsets_follow);
    let appended = handle.append(records(100, 1, 10)).await;
    let ends_before = served.len() == 10 && appended.is_ok_and(|a| a.base_offset == 10);
    tally.detected += u64::from(ends_before);
    handle.shutdown();
}

/// The damages of the last batch: each in turn on the same log, restored in between.
async fn damage_the_last_batch(tally: &mut Tally) {
    let (log, third_at) = three_batches().await;
    let intact = std::fs::read(log.last_segment()).expect("read segment");
    let end = intact.len();
    let head_end = third_at + HEAD_BYTES;
    let places: Vec<usize> = (third_at..head_end)
        .chain((head_end..end).step_by(STRIDE))
        .chain([end - 1])
        .collect();
    let mut damages: Vec<Vec<u8>> = Vec::new();
    for &at in &places {
        let mut flipped = intact.clone();
        flipped[at] ^= 1 << (at % 8);
        damages.push(flipped);
    }
    damages.extend(places[1..].iter().map(|&cut| intact[..cut].to_vec()));
    for at in (third_at..end - ZEROED_RUN).step_by(ZEROED_RUN) {
        let mut zeroed = intact.clone();
        zeroed[at..at + ZEROED_RUN].fill(0);
        damages.push(zeroed);
    }
    let mut junk = intact[..third_at].to_vec();
    junk.extend_from_slice(&[0xab; 100]);
    damages.push(junk);
    for (n, damaged) in damages.iter().enumerate() {
        let index = if n % 2 == 0 { Index::Kept } else { Index::Lost };
        check_tail_damage(&log, damaged, index, tally).await;
        // Back to three intact batches, and their index.
        std::fs::write(log.last_segment(), &intact).expect("restore");
        log.tree().clear().expect("clear index");
        log.open().shutdown();
    }
}

/// A bit flip in the first of several segments: recovery scans only the tail, so the read
/// must fail rather than serve it; later segments stay readable.
async fn damage_an_older_segment(tally: &mut Tally) {
    let log = TestLog::on_tmpfs(small_segments(FsyncPolicy::Always));
    let handle = log.open();
    append_acknowledged(&handle, 20).await;
    handle.shutdown();
    let first = log.segments()[0].clone();
    let intact = std::fs::read(&first).expect("read segment");
    for at in (0..intact.len()).step_by(97) {
        let mut flipped = intact.clone();
        flipped[at] ^= 1 << (at % 8);
        std::fs::write(&first, &flipped).expect("write segment");
        let handle = log.open();
        tally.cases += 1;
        check_read_refused(&handle, tally);
        handle.shutdown();
        std::fs::write(&first, &intact).expect("restore");
    }
}

/// Reads every batch of the first segment from its first offset: the damaged one must fail
/// with `Corrupt`, every record served must be intact.
fn check_read_refused(handle: &PartitionHandle, tally: &mut Tally) {
    let mut next = 0;
    let mut refused = false;
    while next < handle.end_offset() {
        match handle.read(next, READ_STEP, usize::MAX) {
            Ok(piece) => {
                tally.served += piece.len() as u64;
                let expected = records(next, piece.len() as u64, 100);
                tally.corrupt_served += u64::from(bare(&piece) != expected);
                next += piece.len().max(1) as u64;
            }
            Err(BrokerError::Corrupt { .. }) => {
                refused = true;
                next = handle.next_readable_after(next).expect("skip the damage");
            }
            Err(e) => panic!("a read failed otherwise: {e}"),
        }
    }
    tally.detected += u64::from(refused);
}

#[tokio::test]
async fn every_damage_on_disk_is_detected_and_no_corrupt_record_is_served() {
    let mut tally = Tally::default();
    damage_the_last_batch(&mut tally).await;
    damage_an_older_segment(&mut tally).await;
    CaseLine::new("D5", "corruption")
        .figure("damages", tally.cases)
        .must_be_zero("corrupt records served", tally.corrupt_served, tally.served)
        .must_be_zero("undetected", tally.cases - tally.detected, tally.cases)
        .figure("detected", format!("{} of {}", tally.detected, tally.cases))
        .record();
    assert_eq!(tally.corrupt_served, 0, "a damaged record was served");
    assert_eq!(tally.detected, tally.cases, "a damage went undetected");
    assert!(tally.cases > 100, "coverage: {} damages", tally.cases);
}
