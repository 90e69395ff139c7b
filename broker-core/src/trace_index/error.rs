//! [`TraceIndexError`]: the one error of the trace index, each variant carrying the values
//! that failed.

/// Why an entry was refused or bytes are not a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceIndexError {
    /// A message noted at or below the offset of one noted before: the follower reads the
    /// log in order, so this is a bug in the caller.
    #[error("message offset {offset} noted after offset {previous}")]
    OffsetOutOfOrder {
        /// The offset noted.
        offset: u64,
        /// The last offset noted before it.
        previous: u64,
    },
    /// A position before the position covered so far: the follower reads forward only.
    #[error("segment position {position} noted after position {covered_to}")]
    PositionOutOfOrder {
        /// The position noted.
        position: u64,
        /// How far the builder covered already.
        covered_to: u64,
    },
    /// The builder is full ([`crate::trace_index::RUN_ENTRIES`]): seal it first.
    #[error("the run is full ({entries} entries)")]
    RunFull {
        /// Its entries.
        entries: usize,
    },
    /// The bytes end before the run does.
    #[error("the run is truncated: {len} bytes, {needed} needed")]
    Truncated {
        /// Bytes there are.
        len: usize,
        /// Bytes the run needs.
        needed: usize,
    },
    /// The bytes do not start with a run's magic.
    #[error("not a trace index run (magic {found:#010x})")]
    BadMagic {
        /// The four bytes found.
        found: u32,
    },
    /// A run of a version this build does not read.
    #[error("trace index run version {found}, this build reads {expected}")]
    Version {
        /// The version found.
        found: u8,
        /// [`crate::trace_index::run::RUN_VERSION`].
        expected: u8,
    },
    /// The checksum does not match the run's bytes.
    #[error("trace index run checksum mismatch")]
    Checksum,
    /// A run whose checksum matched but whose fields break an invariant (counts over the
    /// bound, unsorted entries): a bug in the writer.
    #[error("malformed trace index run: {0}")]
    Malformed(&'static str),
}
