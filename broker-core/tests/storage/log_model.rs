//! Model-based test: random appends of message and control batches, reads, control replays,
//! restarts and torn tails against a `Vec<Record>` and a `Vec` of control entries.
//!
//! Segments are 4 KiB so batches keep rolling into new files. A torn tail cuts the last segment
//! file at a random byte after a shutdown; the model then drops the frame the cut lands in and
//! every frame after it, message or control. Every read must equal the model's slice, message
//! offsets stay contiguous however control batches fall between them, and a replay from the
//! start yields exactly the model's control entries, in order. It runs under `fsync never`
//! and, with fewer cases, under `always`, where the writer also keeps zeros ahead of the end.

use broker_core::config::FsyncPolicy;
use broker_core::message::Record;
use broker_core::storage::PartitionHandle;
use bytes::Bytes;
use proptest::prelude::*;
use proptest::sample::Index;

use crate::support::{
    TestLog, bare, file_len, read_all, record, small_segments, truncate_file, visible_controls,
};

#[derive(Debug, Clone)]
enum Op {
    /// Append one batch with these value sizes.
    Append(Vec<usize>),
    /// Append one control batch with entries of these sizes.
    Control(Vec<usize>),
    /// Replay every control entry from the start of the log.
    Replay,
    /// Read from a random offset (up to a little past the end).
    Read {
        from: Index,
        max_records: usize,
        max_bytes: Option<usize>,
    },
    /// Shut down and reopen the same directory and sled db.
    Restart,
    /// Shut down, cut the last segment at this byte (modulo its length + 1), reopen.
    TearTail(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => prop::collection::vec(0usize..400, 1..6).prop_map(Op::Append),
        3 => prop::collection::vec(1usize..300, 1..5).prop_map(Op::Control),
        1 => Just(Op::Replay),
        3 => (any::<Index>(), 1usize..20, prop::option::of(0usize..1500)).prop_map(
            |(from, max_records, max_bytes)| Op::Read { from, max_records, max_bytes }
        ),
        1 => Just(Op::Restart),
        1 => any::<u32>().prop_map(Op::TearTail),
    ]
}

/// One appended frame as the model sees it: the segment it went to, the bytes it took, and
/// its message offsets (none for a control batch) or control entries.
#[derive(Debug, Clone)]
struct ModelFrame {
    segment_base: u64,
    frame_len: u64,
    contents: Contents,
}

#[derive(Debug, Clone)]
enum Contents {
    Messages { base_offset: u64 },
    Control(Vec<Bytes>),
}

struct Model {
    records: Vec<Record>,
    frames: Vec<ModelFrame>,
    next_id: u64,
}

impl Model {
    /// What a read must return: the slice from `from`, cut by the record and byte limits.
    fn read(&self, from: u64, max_records: usize, max_bytes: usize) -> Vec<Record> {
        let mut out = Vec::new();
        let mut bytes = 0;
        for r in self.records.iter().skip(from as usize).take(max_records) {
            if !out.is_empty() && bytes + r.value.len() > max_bytes {
                break;
            }
            bytes += r.value.len();
            out.push(r.clone());
        }
        out
    }

    /// Every control entry in log order.
    fn controls(&self) -> Vec<Bytes> {
        self.frames
            .iter()
            .filter_map(|f| match &f.contents {
                Contents::Control(entries) => Some(entries.clone()),
                Contents::Messages { .. } => None,
            })
            .flatten()
            .collect()
    }

    /// Drops the frames a cut at byte `cut` of the segment starting at `segment_base` loses:
    /// the one the cut lands in and every later one.
    fn tear(&mut self, segment_base: u64, cut: u64) {
        let first_in_segment = self
            .frames
            .partition_point(|f| f.segment_base < segment_base);
        let mut position = 0;
        let mut keep = first_in_segment;
        for frame in &self.frames[first_in_segment..] {
            if position + frame.frame_len > cut {
                break;
            }
            position += frame.frame_len;
            keep += 1;
        }
        let end = self.frames[keep..]
            .iter()
            .find_map(|f| match f.contents {
                Contents::Messages { base_offset } => Some(base_offset),
                Contents::Control(_) => None,
            })
            .unwrap_or(self.records.len() as u64);
        self.frames.truncate(keep);
        self.records.truncate(end as usize);
    }
}

fn run(ops: Vec<Op>) {
    run_with(FsyncPolicy::Never, ops);
}

/// [`run`] under `fsync`: `always` also writes zeros ahead of the active segment's end.
fn run_with(fsync: FsyncPolicy, ops: Vec<Op>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let log = TestLog::new(small_segments(fsync));
    let mut handle = log.open();
    let mut model = Model {
        records: Vec::new(),
        frames: Vec::new(),
        next_id: 0,
    };
    for op in ops {
        match op {
            Op::Append(sizes) => append(&runtime, &log, &handle, &mut model, &sizes),
            Op::Control(sizes) => control(&runtime, &log, &handle, &mut model, &sizes),
            Op::Replay => assert_eq!(visible_controls(&handle), model.controls(), "replay"),
            Op::Read {
                from,
                max_records,
                max_bytes,
            } => {
                let from = from.index(model.records.len() + 3) as u64;
                let max_bytes = max_bytes.unwrap_or(usize::MAX);
                let read = handle.read(from, max_records, max_bytes).expect("read");
                assert_eq!(
                    bare(&read),
                    model.read(from, max_records, max_bytes),
                    "read from {from}"
                );
                assert!(read.iter().zip(from..).all(|(r, o)| r.offset == o));
                // The tail cache, where it answers, answers exactly as the files do.
                if let Some(cached) = handle.read_cached(from, max_records, max_bytes) {
                    assert_eq!(cached, read, "cached read from {from}");
                }
            }
            Op::Restart => {
                handle.shutdown();
                handle = log.open();
            }
            Op::TearTail(at) => {
                handle.shutdown();
                let last = log.last_segment();
                let cut = u64::from(at) % (file_len(&last) + 1);
                truncate_file(&last, cut);
                let stem = last.file_stem().and_then(|s| s.to_str()).expect("stem");
                model.tear(stem.parse().expect("base"), cut);
                handle = log.open();
            }
        }
        assert_eq!(handle.end_offset(), model.records.len() as u64);
    }
    assert_eq!(bare(&read_all(&handle, 0, 1000)), model.records);
    assert_eq!(visible_controls(&handle), model.controls(), "final replay");
    handle.shutdown();
}

/// The base offset of the segment the last frame went to (segments roll before a write).
fn active_segment(log: &TestLog) -> u64 {
    let last = log.last_segment();
    let stem = last.file_stem().and_then(|s| s.to_str()).expect("stem");
    stem.parse().expect("base")
}

fn control(
    runtime: &tokio::runtime::Runtime,
    log: &TestLog,
    handle: &PartitionHandle,
    model: &mut Model,
    sizes: &[usize],
) {
    let entries: Vec<Bytes> = sizes
        .iter()
        .map(|&size| {
            model.next_id += 1;
            let tag = model.next_id.to_le_bytes();
            Bytes::from_iter(tag.iter().copied().cycle().take(size))
        })
        .collect();
    let size_before = handle.size_bytes();
    let pending = handle.queue_control(entries.clone()).expect("queue");
    let committed = runtime.block_on(pending.wait()).expect("commit");
    assert_eq!(committed.count, 0, "a control batch takes no offsets");
    assert_eq!(committed.base_offset, model.records.len() as u64);
    model.frames.push(ModelFrame {
        segment_base: active_segment(log),
        frame_len: handle.size_bytes() - size_before,
        contents: Contents::Control(entries),
    });
}

fn append(
    runtime: &tokio::runtime::Runtime,
    log: &TestLog,
    handle: &PartitionHandle,
    model: &mut Model,
    sizes: &[usize],
) {
    let batch: Vec<Record> = sizes
        .iter()
        .map(|&size| {
            model.next_id += 1;
            record(model.next_id, size)
        })
        .collect();
    let size_before = handle.size_bytes();
    let appended = runtime
        .block_on(handle.append(batch.clone()))
        .expect("append");
    assert_eq!(appended.base_offset, model.records.len() as u64);
    model.frames.push(ModelFrame {
        segment_base: active_segment(log),
        frame_len: handle.size_bytes() - size_before,
        contents: Contents::Messages {
            base_offset: appended.base_offset,
        },
    });
    model.records.extend(batch);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_log_behaves_like_a_vec_through_appends_reads_restarts_and_torn_tails(
        ops in prop::collection::vec(op(), 1..40)
    ) {
        run(ops);
    }
}

proptest! {
    // Fewer cases: every append waits for an fsync.
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn under_fsync_always_with_zeros_ahead_the_log_still_behaves_like_a_vec(
        ops in prop::collection::vec(op(), 1..40)
    ) {
        run_with(FsyncPolicy::Always, ops);
    }
}

#[test]
fn tails_torn_at_every_point_among_control_batches_lose_the_torn_frame_and_what_follows_only() {
    // Cuts every 10 bytes through ~600 bytes of alternating message and control frames, so
    // some land inside control frames, some inside message frames, some on boundaries.
    for cut in (0..650).step_by(10) {
        run(vec![
            Op::Append(vec![100, 100]),
            Op::Control(vec![50, 60]),
            Op::Append(vec![30]),
            Op::Control(vec![40]),
            Op::Append(vec![50]),
            Op::Replay,
            Op::TearTail(cut),
            Op::Replay,
            Op::Control(vec![10]),
            Op::Append(vec![20]),
            Op::Restart,
            Op::Replay,
        ]);
    }
}

#[test]
fn a_tail_torn_at_the_very_start_of_a_fresh_segment_leaves_an_empty_active_segment() {
    let mut ops: Vec<Op> = (0..12).map(|_| Op::Append(vec![300; 3])).collect();
    ops.push(Op::TearTail(0));
    ops.push(Op::Append(vec![10]));
    ops.push(Op::Restart);
    ops.push(Op::Append(vec![10, 20]));
    run(ops);
}
