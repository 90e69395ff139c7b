//! Broker settings, validated once and then frozen.

use std::path::PathBuf;

/// When the log calls fsync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// After every group commit, before any producer in it is answered: an ack means fsynced.
    Always,
    /// At most this many milliseconds after a write; an ack means written to the OS.
    IntervalMs(u64),
    /// Never explicitly; the OS flushes when it likes.
    Never,
}

impl FsyncPolicy {
    /// Parses `always`, `never` or a number of milliseconds (`interval_ms` setting).
    pub fn parse(text: &str) -> Option<FsyncPolicy> {
        match text {
            "always" => Some(FsyncPolicy::Always),
            "never" => Some(FsyncPolicy::Never),
            other => other
                .strip_suffix("ms")
                .unwrap_or(other)
                .parse()
                .ok()
                .filter(|ms| *ms > 0)
                .map(FsyncPolicy::IntervalMs),
        }
    }
}

/// Settings of one partition's log.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// A segment rolls once it holds at least this many bytes.
    pub segment_bytes: u64,
    /// When to fsync.
    pub fsync: FsyncPolicy,
    /// The leader epoch stamped on batches this node writes (0 on a single node).
    pub leader_epoch: u64,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            fsync: FsyncPolicy::Always,
            leader_epoch: 0,
        }
    }
}

/// Default segment size: 64 MiB keeps retention reasonably fine-grained and file counts low.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 * 1024 * 1024;
/// Smallest segment size accepted (tests use small segments to exercise rolling).
pub const MIN_SEGMENT_BYTES: u64 = 4 * 1024;

/// Settings of the whole broker.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// Folder holding segments and the metadata store.
    pub data_dir: PathBuf,
    /// Log settings for every partition.
    pub log: LogConfig,
    /// How often retention runs, in milliseconds.
    pub retention_check_ms: u64,
    /// Longest delay a produce may ask for, in milliseconds.
    pub max_delay_ms: u64,
    /// Produces are refused (storage full) while less than this many bytes are free on the
    /// data folder's file system; 0 turns the reserve off (see [`crate::disk_space`]).
    pub min_free_bytes: u64,
    /// Whether the message trace is kept: each topic's trace index follows its logs, and a
    /// single node records every first delivery (see [`crate::broker::Broker::trace_index`]).
    /// Off, message lookups by id or key are not served, and a single node records a
    /// delivery only from its second attempt on (the attempt count `max_deliveries` needs).
    pub trace_index: bool,
}

/// Default longest delay: one year (API.md), where SQS stops at 15 minutes.
pub const DEFAULT_MAX_DELAY_MS: u64 = 365 * 24 * 60 * 60 * 1000;

impl BrokerConfig {
    /// A config with defaults for the given data folder.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        BrokerConfig {
            data_dir: data_dir.into(),
            log: LogConfig::default(),
            retention_check_ms: 60_000,
            max_delay_ms: DEFAULT_MAX_DELAY_MS,
            min_free_bytes: crate::disk_space::DEFAULT_MIN_FREE_BYTES,
            trace_index: true,
        }
    }
}
