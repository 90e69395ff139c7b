//! The trace index stays within its bound under a long run: a topic with small segments and
//! a byte retention takes many messages (an id and a key each) while a subscription receives
//! and acks a share of them; retention deletes most segments during the run. At the end the
//! index takes no more than its entries for the messages and events still in the log, no
//! index file outlives its segment, and lookups answer for what is retained and nothing for
//! what is gone.
//!
//! The figures (bytes of log and index, per message) are printed: run with `--nocapture`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use broker_core::broker::{AckMode, NewMessage, ReceiveRequest};
use broker_core::limits::MAX_BATCH_MESSAGES;
use broker_core::subscription::{StartPosition, SubscriptionSpec};
use broker_core::topic::TopicSpec;
use broker_core::trace_index::run::{ENTRY_LEN, HEADER_LEN};
use broker_core::trace_index::{RUN_ENTRIES, split_runs};
use broker_core::trace_store::TRACE_DIR;
use broker_core::{Broker, BrokerConfig};

use crate::support::find_dir;

/// Messages produced: the million the issue names, some 14 times what the retention keeps
/// (70,000 of these messages), so retention deletes segments all through the run.
const MESSAGES: usize = 1_000_000;
/// Messages a produce call carries: the most the API takes.
const BATCH: usize = MAX_BATCH_MESSAGES;
/// Messages received and acked after each produce call: a tenth of them, so every stretch of
/// the log holds subscription events, spread evenly.
const RECEIVED_PER_BATCH: usize = 100;
/// Distinct keys: few enough that the newest messages of any key are all retained.
const KEYS: usize = 100;
/// The log's segment size: small, so the log rolls every few thousand messages.
const SEGMENT_BYTES: u64 = 256 * 1024;
/// The topic's retention by size: some 16 segments.
const RETENTION_BYTES: u64 = 4 * 1024 * 1024;
/// How often retention runs: often, so it keeps up with the produces.
const RETENTION_CHECK_MS: u64 = 100;
/// A message's entries in the index: one for its id, one for its key.
const KEYED_MESSAGE_BYTES: u64 = 2 * ENTRY_LEN as u64;
/// An event's entry in the index.
const EVENT_BYTES: u64 = ENTRY_LEN as u64;
/// A run's bytes besides its entries: its header and its checksum.
const RUN_OVERHEAD_BYTES: u64 = HEADER_LEN as u64 + 4;
/// How long the end state may take to settle (retention, checkpoints, the follower), far
/// more than it needs on a loaded machine.
const SETTLE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_index_stays_within_its_bound_under_a_million_messages() {
    let messages = MESSAGES;
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("dir");
    let broker = open(dir.path()).await;
    broker
        .create_topic(TopicSpec {
            name: "t".into(),
            partitions: Some(1),
            retention_bytes: Some(RETENTION_BYTES),
            // The dedup index is not what this test is about; without a window the ids
            // are still stored and indexed, but not remembered in sled.
            dedup_window_ms: Some(0),
            ..TopicSpec::default()
        })
        .await
        .expect("topic");
    broker
        .create_subscription(
            "t",
            SubscriptionSpec {
                name: "s".into(),
                start: Some(StartPosition::Earliest),
                ..SubscriptionSpec::default()
            },
        )
        .await
        .expect("subscription");

    let mut acked = 0;
    let mut peak_index_bytes = 0;
    let mut peak_log_bytes = 0;
    for from in (0..messages).step_by(BATCH) {
        produce(&broker, from..(from + BATCH).min(messages)).await;
        acked += receive_and_ack(&broker).await;
        peak_index_bytes = peak_index_bytes.max(broker.trace_index_bytes("t").expect("bytes"));
        let log_bytes = broker.describe_topic("t").expect("describe").partitions[0].bytes;
        peak_log_bytes = peak_log_bytes.max(log_bytes);
    }
    // Retention runs every RETENTION_CHECK_MS behind the subscription checkpoints and the
    // follower prunes every TRACE_FOLLOW_MS, so both exceed their settled sizes during the
    // run by what the lag lets through: printed, not bounded.
    eprintln!(
        "peak during the run: log {peak_log_bytes} bytes, trace index {peak_index_bytes} bytes"
    );
    eprintln!(
        "produced {messages} messages and acked {acked} in {:?}",
        started.elapsed()
    );
    let log = settle(&broker, dir.path(), messages).await;
    let events_per_message = events_per_acked_message(&broker).await;
    check_index(&broker, &log, events_per_message);
    check_lookups(&broker, messages, log.start_offset).await;
    broker.shutdown().await;
    eprintln!("{messages} messages: whole run {:?}", started.elapsed());
}

async fn open(dir: &Path) -> Arc<Broker> {
    let mut config = BrokerConfig::new(dir);
    config.log.segment_bytes = SEGMENT_BYTES;
    config.retention_check_ms = RETENTION_CHECK_MS;
    Broker::open(config).await.expect("open")
}

fn id(n: usize) -> String {
    format!("m-{n}")
}

fn key(n: usize) -> String {
    format!("k-{}", n % KEYS)
}

async fn produce(broker: &Broker, numbers: std::ops::Range<usize>) {
    let batch = numbers
        .map(|n| NewMessage {
            id: Some(id(n)),
            key: Some(key(n)),
            value: bytes::Bytes::from(format!("{n:016}")),
            ..NewMessage::default()
        })
        .collect();
    broker
        .produce("t", batch, AckMode::Leader)
        .await
        .expect("produce");
}

/// Receives up to [`RECEIVED_PER_BATCH`] messages and acks them; how many.
async fn receive_and_ack(broker: &Broker) -> usize {
    receive_and_ack_ids(broker).await.len()
}

/// Receives up to [`RECEIVED_PER_BATCH`] messages and acks them; their ids.
async fn receive_and_ack_ids(broker: &Broker) -> Vec<String> {
    let request = ReceiveRequest {
        max_messages: RECEIVED_PER_BATCH,
        wait_ms: 0,
        ack_timeout_ms: None,
        attempt_id: None,
        memory: None,
    };
    let received = broker.receive("t", "s", request).await.expect("receive");
    let receipts: Vec<String> = received.iter().map(|d| d.receipt.clone()).collect();
    if !receipts.is_empty() {
        broker.ack("t", "s", &receipts).await.expect("ack");
    }
    received.into_iter().map(|d| d.message.record.id).collect()
}

/// The events one receive and ack of a message write (the index has an entry for each): read
/// from the trace of a message received and acked now.
async fn events_per_acked_message(broker: &Broker) -> u64 {
    let ids = receive_and_ack_ids(broker).await;
    let last = ids.last().expect("the subscription still has messages");
    let traces = broker.trace_message("t", last).await.expect("trace");
    let events = traces[0].subscriptions[0].events.len() as u64;
    assert!(events >= 1, "an acked message has its events in its trace");
    events
}

/// The log of partition 0 once retention has brought it within [`RETENTION_BYTES`].
struct Log {
    start_offset: u64,
    end_offset: u64,
    bytes: u64,
    /// Its segment files' base offsets.
    segments: Vec<u64>,
    /// Its folder.
    dir: PathBuf,
}

/// Waits until retention has caught up (the log is within its retention) and the trace
/// follower has indexed the whole log and pruned the files of deleted segments.
async fn settle(broker: &Broker, data_dir: &Path, messages: usize) -> Log {
    let deadline = Instant::now() + SETTLE;
    loop {
        let info = broker.describe_topic("t").expect("describe");
        let partition = &info.partitions[0];
        assert_eq!(
            partition.end_offset, messages as u64,
            "every message stored"
        );
        // A lookup catches the index up by one bounded round and prunes it.
        let newest = broker
            .trace_message("t", &id(messages - 1))
            .await
            .expect("trace");
        if partition.bytes <= RETENTION_BYTES && newest.len() == 1 {
            let dir = partition_dir(data_dir).expect("the partition's folder");
            return Log {
                start_offset: partition.start_offset,
                end_offset: partition.end_offset,
                bytes: partition.bytes,
                segments: bases_in(&dir, ".log"),
                dir,
            };
        }
        assert!(
            Instant::now() < deadline,
            "retention did not bring {} bytes within {RETENTION_BYTES}",
            partition.bytes
        );
        tokio::time::sleep(Duration::from_millis(RETENTION_CHECK_MS)).await;
    }
}

/// The folder of partition 0: the one holding the trace folder.
fn partition_dir(data_dir: &Path) -> Option<PathBuf> {
    find_dir(data_dir, TRACE_DIR).and_then(|d| d.parent().map(Path::to_path_buf))
}

/// The base offsets in the names of `dir`'s files ending in `suffix`, ascending.
fn bases_in(dir: &Path, suffix: &str) -> Vec<u64> {
    let mut bases: Vec<u64> = std::fs::read_dir(dir)
        .expect("read folder")
        .filter_map(|e| {
            let name = e.expect("entry").file_name();
            name.to_str()?.strip_suffix(suffix)?.parse().ok()
        })
        .collect();
    bases.sort_unstable();
    bases
}

/// What the index files hold, read with the index's own parser.
#[derive(Debug, Default)]
struct Indexed {
    files: Vec<u64>,
    runs: u64,
    messages: u64,
    events: u64,
    bytes: u64,
}

fn read_index(dir: &Path) -> Indexed {
    let trace_dir = dir.join(TRACE_DIR);
    let mut indexed = Indexed {
        files: bases_in(&trace_dir, ".trace"),
        ..Indexed::default()
    };
    for base in indexed.files.clone() {
        let bytes = std::fs::read(trace_dir.join(format!("{base:020}.trace"))).expect("read");
        let split = split_runs(&bytes, base);
        assert!(split.damage.is_none(), "index file {base} is damaged");
        for run in &split.runs {
            let messages = run
                .header()
                .offsets
                .map_or(0, |(first, last)| last - first + 1);
            indexed.runs += 1;
            indexed.messages += messages;
            indexed.events += run.entries() as u64 - 2 * messages;
        }
        indexed.bytes += bytes.len() as u64;
    }
    indexed
}

/// The bound: the entries of the messages and events still in the log and a run's overhead
/// per run. With a receive of [`RECEIVED_PER_BATCH`] after each produce of [`BATCH`], any
/// stretch of the log holding `n` messages holds the events of at most `n / BATCH + 3`
/// receives (one whose events precede the stretch's first batch, the one after the last
/// batch, and [`events_per_acked_message`]'s), each message received writing
/// `events_per_message` events. A run is sealed
/// when the next frame's entries would overfill it (a frame holds at most [`BATCH`]
/// messages, 2 entries each, under half a run) or its segment ends, so a file has at most
/// one run besides those at least half full.
fn check_index(broker: &Broker, log: &Log, events_per_message: u64) {
    let indexed = read_index(&log.dir);
    let on_disk = broker.trace_index_bytes("t").expect("bytes");
    assert_eq!(on_disk, indexed.bytes, "trace_index_bytes counts the files");

    assert!(
        indexed.files.iter().all(|base| log.segments.contains(base)),
        "an index file outlived its segment: files {:?}, segments {:?}",
        indexed.files,
        log.segments
    );
    let segments = log.segments.len();
    assert!(
        (segments.saturating_sub(2)..segments).contains(&indexed.files.len()),
        "{} index files for {segments} segments (the newest is indexed in memory)",
        indexed.files.len()
    );
    let retained = log.end_offset - log.start_offset;
    assert!(
        indexed.messages <= retained,
        "{} messages indexed on disk, {retained} retained",
        indexed.messages
    );
    let events_bound =
        (retained / BATCH as u64 + 3) * RECEIVED_PER_BATCH as u64 * events_per_message;
    assert!(
        indexed.events <= events_bound,
        "{} events indexed, at most {events_bound} in the retained log",
        indexed.events
    );
    let half_run = RUN_ENTRIES as u64 / 2;
    assert!(2 * BATCH as u64 + 2 < half_run);
    let runs_bound = indexed.files.len() as u64 + (2 * retained + events_bound) / half_run;
    let bound = retained * KEYED_MESSAGE_BYTES
        + events_bound * EVENT_BYTES
        + runs_bound * RUN_OVERHEAD_BYTES;
    assert!(
        on_disk <= bound,
        "the trace index takes {on_disk} bytes, over its bound {bound} for {retained} retained messages"
    );
    assert_eq!(
        on_disk,
        indexed.runs * RUN_OVERHEAD_BYTES
            + indexed.messages * KEYED_MESSAGE_BYTES
            + indexed.events * EVENT_BYTES,
        "the files hold runs of 16-byte entries and nothing else"
    );
    eprintln!(
        "log: {} bytes in {segments} segments, {retained} messages retained; \
         trace index: {on_disk} bytes in {} files, {} runs, {} messages and {} events \
         indexed; {:.2} bytes per indexed message with its share of events and runs, \
         {:.2} bytes per byte of log, bound {bound}",
        log.bytes,
        indexed.files.len(),
        indexed.runs,
        indexed.messages,
        indexed.events,
        on_disk as f64 / indexed.messages.max(1) as f64,
        on_disk as f64 / log.bytes.max(1) as f64,
    );
}

async fn check_lookups(broker: &Broker, messages: usize, start_offset: u64) {
    assert!(start_offset > 0, "retention deleted segments");
    for n in [messages - 1, messages - BATCH, start_offset as usize] {
        let traces = broker.trace_message("t", &id(n)).await.expect("trace");
        assert_eq!(traces.len(), 1, "{}", id(n));
        assert_eq!(traces[0].stored.offset, n as u64);
    }
    for gone in [0, start_offset as usize - 1] {
        let traces = broker.trace_message("t", &id(gone)).await.expect("trace");
        assert!(traces.is_empty(), "{} was deleted", id(gone));
    }
    let newest_key = key(messages - 1);
    let by_key = broker
        .messages_by_key("t", &newest_key, 5)
        .await
        .expect("by key");
    let offsets: Vec<u64> = by_key.iter().map(|(_, s)| s.offset).collect();
    let expected: Vec<u64> = (0..messages as u64).rev().step_by(KEYS).take(5).collect();
    assert_eq!(offsets, expected, "the newest five of {newest_key}");
}
