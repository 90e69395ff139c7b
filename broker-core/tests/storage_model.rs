//! Model-based test: random appends, reads, restarts and torn tails against a `Vec<Record>`.
//!
//! Segments are 4 KiB so batches keep rolling into new files. A torn tail cuts the last segment
//! file at a random byte after a shutdown; the model then drops the batch the cut lands in and
//! every batch after it. Every read must equal the model's slice.

mod storage_support;

use broker_core::config::FsyncPolicy;
use broker_core::message::Record;
use broker_core::storage::PartitionHandle;
use proptest::prelude::*;
use proptest::sample::Index;
use storage_support::{TestLog, bare, file_len, read_all, record, small_segments, truncate_file};

#[derive(Debug, Clone)]
enum Op {
    /// Append one batch with these value sizes.
    Append(Vec<usize>),
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
        3 => (any::<Index>(), 1usize..20, prop::option::of(0usize..1500)).prop_map(
            |(from, max_records, max_bytes)| Op::Read { from, max_records, max_bytes }
        ),
        1 => Just(Op::Restart),
        1 => any::<u32>().prop_map(Op::TearTail),
    ]
}

/// One appended batch as the model sees it: where it starts and how many bytes it took.
#[derive(Debug, Clone, Copy)]
struct ModelBatch {
    base_offset: u64,
    frame_len: u64,
}

struct Model {
    records: Vec<Record>,
    batches: Vec<ModelBatch>,
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

    /// Drops the batches a cut at byte `cut` of the segment starting at `segment_base` loses.
    fn tear(&mut self, segment_base: u64, cut: u64) {
        let mut position = 0;
        let first_in_segment = self
            .batches
            .partition_point(|b| b.base_offset < segment_base);
        let mut keep = first_in_segment;
        for batch in &self.batches[first_in_segment..] {
            if position + batch.frame_len > cut {
                break;
            }
            position += batch.frame_len;
            keep += 1;
        }
        let end = self
            .batches
            .get(keep)
            .map_or(self.records.len() as u64, |b| b.base_offset);
        self.batches.truncate(keep);
        self.records.truncate(end as usize);
    }
}

fn run(ops: Vec<Op>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let log = TestLog::new(small_segments(FsyncPolicy::Never));
    let mut handle = log.open();
    let mut model = Model {
        records: Vec::new(),
        batches: Vec::new(),
        next_id: 0,
    };
    for op in ops {
        match op {
            Op::Append(sizes) => append(&runtime, &handle, &mut model, &sizes),
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
    handle.shutdown();
}

fn append(
    runtime: &tokio::runtime::Runtime,
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
    model.batches.push(ModelBatch {
        base_offset: appended.base_offset,
        frame_len: handle.size_bytes() - size_before,
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

#[test]
fn a_tail_torn_at_the_very_start_of_a_fresh_segment_leaves_an_empty_active_segment() {
    let mut ops: Vec<Op> = (0..12).map(|_| Op::Append(vec![300; 3])).collect();
    ops.push(Op::TearTail(0));
    ops.push(Op::Append(vec![10]));
    ops.push(Op::Restart);
    ops.push(Op::Append(vec![10, 20]));
    run(ops);
}
