//! The tail cache: the newest committed records of a partition, kept in memory after the
//! writer wrote them, so that readers at the head of the log (consumers keeping up, delayed
//! messages delivered at their due time) get them without a blocking file read. A read that
//! starts below the cache, or past what it holds, is not answered here and goes to the files.
//!
//! The writer moves each committed batch's records in (they were going to be dropped after
//! encoding), so the write path copies nothing; a read clones what it returns, as a file read
//! would decode it. Bounded by [`TAIL_CACHE_BYTES`] (which, with the per-record overhead
//! counted, also bounds the record count), oldest out first.

use std::collections::VecDeque;

use crate::limits::{MAX_READ_BYTES, MAX_READ_RECORDS};
use crate::message::{Record, StoredRecord};

/// Bytes of records one partition's tail cache holds (by [`Record::approx_size`] plus
/// [`RECORD_OVERHEAD_BYTES`] each): a few hundred 1 KiB messages, tens of milliseconds of a
/// busy partition, which is what a consumer that keeps up reads. A thousand partitions would
/// hold 250 MiB, which is why it is not larger.
pub const TAIL_CACHE_BYTES: usize = 256 * 1024;
/// What a cached record costs beyond its payload: the struct, its strings' and vectors'
/// headers and the deque slot, rounded up.
const RECORD_OVERHEAD_BYTES: usize = 192;

/// The newest records of one partition, contiguous by offset.
#[derive(Debug, Default)]
pub(crate) struct TailCache {
    records: VecDeque<StoredRecord>,
    bytes: usize,
}

fn cost(record: &Record) -> usize {
    record.approx_size() + RECORD_OVERHEAD_BYTES
}

impl TailCache {
    /// Adds a committed batch: `records` at offsets from `base_offset`. A batch that does not
    /// follow the newest cached record (the first after a restart) starts the cache afresh.
    pub(crate) fn push(&mut self, base_offset: u64, leader_epoch: u64, records: Vec<Record>) {
        let follows = self
            .records
            .back()
            .is_none_or(|last| last.offset + 1 == base_offset);
        if !follows {
            self.records.clear();
            self.bytes = 0;
        }
        for (offset, record) in (base_offset..).zip(records) {
            self.bytes += cost(&record);
            self.records.push_back(StoredRecord {
                offset,
                leader_epoch,
                record,
            });
        }
        while self.bytes > TAIL_CACHE_BYTES {
            let Some(oldest) = self.records.pop_front() else {
                break;
            };
            self.bytes -= cost(&oldest.record);
        }
        self.check_invariants();
    }

    /// The records a file read from `from` would return, below `end` (the committed end), with
    /// the same limits: at most `max_records` (and [`MAX_READ_RECORDS`]), stopping before a
    /// record whose value would take the value bytes past `max_bytes` (and
    /// [`MAX_READ_BYTES`]) unless it is the first. `None` when the cache does not hold `from`.
    pub(crate) fn read(
        &self,
        from: u64,
        end: u64,
        max_records: usize,
        max_bytes: usize,
    ) -> Option<Vec<StoredRecord>> {
        let first = self.records.front()?.offset;
        let last = self.records.back()?.offset;
        if from < first || from > last || from >= end {
            return None;
        }
        let max_records = max_records.min(MAX_READ_RECORDS);
        let max_bytes = max_bytes.min(MAX_READ_BYTES);
        let skip = usize::try_from(from - first).ok()?;
        let mut out = Vec::new();
        let mut gathered = 0usize;
        for stored in self.records.iter().skip(skip) {
            let len = stored.record.value.len();
            let fits = out.is_empty() || gathered + len <= max_bytes;
            if stored.offset >= end || out.len() >= max_records || !fits {
                break;
            }
            gathered += len;
            out.push(stored.clone());
        }
        Some(out)
    }

    fn check_invariants(&self) {
        debug_assert!(
            self.records
                .iter()
                .zip(self.records.iter().skip(1))
                .all(|(a, b)| a.offset + 1 == b.offset),
            "the tail cache is not contiguous"
        );
        debug_assert_eq!(
            self.bytes,
            self.records.iter().map(|s| cost(&s.record)).sum::<usize>(),
            "the tail cache's byte count is off"
        );
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn record(n: u64, size: usize) -> Record {
        Record {
            id: format!("id-{n}"),
            timestamp_ms: n,
            key: None,
            value: Bytes::from(vec![b'x'; size]),
            binary: false,
            scheduled: false,
            client_id: false,
            headers: Vec::new(),
            tags: Vec::new(),
            trace: None,
            origin: None,
        }
    }

    fn batch(from: u64, count: u64, size: usize) -> Vec<Record> {
        (from..from + count).map(|n| record(n, size)).collect()
    }

    fn offsets(read: Option<Vec<StoredRecord>>) -> Option<Vec<u64>> {
        read.map(|records| records.iter().map(|r| r.offset).collect())
    }

    #[test]
    fn serves_what_it_holds_below_the_end_and_nothing_else() {
        let mut cache = TailCache::default();
        cache.push(10, 1, batch(10, 5, 10));
        assert_eq!(
            offsets(cache.read(12, 15, 100, 1 << 20)),
            Some(vec![12, 13, 14])
        );
        assert_eq!(
            offsets(cache.read(12, 14, 100, 1 << 20)),
            Some(vec![12, 13])
        );
        assert_eq!(
            offsets(cache.read(9, 15, 100, 1 << 20)),
            None,
            "below the cache"
        );
        assert_eq!(
            offsets(cache.read(15, 16, 100, 1 << 20)),
            None,
            "past the cache"
        );
        assert_eq!(
            offsets(cache.read(14, 14, 100, 1 << 20)),
            None,
            "at the end"
        );
        let read = cache.read(10, 15, 2, 1 << 20).expect("held");
        assert_eq!(read.len(), 2);
        assert_eq!(read[0].leader_epoch, 1);
        assert_eq!(read[0].record, record(10, 10));
    }

    #[test]
    fn applies_the_byte_limit_like_a_file_read() {
        let mut cache = TailCache::default();
        cache.push(0, 0, batch(0, 4, 100));
        assert_eq!(offsets(cache.read(0, 4, 100, 250)), Some(vec![0, 1]));
        assert_eq!(
            offsets(cache.read(0, 4, 100, 10)),
            Some(vec![0]),
            "the first record always"
        );
    }

    #[test]
    fn stays_within_its_bounds_oldest_out_first() {
        let mut cache = TailCache::default();
        let size = 1_000;
        for n in 0..1_000 {
            cache.push(n, 0, batch(n, 1, size));
        }
        assert!(cache.bytes <= TAIL_CACHE_BYTES);
        let held = cache.records.len() as u64;
        assert!(held > 0 && held < 1_000);
        assert_eq!(cache.records.back().map(|r| r.offset), Some(999));
        assert_eq!(
            offsets(cache.read(1_000 - held - 1, 1_000, 1, 1 << 20)),
            None
        );
        assert!(cache.read(1_000 - held, 1_000, 1, 1 << 20).is_some());
        for n in 1_000..10_000 {
            cache.push(n, 0, batch(n, 1, 0));
        }
        assert!(cache.bytes <= TAIL_CACHE_BYTES);
        assert!(cache.records.len() <= TAIL_CACHE_BYTES / RECORD_OVERHEAD_BYTES);
    }

    #[test]
    fn a_gap_starts_the_cache_afresh() {
        let mut cache = TailCache::default();
        cache.push(0, 0, batch(0, 3, 1));
        cache.push(7, 0, batch(7, 2, 1));
        assert_eq!(offsets(cache.read(0, 9, 100, 1 << 20)), None);
        assert_eq!(offsets(cache.read(7, 9, 100, 1 << 20)), Some(vec![7, 8]));
    }
}
