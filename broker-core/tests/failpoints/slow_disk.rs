//! A slow disk (RELIABILITY.md D8): every fdatasync of a segment takes 200 ms (the
//! `segment::sync` failpoint sleeps, and counts the fsyncs). 1,000 producers append at once:
//! group commit puts many of them behind one fsync; the writer's queue is bounded (batches and
//! bytes), so a producer finding it full waits at most `WRITER_ENQUEUE_TIMEOUT_MS` and is then
//! refused with [`BrokerError::Overloaded`] (503 with `Retry-After` at the edge) rather than
//! queueing without bound; nothing fails otherwise, and every acknowledged record is readable
//! at its offset. The refusal share and latencies are reported, not asserted (wall clock).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use broker_core::config::{FsyncPolicy, LogConfig};
use broker_core::error::BrokerError;
use fail::FailScenario;
use wharf_reliability::CaseLine;

use crate::support::{TestLog, bare, read_all, records, small_segments};

/// How long each fsync takes.
const FSYNC_MS: u64 = 200;
/// Producers appending at once, one batch each: four times the writer's queue depth.
const PRODUCERS: u64 = 1_000;
/// Records per batch and bytes per record.
const BATCH: u64 = 4;
const RECORD_BYTES: usize = 1024;
/// One segment for the whole test (a segment roll is an fsync of its own; with 4 KiB segments
/// a first version of this test saw one fsync per batch and measured the rolls).
const SEGMENT_BYTES: u64 = 64 * 1024 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_fsync_is_shared_by_many_producers_and_the_excess_is_refused_at_once() {
    let scenario = FailScenario::setup();
    let log = TestLog::new(LogConfig {
        segment_bytes: SEGMENT_BYTES,
        ..small_segments(FsyncPolicy::Always)
    });
    let handle = log.open();
    let fsyncs = Arc::new(AtomicU64::new(0));
    let counted = fsyncs.clone();
    fail::cfg_callback("segment::sync", move || {
        counted.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(FSYNC_MS));
    })
    .expect("failpoint");

    let started = Instant::now();
    let tasks: Vec<_> = (0..PRODUCERS)
        .map(|n| {
            let handle = handle.clone();
            tokio::spawn(async move {
                let batch = records(n * BATCH, BATCH, RECORD_BYTES);
                let sent = Instant::now();
                let result = handle.append(batch.clone()).await;
                (batch, result, sent.elapsed())
            })
        })
        .collect();
    let mut acked = Vec::new();
    let mut latencies = Vec::new();
    let (mut overloaded, mut other_errors) = (0u64, Vec::new());
    let mut refusal_waits = Vec::new();
    for task in tasks {
        let (batch, result, took) = task.await.expect("producer");
        match result {
            Ok(appended) => {
                acked.push((appended.base_offset, batch));
                latencies.push(took);
            }
            Err(BrokerError::Overloaded { .. }) => {
                overloaded += 1;
                refusal_waits.push(took);
            }
            Err(other) => other_errors.push(other.to_string()),
        }
    }
    let elapsed = started.elapsed();
    fail::remove("segment::sync");
    let fsyncs = fsyncs.load(Ordering::SeqCst);

    let stored = bare(&read_all(&handle, 0, 1000));
    let mut lost = 0u64;
    for (base, batch) in &acked {
        let at = usize::try_from(*base).expect("offset");
        if stored.get(at..at + batch.len()) != Some(batch.as_slice()) {
            lost += batch.len() as u64;
        }
    }
    latencies.sort_unstable();
    let p99 = latencies
        .get(latencies.len().saturating_sub(1) * 99 / 100)
        .copied()
        .unwrap_or_default();
    let slowest_refusal = refusal_waits.iter().max().copied().unwrap_or_default();
    let acked_records: u64 = acked.iter().map(|(_, b)| b.len() as u64).sum();
    CaseLine::new("D8", "slow-fsync-200ms")
        .figure("producers", PRODUCERS)
        .figure("fsyncs", fsyncs)
        .figure(
            "batches per fsync",
            format!("{:.1}", acked.len() as f64 / fsyncs.max(1) as f64),
        )
        .figure(
            "% refused 503",
            format!("{:.1}", 100.0 * overloaded as f64 / PRODUCERS as f64),
        )
        .figure("slowest refusal ms", slowest_refusal.as_millis())
        .figure("p99 ack ms", p99.as_millis())
        .figure("wall ms", elapsed.as_millis())
        .must_be_zero(
            "errors other than overloaded",
            other_errors.len() as u64,
            PRODUCERS,
        )
        .must_be_zero("acked lost", lost, acked_records)
        .record();
    assert!(other_errors.is_empty(), "{other_errors:?}");
    assert_eq!(lost, 0, "acknowledged records missing");
    assert!(
        acked.len() as u64 > fsyncs,
        "group commit: {} batches acknowledged over {fsyncs} fsyncs",
        acked.len()
    );
    drop(scenario);
}
