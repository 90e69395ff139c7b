//! Every bound the broker enforces, each with the reason for its number, and
//! [`check_range`], the one check (and wording) of a request value against its bounds.

use std::fmt::Display;

use crate::error::BrokerError;

/// Longest topic or subscription name: API.md's `[A-Za-z0-9._-]{1,200}`.
pub const MAX_NAME_LEN: usize = 200;
/// Longest message id, client-chosen or not: ample for UUIDs, ULIDs and composite ids while
/// keeping the id index small.
pub const MAX_ID_BYTES: usize = 200;
/// Longest key: keys are hashed and indexed, not payload.
pub const MAX_KEY_BYTES: usize = 4 * 1024;
/// Most headers on one message, and the most bytes in all of them: metadata, not payload.
pub const MAX_HEADERS: usize = 64;
/// Most bytes in all headers of one message.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Most tags on one message.
pub const MAX_TAGS: usize = 32;
/// Longest tag.
pub const MAX_TAG_LEN: usize = 200;
/// Default `max_message_bytes` of a topic: 1 MiB, as API.md says.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 1024 * 1024;
/// Largest `max_message_bytes` a topic may set: 16 MiB (API.md).
pub const MAX_MESSAGE_BYTES_CEILING: usize = 16 * 1024 * 1024;
/// Messages in one produce request: 1..=1000 (API.md).
pub const MAX_BATCH_MESSAGES: usize = 1000;
/// Largest value of the open-ended 64-bit settings (a topic's `retention_ms`,
/// `retention_bytes`, `rate_limit.bytes_per_second`, a redrive's `max_messages`): `i64::MAX`. The API documents them as int64, what Java's
/// `long`, Go's `int64` and most JSON decoders read back; a larger value would break them.
pub const MAX_INT64_SETTING: u64 = i64::MAX as u64;
/// Largest value of a 32-bit count the API documents as int32 (`messages_per_second` of a
/// rate limit or a redrive): `i32::MAX`, for the same reason as [`MAX_INT64_SETTING`].
pub const MAX_INT32_SETTING: u32 = i32::MAX as u32;
/// Most partitions in one topic: every partition has a writer thread and open files, so a
/// typo must not create thousands.
pub const MAX_PARTITIONS: u32 = 256;
/// Receive `max_messages` upper bound (API.md: 1..=1000).
pub const MAX_RECEIVE_MESSAGES: usize = 1000;
/// Default receive `max_messages`.
pub const DEFAULT_RECEIVE_MESSAGES: usize = 10;
/// Longest long-poll, in milliseconds (API.md: 0..=60000); longer ones hold connections that
/// proxies and load balancers cut anyway.
pub const MAX_WAIT_MS: u64 = 60_000;
/// Default long-poll wait in milliseconds.
pub const DEFAULT_WAIT_MS: u64 = 20_000;
/// Shortest lease (API.md: 1 s).
pub const MIN_ACK_TIMEOUT_MS: u64 = 1_000;
/// Longest lease (API.md: 12 h, as SQS's visibility timeout).
pub const MAX_ACK_TIMEOUT_MS: u64 = 12 * 60 * 60 * 1000;
/// Default lease.
pub const DEFAULT_ACK_TIMEOUT_MS: u64 = 30_000;
/// Default `max_deliveries`.
pub const DEFAULT_MAX_DELIVERIES: u32 = 16;
/// Highest `max_deliveries`.
pub const MAX_MAX_DELIVERIES: u32 = 1000;
/// Unacked messages one subscription may hold per partition: in flight, waiting to be
/// retried, held back behind an earlier message of their key, delayed and not yet due, or
/// being dead-lettered. Bounds the lease table's memory as SQS's 120,000 in-flight cap does; a
/// consumer group that never acks stops receiving new messages of the partition instead of
/// growing the server. Acked messages never count, however far past the oldest unacked one
/// they lie: the table keeps them as ranges, at most one more range than unacked messages.
pub const MAX_UNACKED_PER_PARTITION: usize = 100_000;
/// Receipts in one ack/nack/extend request, as a receive returns at most this many.
pub const MAX_RECEIPTS: usize = 1000;
/// Most records one offset read returns.
pub const MAX_READ_RECORDS: usize = 1000;
/// Most payload bytes one read (offset read or receive) gathers before it stops, so one reply
/// stays within a few request bodies' worth of memory.
pub const MAX_READ_BYTES: usize = 16 * 1024 * 1024;
/// Depth of each partition writer's request queue. With batches of up to 8 MiB, a full queue is
/// the bound on bytes waiting in memory per partition; past it producers get `overloaded`.
pub const WRITER_QUEUE_DEPTH: usize = 256;
/// Bytes (values, keys and headers) queued for one partition writer and not yet answered.
/// The queue's depth alone would let 256 × 8 MiB = 2 GiB wait per partition; 64 MiB is
/// seconds of disk work, so past it a producer gets `overloaded` at once rather than memory
/// growing. A batch larger than the budget is still taken when the queue is empty.
pub const MAX_WRITER_QUEUED_BYTES: usize = 64 * 1024 * 1024;
/// How long a producer waits for room in a full writer queue before it gets `overloaded`.
pub const WRITER_ENQUEUE_TIMEOUT_MS: u64 = 2_000;
/// Largest batch the log accepts in one frame: a request body's limit (8 MiB) with framing room.
pub const MAX_FRAME_BYTES: usize = 32 * 1024 * 1024;

/// A request value outside its bounds: says "must be {min} to {max}, got {value}". Becomes
/// [`BrokerError::InvalidArgument`] naming the field; the gateway words its own parameters
/// `field: reason`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be {min} to {max}, got {value}")]
pub struct OutOfRange {
    /// The field (JSON name) or parameter at fault.
    pub field: &'static str,
    /// The value given.
    pub value: String,
    /// The smallest value accepted.
    pub min: String,
    /// The largest value accepted.
    pub max: String,
}

impl From<OutOfRange> for BrokerError {
    fn from(error: OutOfRange) -> Self {
        BrokerError::invalid(error.field, error.to_string())
    }
}

/// `value` if it lies in `min..=max`; else which `field` is out of which bounds.
pub fn check_range<T: PartialOrd + Display>(
    field: &'static str,
    value: T,
    min: T,
    max: T,
) -> Result<T, OutOfRange> {
    if min <= value && value <= max {
        return Ok(value);
    }
    Err(OutOfRange {
        field,
        value: value.to_string(),
        min: min.to_string(),
        max: max.to_string(),
    })
}

/// How long a log write nobody waits for (a delivery's trace event) may stay unsynced when no
/// other write's fsync covers it first: one fsync a second at most per partition for them,
/// instead of one per receive, and the trace shows a delivery within about a second. A crash
/// in that window loses such events only (an attempt count, so `max_deliveries` may allow one
/// more delivery, as it did before they were logged).
pub const LAZY_SYNC_MS: u64 = 1_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_bounds_are_accepted_and_one_past_either_is_refused() {
        assert_eq!(check_range("max", 1, 1, 1000), Ok(1));
        assert_eq!(check_range("max", 1000, 1, 1000), Ok(1000));
        assert!(check_range("max", 0, 1, 1000).is_err());
        assert!(check_range("max", 1001, 1, 1000).is_err());
    }

    #[test]
    fn a_refusal_names_the_field_the_bounds_and_the_value() {
        let error = BrokerError::from(
            check_range("wait_ms", 60_001_u64, 0, MAX_WAIT_MS).expect_err("past the limit"),
        );
        assert_eq!(
            error.to_string(),
            "invalid wait_ms: must be 0 to 60000, got 60001"
        );
    }
}
