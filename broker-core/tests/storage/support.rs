//! Helpers of the storage tests: the partition on a temporary directory of
//! `tests/support/storage.rs` (shared with the `failpoints` binary), also on tmpfs
//! (`tests/support/tmpfs.rs`), cuts of its files, its control entries, and the broker opening
//! of `tests/support/broker/open.rs` for the broker runs of the power-loss test.

use std::path::Path;

use broker_core::config::LogConfig;
use broker_core::storage::{LogPosition, PartitionHandle};
use bytes::Bytes;

#[path = "../support/broker/open.rs"]
mod open;
#[path = "../support/storage.rs"]
mod storage;
#[path = "../support/tmpfs.rs"]
mod tmpfs;

pub use open::open;
pub use storage::{
    TestLog, append_acknowledged, bare, file_len, read_all, record, records, segment_files,
    small_segments,
};
pub use tmpfs::temp_root;

impl TestLog {
    /// A fresh, empty partition on tmpfs (`/dev/shm`) when there is one: for tests that
    /// reopen a log hundreds of times, where real fsyncs would take most of the time.
    pub fn on_tmpfs(config: LogConfig) -> TestLog {
        Self::in_root(config, temp_root())
    }
}

/// Cuts a file to `len` bytes.
pub fn truncate_file(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open segment")
        .set_len(len)
        .expect("truncate");
}

/// Every control entry a reader of `log` sees now, from the start of the log.
pub fn visible_controls(log: &PartitionHandle) -> Vec<Bytes> {
    let mut entries = Vec::new();
    log.replay_controls(LogPosition::default(), |_, entry| {
        entries.push(entry);
        Ok(())
    })
    .expect("replay");
    entries
}
