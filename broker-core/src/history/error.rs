//! [`HistoryError`]: the one error of the history module, each variant carrying the values
//! that failed.

/// Why a setting, a sample, a record, a query or a stored record's bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    /// The retention setting lies outside its bounds.
    #[error("history retention: must be {min} to {max} minutes, got {value}")]
    RetentionOutOfRange {
        /// The value given.
        value: u64,
        /// The fewest minutes accepted.
        min: u64,
        /// The most minutes accepted.
        max: u64,
    },
    /// A sample is older than the previous one (a bug in the caller: steady time does not go
    /// back).
    #[error("a sample at {now_ms} ms comes after one at {previous_ms} ms")]
    SampleOutOfOrder {
        /// The previous sample's time.
        previous_ms: u64,
        /// This sample's time.
        now_ms: u64,
    },
    /// A record names a minute past [`MAX_MINUTE`](super::MAX_MINUTE).
    #[error("minute {minute} is past the last minute there is, {max}")]
    MinuteOutOfRange {
        /// The record's minute.
        minute: u64,
        /// [`MAX_MINUTE`](super::MAX_MINUTE).
        max: u64,
    },
    /// A record is older than the oldest minute the ring keeps; storing it would evict a
    /// newer one.
    #[error("minute {minute} is older than the oldest minute kept, {oldest_kept}")]
    MinuteExpired {
        /// The record's minute.
        minute: u64,
        /// The oldest minute the ring keeps now.
        oldest_kept: u64,
    },
    /// A range or window whose end comes before its start.
    #[error("the range ends at minute {to} before it starts at minute {from}")]
    RangeReversed {
        /// The first minute asked for.
        from: u64,
        /// The minute after the last one asked for.
        to: u64,
    },
    /// A range wider than [`MAX_QUERY_MINUTES`](super::ring::MAX_QUERY_MINUTES).
    #[error("a range may span at most {max} minutes, got {minutes}")]
    RangeTooWide {
        /// The minutes asked for.
        minutes: u64,
        /// The widest range answered.
        max: u64,
    },
    /// A ranking window outside its bounds.
    #[error("window_minutes: must be {min} to {max}, got {value}")]
    WindowOutOfRange {
        /// The value given.
        value: u64,
        /// The narrowest window.
        min: u64,
        /// The widest window.
        max: u64,
    },
    /// A ranking's `n` outside its bounds.
    #[error("n: must be {min} to {max}, got {value}")]
    TopOutOfRange {
        /// The value given.
        value: usize,
        /// The fewest series ranked.
        min: usize,
        /// The most series ranked.
        max: usize,
    },
    /// Stored bytes of the wrong length for the record's layout.
    #[error("a stored record must be {expected} bytes, got {len}")]
    RecordLength {
        /// The bytes given.
        len: usize,
        /// The record's encoded length.
        expected: usize,
    },
    /// A stored record of an encoding version this build does not read (or bytes never
    /// written: a zeroed region has version 0).
    #[error("a stored record of version {found}; this build reads version {expected}")]
    RecordVersion {
        /// The record's version byte.
        found: u8,
        /// [`RECORD_VERSION`](super::encoding::RECORD_VERSION).
        expected: u8,
    },
    /// A stored record whose checksum does not match its bytes: a torn or corrupt write.
    #[error("a stored record's checksum is {stored:#010x}, its bytes give {computed:#010x}")]
    RecordChecksum {
        /// The checksum stored with the record.
        stored: u32,
        /// The checksum of the bytes read.
        computed: u32,
    },
    /// A stored record whose checksum matches but whose figures break an invariant (a bug in
    /// the writer).
    #[error("a stored record is inconsistent: {reason}")]
    RecordInconsistent {
        /// Which invariant fails.
        reason: &'static str,
    },
}
