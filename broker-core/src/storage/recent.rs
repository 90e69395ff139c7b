//! The newest part of a partition's sparse index, in memory until the writer persists it.
//!
//! The index is sparse, as Kafka's `.index` and `.timeindex` are: one entry per *chunk*, a run
//! of message batches that starts at most [`INDEX_INTERVAL_BYTES`] after the previous chunk's
//! start in the same segment (every segment's first batch starts a chunk). An entry is the
//! chunk's first batch's location with the largest timestamp of the whole chunk. A reader
//! finds the chunk at or before an offset and reads frames forward from its position.
//!
//! The writer notes every committed batch here, so the newest chunk is always in memory; it
//! moves *closed* chunks (a later chunk has started) into sled once the bytes they cover are
//! fsynced, so no entry in sled ever points past a torn frame. Nothing on a request's path
//! waits for that write.

use std::collections::VecDeque;

use super::index::BatchLocation;
use super::view::LogPosition;

/// Bytes of segment between two index entries: a lookup reads at most this much (plus one
/// batch) before the frame it wants, and a 64 MiB segment costs 16,384 entries.
pub(crate) const INDEX_INTERVAL_BYTES: u64 = 4 * 1024;

/// Chunks not yet in sled, oldest first; the last one is still open.
#[derive(Debug, Default)]
pub(crate) struct RecentIndex {
    chunks: VecDeque<BatchLocation>,
}

impl RecentIndex {
    /// Notes a committed message batch: it starts a chunk or widens the open one.
    pub(crate) fn note(&mut self, batch: &BatchLocation) {
        match self.chunks.back_mut() {
            Some(open)
                if open.segment_base == batch.segment_base
                    && batch.position < open.position + INDEX_INTERVAL_BYTES =>
            {
                open.max_ts = open.max_ts.max(batch.max_ts);
            }
            _ => self.chunks.push_back(*batch),
        }
        self.check_invariants();
    }

    /// The chunk in memory holding `offset` or the last one before it; `None` when the oldest
    /// chunk in memory starts after `offset` (then sled has it).
    pub(crate) fn floor(&self, offset: u64) -> Option<BatchLocation> {
        let after = self.chunks.partition_point(|c| c.base_offset <= offset);
        after.checked_sub(1).map(|i| self.chunks[i])
    }

    /// Base offset of the first chunk in memory starting after `offset`.
    pub(crate) fn first_after(&self, offset: u64) -> Option<u64> {
        let after = self.chunks.partition_point(|c| c.base_offset <= offset);
        self.chunks.get(after).map(|c| c.base_offset)
    }

    /// Closed chunks whose bytes all lie before `synced` (fsynced): what may go to sled.
    pub(crate) fn persistable(&self, synced: LogPosition) -> Vec<BatchLocation> {
        self.chunks
            .iter()
            .zip(self.chunks.iter().skip(1))
            .take_while(|(_, next)| position_of(next) <= synced)
            .map(|(chunk, _)| *chunk)
            .collect()
    }

    /// Forgets the chunks before `base_offset` (they reached sled, or retention deleted them).
    pub(crate) fn forget_below(&mut self, base_offset: u64) {
        while self
            .chunks
            .front()
            .is_some_and(|c| c.base_offset < base_offset)
        {
            self.chunks.pop_front();
        }
    }

    /// Forgets the chunks starting at or after `offset` (a conflicting Raft tail was cut).
    pub(crate) fn forget_from(&mut self, offset: u64) {
        while self.chunks.back().is_some_and(|c| c.base_offset >= offset) {
            self.chunks.pop_back();
        }
    }

    /// Base offset of the first chunk in memory whose largest timestamp reaches `ts`.
    pub(crate) fn first_reaching(&self, ts: u64) -> Option<u64> {
        self.chunks
            .iter()
            .find(|c| c.max_ts >= ts)
            .map(|c| c.base_offset)
    }

    /// Largest timestamp of the chunks in memory starting in `from..to`.
    pub(crate) fn max_ts_between(&self, from: u64, to: u64) -> Option<u64> {
        self.chunks
            .iter()
            .filter(|c| (from..to).contains(&c.base_offset))
            .map(|c| c.max_ts)
            .max()
    }

    /// Chunks in memory.
    pub(crate) fn len(&self) -> usize {
        self.chunks.len()
    }

    fn check_invariants(&self) {
        debug_assert!(
            self.chunks
                .iter()
                .zip(self.chunks.iter().skip(1))
                .all(|(a, b)| a.base_offset < b.base_offset && position_of(a) < position_of(b)),
            "chunks out of order"
        );
    }
}

fn position_of(chunk: &BatchLocation) -> LogPosition {
    LogPosition {
        segment_base: chunk.segment_base,
        position: chunk.position,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(base_offset: u64, segment_base: u64, position: u64, max_ts: u64) -> BatchLocation {
        BatchLocation {
            base_offset,
            record_count: 1,
            segment_base,
            position,
            frame_len: 100,
            max_ts,
        }
    }

    fn at(segment_base: u64, position: u64) -> LogPosition {
        LogPosition {
            segment_base,
            position,
        }
    }

    #[test]
    fn batches_within_the_interval_join_the_open_chunk_and_a_new_segment_starts_one() {
        let mut recent = RecentIndex::default();
        recent.note(&batch(0, 0, 0, 10));
        recent.note(&batch(1, 0, INDEX_INTERVAL_BYTES - 1, 30));
        recent.note(&batch(2, 0, INDEX_INTERVAL_BYTES, 20));
        recent.note(&batch(3, 3, 0, 5));
        assert_eq!(recent.len(), 3);
        assert_eq!(
            recent.floor(1).map(|c| (c.base_offset, c.max_ts)),
            Some((0, 30))
        );
        assert_eq!(recent.floor(2).map(|c| c.base_offset), Some(2));
        assert_eq!(recent.floor(99).map(|c| c.base_offset), Some(3));
        assert_eq!(recent.first_reaching(25), Some(0));
        assert_eq!(recent.first_reaching(21), Some(0));
        assert_eq!(recent.first_reaching(31), None);
        assert_eq!(recent.max_ts_between(1, 3), Some(20));
    }

    #[test]
    fn only_closed_chunks_wholly_fsynced_may_be_persisted() {
        let mut recent = RecentIndex::default();
        recent.note(&batch(0, 0, 0, 1));
        recent.note(&batch(5, 0, 5_000, 1));
        recent.note(&batch(9, 0, 10_000, 1));
        assert!(recent.persistable(at(0, 4_999)).is_empty());
        let two: Vec<u64> = recent
            .persistable(at(0, 10_000))
            .iter()
            .map(|c| c.base_offset)
            .collect();
        assert_eq!(two, vec![0, 5], "the open chunk stays");
        recent.forget_below(5);
        assert_eq!(recent.floor(4), None, "sled has it now");
        assert_eq!(recent.len(), 2);
    }
}
