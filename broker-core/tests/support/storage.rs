//! Helpers shared by the storage tests and the storage failpoint tests (the `storage` and
//! `failpoints` binaries): a partition on a temporary directory and sled db that can be shut
//! down, tampered with and reopened, and deterministic records to append to it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use broker_core::config::{FsyncPolicy, LogConfig};
use broker_core::message::{Record, StoredRecord};
use broker_core::storage::PartitionHandle;
use bytes::Bytes;
use tokio::sync::Notify;

/// A deterministic record whose value has `size` bytes.
pub fn record(n: u64, size: usize) -> Record {
    Record {
        id: format!("msg-{n}"),
        timestamp_ms: 1_000 + n,
        key: n.is_multiple_of(3).then(|| format!("key-{n}")),
        value: Bytes::from(vec![(n % 251) as u8; size]),
        binary: n.is_multiple_of(2),
        scheduled: false,
        client_id: false,
        headers: vec![("n".into(), n.to_string())],
        tags: vec![format!("tag-{}", n % 5)],
        trace: None,
        origin: None,
    }
}

/// `count` records numbered from `first`, each with a value of `size` bytes.
pub fn records(first: u64, count: u64, size: usize) -> Vec<Record> {
    (first..first + count).map(|n| record(n, size)).collect()
}

/// Appends `batches` batches of five 100-byte records, each acknowledged; returns them in order.
pub async fn append_acknowledged(handle: &PartitionHandle, batches: u64) -> Vec<Record> {
    let mut acked = Vec::new();
    for n in 0..batches {
        let batch = records(n * 5, 5, 100);
        let appended = handle.append(batch.clone()).await.expect("append");
        assert_eq!(appended.base_offset, acked.len() as u64);
        acked.extend(batch);
    }
    acked
}

/// Log settings with 4 KiB segments.
pub fn small_segments(fsync: FsyncPolicy) -> LogConfig {
    LogConfig {
        segment_bytes: 4 * 1024,
        fsync,
        leader_epoch: 7,
    }
}

/// One partition's directory and sled db, outliving the handles opened on them.
pub struct TestLog {
    _root: tempfile::TempDir,
    pub dir: PathBuf,
    pub db: sled::Db,
    pub config: LogConfig,
    pub on_commit: Arc<Notify>,
}

impl TestLog {
    /// A fresh, empty partition.
    pub fn new(config: LogConfig) -> TestLog {
        Self::in_root(config, tempfile::tempdir().expect("temp dir"))
    }

    /// A fresh, empty partition in `root`.
    pub fn in_root(config: LogConfig, root: tempfile::TempDir) -> TestLog {
        let db = sled::Config::new()
            .path(root.path().join("meta"))
            .open()
            .expect("sled");
        TestLog {
            dir: root.path().join("orders-0"),
            _root: root,
            db,
            config,
            on_commit: Arc::new(Notify::new()),
        }
    }

    /// The partition's index tree.
    pub fn tree(&self) -> sled::Tree {
        self.db.open_tree("orders-0").expect("tree")
    }

    /// Opens (or reopens) the partition.
    pub fn open(&self) -> PartitionHandle {
        PartitionHandle::open(
            self.dir.clone(),
            self.tree(),
            self.config.clone(),
            Arc::clone(&self.on_commit),
        )
        .expect("open partition")
    }

    /// Segment files, oldest first.
    pub fn segments(&self) -> Vec<PathBuf> {
        segment_files(&self.dir)
    }

    /// The newest segment file.
    pub fn last_segment(&self) -> PathBuf {
        self.segments().pop().expect("a segment")
    }
}

/// Segment files in `dir`, oldest first.
pub fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    files.sort();
    files
}

/// Every committed record from `from`, read in pieces of at most `step` records.
pub fn read_all(log: &PartitionHandle, from: u64, step: usize) -> Vec<StoredRecord> {
    let mut out = Vec::new();
    let mut next = from;
    loop {
        let piece = log.read(next, step, usize::MAX).expect("read");
        let Some(last) = piece.last() else {
            return out;
        };
        next = last.offset + 1;
        out.extend(piece);
    }
}

/// The records of a read, without their offsets and epochs.
pub fn bare(stored: &[StoredRecord]) -> Vec<Record> {
    stored.iter().map(|s| s.record.clone()).collect()
}

/// Size of a file.
pub fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).expect("metadata").len()
}
