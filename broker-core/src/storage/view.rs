//! The read side of a partition's log, shared by the writer, readers and retention.
//!
//! Readers see only what the writer has committed: the writer indexes a group of batches, then
//! publishes the new end offset, so every offset below [`LogView::end_offset`] has an index
//! entry and every frame a reader decodes has passed its CRC. Invariant:
//! `start_offset <= end_offset`, both only grow.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;

use super::codec::{Batch, BatchKind};
use super::index::LogIndex;
use super::segment::{ScanStep, Segment};
use super::tail::TailCache;
use crate::error::{BrokerError, Result};
use crate::limits::{MAX_READ_BYTES, MAX_READ_RECORDS};
use crate::message::{Record, StoredRecord};

/// A place in a partition's log between two frames: the segment (by base offset) and the byte
/// position in it. Ordered as the log is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct LogPosition {
    /// Base offset of the segment.
    pub segment_base: u64,
    /// Byte position in that segment.
    pub position: u64,
}

/// Shared state of one partition's log.
#[derive(Debug)]
pub(crate) struct LogView {
    dir: PathBuf,
    index: LogIndex,
    segments: RwLock<BTreeMap<u64, Arc<Segment>>>,
    start_offset: AtomicU64,
    end_offset: AtomicU64,
    /// One past the last visible frame (messages or control).
    end_position: Mutex<LogPosition>,
    /// Serialises retention runs; readers and the writer never take it.
    pub(super) retention: Mutex<()>,
    /// The newest committed records, for readers at the head of the log.
    tail: Mutex<TailCache>,
}

impl LogView {
    /// The view of a freshly recovered log; `segments` is not empty.
    pub(crate) fn new(
        dir: PathBuf,
        index: LogIndex,
        segments: BTreeMap<u64, Arc<Segment>>,
        end_offset: u64,
        end_position: LogPosition,
    ) -> LogView {
        let start_offset = segments.keys().next().copied().unwrap_or(end_offset);
        debug_assert!(start_offset <= end_offset);
        LogView {
            dir,
            index,
            segments: RwLock::new(segments),
            start_offset: AtomicU64::new(start_offset),
            end_offset: AtomicU64::new(end_offset),
            end_position: Mutex::new(end_position),
            retention: Mutex::new(()),
            tail: Mutex::new(TailCache::default()),
        }
    }

    /// Keeps a batch in the tail cache; only the writer calls this, as it commits the batch
    /// (readers get nothing at or past the end offset from it).
    pub(crate) fn remember(&self, base_offset: u64, leader_epoch: u64, records: Vec<Record>) {
        self.tail.lock().unwrap_or_else(|p| p.into_inner()).push(
            base_offset,
            leader_epoch,
            records,
        );
    }

    /// What [`LogView::read`] would return, if the tail cache holds `max(from, start_offset)`;
    /// `None` otherwise. Never blocks on I/O.
    pub(crate) fn read_cached(
        &self,
        from: u64,
        max_records: usize,
        max_bytes: usize,
    ) -> Option<Vec<StoredRecord>> {
        let from = from.max(self.start_offset());
        let end = self.end_offset();
        self.tail
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .read(from, end, max_records, max_bytes)
    }

    /// The partition's directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The partition's index.
    pub(crate) fn index(&self) -> &LogIndex {
        &self.index
    }

    /// First offset still stored.
    pub(crate) fn start_offset(&self) -> u64 {
        self.start_offset.load(Ordering::Acquire)
    }

    /// One past the last committed offset.
    pub(crate) fn end_offset(&self) -> u64 {
        self.end_offset.load(Ordering::Acquire)
    }

    /// One past the last visible frame: a replay of control entries up to here sees every
    /// state change whose writer was answered (per the fsync policy).
    pub(crate) fn end_position(&self) -> LogPosition {
        *self.end_position.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes offsets below `end` and frames before `position` visible; only the writer calls
    /// this, after indexing them. Whether anything new became visible.
    pub(crate) fn publish_end(&self, end: u64, position: LogPosition) -> bool {
        let mut visible = self.end_position.lock().unwrap_or_else(|p| p.into_inner());
        debug_assert!(*visible <= position, "end position went back");
        let moved = *visible != position;
        *visible = position;
        let previous = self.end_offset.swap(end, Ordering::AcqRel);
        debug_assert!(
            previous <= end,
            "end offset went back from {previous} to {end}"
        );
        moved
    }

    /// Calls `visit` with each control entry of the frames from `from` (a frame boundary, or
    /// an earlier position whose segment retention deleted: then the oldest segment) up to
    /// the visible end, in log order, with the position after its frame. Message frames are
    /// skipped by their length. A frame that fails its checks ends the replay with
    /// [`BrokerError::Corrupt`]. Blocking file I/O.
    pub(crate) fn replay_controls(
        &self,
        from: LogPosition,
        mut visit: impl FnMut(LogPosition, Bytes) -> Result<()>,
    ) -> Result<()> {
        let end = self.end_position();
        let segments: Vec<Arc<Segment>> = {
            let segments = self.segments.read().unwrap_or_else(|p| p.into_inner());
            segments.values().cloned().collect()
        };
        for segment in segments {
            let base = segment.base_offset();
            // Retention deletes oldest first: a deleted `from` segment leaves only later ones.
            if base < from.segment_base {
                continue;
            }
            let mut position = if base == from.segment_base {
                from.position
            } else {
                0
            };
            loop {
                let here = LogPosition {
                    segment_base: base,
                    position,
                };
                if here >= end {
                    return Ok(());
                }
                let step = segment.scan_control_at(position)?;
                let (frame_len, batch) = match step {
                    ScanStep::End => break,
                    ScanStep::Invalid(reason) => return Err(segment.corrupt(position, reason)),
                    ScanStep::Skipped { frame_len } => (frame_len, None),
                    ScanStep::Frame { batch, frame_len } => (frame_len, Some(batch)),
                };
                position += frame_len;
                let after = LogPosition {
                    segment_base: base,
                    position,
                };
                for entry in batch.into_iter().flat_map(|b| b.controls) {
                    visit(after, entry)?;
                }
            }
        }
        Ok(())
    }

    /// Moves the start forward past deleted segments.
    pub(super) fn advance_start(&self, start: u64) {
        let previous = self.start_offset.swap(start, Ordering::AcqRel);
        debug_assert!(previous <= start && start <= self.end_offset());
    }

    /// Adds a newly rolled segment, which becomes the active one.
    pub(crate) fn add_segment(&self, segment: Arc<Segment>) {
        self.segments_mut().insert(segment.base_offset(), segment);
    }

    /// Forgets a deleted segment.
    pub(super) fn remove_segment(&self, base_offset: u64) {
        self.segments_mut().remove(&base_offset);
    }

    /// The oldest segment and the base of the one after it, when that one exists and every
    /// batch of the oldest is committed: the only segment retention may delete.
    pub(super) fn oldest_sealed(&self) -> Option<(Arc<Segment>, u64)> {
        let segments = self.segments.read().unwrap_or_else(|p| p.into_inner());
        let mut bases = segments.values();
        let oldest = bases.next()?;
        let next_base = bases.next()?.base_offset();
        (next_base <= self.end_offset()).then(|| (Arc::clone(oldest), next_base))
    }

    /// Bytes in all segment files.
    pub(crate) fn size_bytes(&self) -> u64 {
        let segments = self.segments.read().unwrap_or_else(|p| p.into_inner());
        segments.values().map(|s| s.size()).sum()
    }

    fn segment(&self, base_offset: u64) -> Option<Arc<Segment>> {
        let segments = self.segments.read().unwrap_or_else(|p| p.into_inner());
        segments.get(&base_offset).cloned()
    }

    fn segments_mut(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<u64, Arc<Segment>>> {
        self.segments.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Committed records from `max(from, start_offset)`: at most `max_records` (and
    /// [`MAX_READ_RECORDS`]); a record whose value would take the gathered value bytes past
    /// `max_bytes` (and [`MAX_READ_BYTES`]) ends the read, unless it is the first.
    pub(crate) fn read(
        &self,
        from: u64,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<Vec<StoredRecord>> {
        let max_records = max_records.min(MAX_READ_RECORDS);
        let max_bytes = max_bytes.min(MAX_READ_BYTES);
        let end = self.end_offset();
        let mut out = Vec::new();
        let mut gathered = 0usize;
        let mut next = from.max(self.start_offset());
        while next < end && out.len() < max_records {
            let Some(batch) = self.load_batch(next)? else {
                if !out.is_empty() {
                    break;
                }
                next = self.start_offset();
                continue;
            };
            let base = batch.header.base_offset;
            let epoch = batch.header.leader_epoch;
            for (offset, record) in (base..).zip(batch.records) {
                if offset < next {
                    continue;
                }
                let fits = out.is_empty() || gathered + record.value.len() <= max_bytes;
                if offset >= end || out.len() >= max_records || !fits {
                    return Ok(out);
                }
                gathered += record.value.len();
                out.push(StoredRecord {
                    offset,
                    leader_epoch: epoch,
                    record,
                });
            }
            next = batch.header.next_offset();
        }
        Ok(out)
    }

    /// First committed offset whose record timestamp is at least `ts_ms`, or the end offset.
    pub(crate) fn offset_for_timestamp(&self, ts_ms: u64) -> Result<u64> {
        let end = self.end_offset();
        let Some(floor) = self.index.first_batch_reaching(ts_ms)? else {
            return Ok(end);
        };
        for location in self.index.batches_from(floor.max(self.start_offset())) {
            let location = location?;
            if location.base_offset >= end {
                break;
            }
            if location.max_ts < ts_ms {
                continue;
            }
            let Some(batch) = self.load_batch(location.base_offset)? else {
                continue;
            };
            debug_assert_eq!(batch.header.kind, BatchKind::Messages);
            let base = batch.header.base_offset;
            let mut offsets = (base..).zip(&batch.records);
            if let Some((offset, _)) = offsets.find(|(_, r)| r.timestamp_ms >= ts_ms) {
                return Ok(offset);
            }
        }
        Ok(end)
    }

    /// Reads and checks the message batch holding committed `offset`. `None` when retention deleted it
    /// meanwhile; an error when the index or file has lost a batch below the end.
    fn load_batch(&self, offset: u64) -> Result<Option<Batch>> {
        let location = self.index.batch_at_or_before(offset)?;
        let location = location.filter(|l| l.contains(offset));
        let segment = location.and_then(|l| self.segment(l.segment_base));
        let (Some(location), Some(segment)) = (location, segment) else {
            if offset < self.start_offset() {
                return Ok(None);
            }
            return Err(BrokerError::Corrupt {
                path: self.dir.clone(),
                position: 0,
                reason: format!("no stored batch holds committed offset {offset}"),
            });
        };
        let batch = segment.read_frame(location.position, location.frame_len.into())?;
        if batch.header.base_offset != location.base_offset
            || batch.header.record_count != location.record_count
        {
            let reason = format!(
                "the frame holds offsets {}..{}, the index says {}..{}",
                batch.header.base_offset,
                batch.header.next_offset(),
                location.base_offset,
                location.next_offset()
            );
            return Err(segment.corrupt(location.position, reason));
        }
        Ok(Some(batch))
    }
}
