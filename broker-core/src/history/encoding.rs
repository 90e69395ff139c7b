//! The fixed-size byte form of a [`MinuteRecord`], for the file layer: every record of a
//! series takes [`MinuteRecord::ENCODED_LEN`] bytes, so record `i` of a file sits at
//! `i × ENCODED_LEN` and a torn write spoils one record only.
//!
//! ```text
//! record = version u8 (1) | minute u64 | counters C × u64 | gauges G × (last u64, max u64)
//!        | crc32c(everything before) u32
//! ```
//!
//! All integers are little-endian. The version comes first so that a region never written
//! (zeros) reads as version 0; the checksum comes last so that a write torn anywhere fails it.
//!
//! A topic's record is 69 bytes and a subscription's 77, so a day (1,440 minutes) of one
//! series takes 99,360 bytes on disk for a topic and 110,880 for a subscription, and the
//! default 7 days (10,080 minutes) 695,520 and 776,160.
//!
//! Version 2 added a topic's `latency_p99_ms` gauge and a subscription's
//! `delivered_messages` counter; version 1 records (53 and 69 bytes) are not read.

use super::error::HistoryError;
use super::record::{GaugeMinute, MinuteRecord};

/// The encoding version this build writes and reads.
pub const RECORD_VERSION: u8 = 2;
/// Bytes of the checksum that ends a record.
const CHECKSUM_LEN: usize = 4;
/// Bytes of one figure.
const WORD_LEN: usize = 8;

impl<const C: usize, const G: usize> MinuteRecord<C, G> {
    /// Bytes of an encoded record of this series: 69 for a topic, 77 for a subscription.
    pub const ENCODED_LEN: usize = 1 + WORD_LEN * (1 + C + 2 * G) + CHECKSUM_LEN;

    /// The record's bytes, exactly [`ENCODED_LEN`](Self::ENCODED_LEN) of them.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(Self::ENCODED_LEN);
        bytes.push(RECORD_VERSION);
        let gauges = self.gauges.iter().flat_map(|gauge| [gauge.last, gauge.max]);
        for word in [self.minute].into_iter().chain(self.counters).chain(gauges) {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        bytes.extend_from_slice(&crc32c::crc32c(&bytes).to_le_bytes());
        debug_assert_eq!(bytes.len(), Self::ENCODED_LEN);
        bytes
    }

    /// The record `bytes` hold. Checks, in order, the length, the version, the checksum and
    /// the record's invariants ([`MinuteRecord::check`]); never panics, whatever the bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, HistoryError> {
        if bytes.len() != Self::ENCODED_LEN {
            return Err(HistoryError::RecordLength {
                len: bytes.len(),
                expected: Self::ENCODED_LEN,
            });
        }
        let (body, checksum) = bytes.split_at(Self::ENCODED_LEN - CHECKSUM_LEN);
        let (version, words) = body.split_at(1);
        if version[0] != RECORD_VERSION {
            return Err(HistoryError::RecordVersion {
                found: version[0],
                expected: RECORD_VERSION,
            });
        }
        let mut stored = [0; CHECKSUM_LEN];
        stored.copy_from_slice(checksum);
        let (stored, computed) = (u32::from_le_bytes(stored), crc32c::crc32c(body));
        if stored != computed {
            return Err(HistoryError::RecordChecksum { stored, computed });
        }
        let mut words = words.chunks_exact(WORD_LEN).map(word);
        let mut next = || words.next().unwrap_or_default();
        let record = MinuteRecord {
            minute: next(),
            counters: std::array::from_fn(|_| next()),
            gauges: std::array::from_fn(|_| GaugeMinute {
                last: next(),
                max: next(),
            }),
        };
        record
            .check()
            .map_err(|reason| HistoryError::RecordInconsistent { reason })?;
        Ok(record)
    }
}

/// The little-endian `u64` of an 8-byte chunk.
fn word(chunk: &[u8]) -> u64 {
    let mut bytes = [0; WORD_LEN];
    bytes.copy_from_slice(chunk);
    u64::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests;
