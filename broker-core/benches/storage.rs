//! Storage hot paths through `PartitionHandle`: appending a batch (fsync `never` and
//! `always`), reading a range, and an index lookup (a one-record read at a random offset of
//! a large log). Each log lives in its own temp dir with its own sled tree.

#![allow(
    missing_docs,
    reason = "criterion's macros generate undocumented items"
)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use broker_core::storage::PartitionHandle;
use broker_core::{FsyncPolicy, LogConfig, Record};
use bytes::Bytes;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rand::Rng;
use tokio::runtime::Runtime;
use tokio::sync::Notify;

/// Records in the log the read benches use: 200 MiB of 1 KiB values, enough for a
/// multi-level index and several segments.
const LARGE_LOG_RECORDS: u64 = 200_000;

struct Log {
    handle: PartitionHandle,
    _db: sled::Db,
    _dir: tempfile::TempDir,
}

fn open_log(fsync: FsyncPolicy) -> Log {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = sled::open(dir.path().join("meta")).expect("sled");
    let tree = db.open_tree("p0").expect("tree");
    let config = LogConfig {
        fsync,
        ..LogConfig::default()
    };
    let handle =
        PartitionHandle::open(dir.path().join("p0"), tree, config, Arc::new(Notify::new()))
            .expect("open log");
    Log {
        handle,
        _db: db,
        _dir: dir,
    }
}

fn batch(records: usize) -> Vec<Record> {
    let value = Bytes::from(vec![b'x'; 1024]);
    (0..records)
        .map(|i| Record {
            id: format!("0190f3a2-7c41-7000-8000-{i:012x}"),
            timestamp_ms: 1_700_000_000_000,
            key: None,
            value: value.clone(),
            binary: false,
            scheduled: false,
            client_id: false,
            headers: Vec::new(),
            tags: Vec::new(),
            trace: None,
            origin: None,
        })
        .collect()
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn append(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("append");
    for (policy, name) in [
        (FsyncPolicy::Never, "never"),
        (FsyncPolicy::Always, "always"),
    ] {
        for records in [1usize, 100] {
            let log = open_log(policy);
            let records_batch = batch(records);
            group.throughput(Throughput::Bytes(records as u64 * 1024));
            group.bench_function(format!("fsync_{name}/{records}x1KiB"), |b| {
                b.iter_batched(
                    || records_batch.clone(),
                    |batch| rt.block_on(log.handle.append(batch)).expect("append"),
                    BatchSize::SmallInput,
                );
            });
            log.handle.shutdown();
        }
    }
    group.finish();
}

fn large_log(rt: &Runtime) -> Log {
    let log = open_log(FsyncPolicy::Never);
    let chunk = batch(1000);
    for _ in 0..LARGE_LOG_RECORDS / 1000 {
        rt.block_on(log.handle.append(chunk.clone())).expect("fill");
    }
    log
}

fn read(c: &mut Criterion) {
    let rt = runtime();
    let log = large_log(&rt);
    let mut rng = rand::thread_rng();
    let mut group = c.benchmark_group("read");
    group.throughput(Throughput::Bytes(100 * 1024));
    group.bench_function("range_100_records", |b| {
        b.iter(|| {
            let from = rng.gen_range(0..LARGE_LOG_RECORDS - 100);
            black_box(log.handle.read(from, 100, usize::MAX).expect("read"))
        });
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function(format!("index_lookup_random_of_{LARGE_LOG_RECORDS}"), |b| {
        b.iter(|| {
            let at = rng.gen_range(0..LARGE_LOG_RECORDS);
            black_box(log.handle.read(at, 1, usize::MAX).expect("read"))
        });
    });
    group.finish();
    log.handle.shutdown();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(20);
    targets = append, read
}
criterion_main!(benches);
