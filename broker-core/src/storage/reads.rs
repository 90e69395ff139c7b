//! Reading a partition's log: records by offset, the first offset at a time, and the control
//! entries of a replay. Each finds its first frame through the sparse index (the chunk at or
//! before it) and then walks frames forward, across segments, checking each frame's CRC;
//! nothing is read at or past the published end.

use std::sync::Arc;

use bytes::Bytes;

use super::codec::{Batch, BatchKind};
use super::segment::{ScanStep, Segment};
use super::view::{LastRead, LogPosition, LogView};
use crate::error::{BrokerError, Result};
use crate::limits::{MAX_READ_BYTES, MAX_READ_RECORDS};
use crate::message::StoredRecord;

/// Walks frames forward from a position, moving to the next segment at the end of one.
pub(super) struct FrameCursor<'a> {
    view: &'a LogView,
    segment: Arc<Segment>,
    position: u64,
    /// The message frames it reads; it steps over the others.
    messages: MessageFrames,
    /// The published end when the cursor was made: it reads no frame at or past it, where
    /// bytes may still be written or cut (a replica's uncommitted Raft tail).
    until: LogPosition,
}

/// One frame a cursor passed.
pub(super) enum Step {
    /// A decoded frame.
    Frame(Batch),
    /// A message frame stepped over unread.
    Skipped,
}

impl<'a> FrameCursor<'a> {
    /// A cursor at `position` of `segment` that reads nothing at or past `until`.
    pub(super) fn new(
        view: &'a LogView,
        segment: Arc<Segment>,
        position: u64,
        until: LogPosition,
    ) -> FrameCursor<'a> {
        FrameCursor {
            view,
            segment,
            position,
            messages: MessageFrames::All,
            until,
        }
    }

    /// Where the cursor stands.
    pub(super) fn here(&self) -> LogPosition {
        LogPosition {
            segment_base: self.segment.base_offset(),
            position: self.position,
        }
    }

    /// The next frame and where it starts, or `None` at the published end. A frame
    /// that fails its checks is [`BrokerError::Corrupt`]: what a reader may reach was verified
    /// when it was written or recovered, so a bad frame there is damage, never a torn write.
    pub(super) fn next(&mut self) -> Result<Option<(LogPosition, Step)>> {
        loop {
            let start = self.here();
            if start >= self.until {
                return Ok(None);
            }
            let step = self.segment.scan_for_replay(self.position, self.messages)?;
            match step {
                ScanStep::Frame { batch, frame_len } => {
                    self.position += frame_len;
                    return Ok(Some((start, Step::Frame(batch))));
                }
                ScanStep::Skipped { frame_len } => {
                    self.position += frame_len;
                    return Ok(Some((start, Step::Skipped)));
                }
                ScanStep::Invalid(reason) => {
                    return Err(self.segment.corrupt(self.position, reason));
                }
                ScanStep::Zeros => {
                    return Err(self.segment.corrupt(self.position, "zeros, not a frame"));
                }
                ScanStep::End => match self.view.segment_after(self.segment.base_offset()) {
                    Some(next) => {
                        self.segment = next;
                        self.position = 0;
                    }
                    None => return Ok(None),
                },
            }
        }
    }

    /// The next message batch, stepping over control frames.
    fn next_messages(&mut self) -> Result<Option<Batch>> {
        while let Some((_, step)) = self.next()? {
            if let Step::Frame(batch) = step
                && batch.header.kind == BatchKind::Messages
            {
                return Ok(Some(batch));
            }
        }
        Ok(None)
    }
}

impl LogView {
    /// A cursor at the chunk holding `offset` (or the last chunk before it). `None` when
    /// retention deleted it meanwhile; an error when the index has lost a committed batch.
    fn cursor_at(&self, offset: u64) -> Result<Option<FrameCursor<'_>>> {
        let chunk = self.chunk_at_or_before(offset)?;
        let segment = chunk.and_then(|c| self.segment(c.segment_base).map(|s| (c, s)));
        match segment {
            Some((chunk, segment)) => Ok(Some(FrameCursor {
                view: self,
                segment,
                position: chunk.position,
                messages: MessageFrames::All,
                until: self.end_position(),
            })),
            None if offset < self.start_offset() => Ok(None),
            None => Err(BrokerError::Corrupt {
                path: self.dir().to_path_buf(),
                position: 0,
                reason: format!("no index entry leads to committed offset {offset}"),
            }),
        }
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
        let mut next = from.max(self.start_offset());
        let mut out = Vec::new();
        if next >= end {
            return Ok(out);
        }
        let limits = (max_records, max_bytes);
        let mut gathered = 0usize;
        // Receives that read a deep backlog a few records at a time come back to the batch
        // the last read ended in: serve them from it instead of reading and decoding the
        // frame again.
        let mut cursor = match self.last_read_holding(next) {
            Some(last) => {
                if take_records(&last.batch, next, end, limits, &mut out, &mut gathered) {
                    return Ok(out);
                }
                self.cursor_after(&last)
            }
            None => match self.cursor_at(next)? {
                Some(cursor) => Some(cursor),
                None => {
                    next = self.start_offset();
                    self.cursor_at(next)?
                }
            },
        };
        while let Some(cursor) = cursor.as_mut() {
            let Some(batch) = cursor.next_messages()? else {
                break;
            };
            // Kept for the next read, which then starts from the frame after it.
            let reaches_end = batch.header.next_offset() >= end;
            if take_records(&batch, next, end, limits, &mut out, &mut gathered) || reaches_end {
                self.remember_read(batch, cursor.here());
                return Ok(out);
            }
        }
        Ok(out)
    }

    /// [`LogView::read`] served from the batch the last file read ended in, when that batch
    /// holds `from` and completes the read (a limit or the end is reached inside it); `None`
    /// otherwise. Memory only: receives walking a deep backlog a few records at a time do
    /// not hop to the blocking pool for a batch already decoded. A read that takes the
    /// batch's last record marks the frame after it for [`LogView::prefetch`].
    pub(crate) fn read_last(
        &self,
        from: u64,
        max_records: usize,
        max_bytes: usize,
    ) -> Option<Vec<StoredRecord>> {
        let limits = (
            max_records.min(MAX_READ_RECORDS),
            max_bytes.min(MAX_READ_BYTES),
        );
        let last = self.last_read_holding(from)?;
        let (mut out, mut gathered) = (Vec::new(), 0usize);
        let end = self.end_offset();
        let cut = take_records(&last.batch, from, end, limits, &mut out, &mut gathered);
        let next = out.last().map_or(from, |r| r.offset + 1);
        let drained = next >= last.batch.header.next_offset();
        if drained {
            self.want_prefetch();
        }
        let complete = cut || out.len() >= limits.0 || next >= end;
        complete.then_some(out)
    }

    /// Reads and decodes the message frame after the last-read batch, so that the reader
    /// who just drained it finds the next one in memory ([`LogView::read_last`]). Does
    /// nothing when no prefetch is due, the frame is not committed yet, or its segment is
    /// gone. Blocking file I/O.
    pub(crate) fn prefetch(&self) -> Result<()> {
        let Some(last) = self.last_read() else {
            return Ok(());
        };
        let end = self.end_offset();
        if last.batch.header.next_offset() >= end {
            return Ok(());
        }
        let Some(mut cursor) = self.cursor_after(&last) else {
            return Ok(());
        };
        if let Some(batch) = cursor.next_messages()?
            && batch.header.next_offset() <= end
        {
            self.remember_read(batch, cursor.here());
        }
        Ok(())
    }

    /// A cursor at the frame after `last`, if its segment still exists.
    fn cursor_after(&self, last: &LastRead) -> Option<FrameCursor<'_>> {
        self.segment(last.after.segment_base)
            .map(|segment| FrameCursor {
                view: self,
                segment,
                position: last.after.position,
                messages: MessageFrames::All,
                until: self.end_position(),
            })
    }

    /// First committed offset whose record timestamp is at least `ts_ms`, or the end offset.
    pub(crate) fn offset_for_timestamp(&self, ts_ms: u64) -> Result<u64> {
        let end = self.end_offset();
        let Some(floor) = self.first_chunk_reaching(ts_ms)? else {
            return Ok(end);
        };
        let Some(mut cursor) = self.cursor_at(floor.max(self.start_offset()))? else {
            return Ok(end);
        };
        while let Some(batch) = cursor.next_messages()? {
            let base = batch.header.base_offset;
            if base >= end {
                break;
            }
            if batch.header.max_ts < ts_ms {
                continue;
            }
            let mut offsets = (base..end).zip(&batch.records);
            if let Some((offset, _)) = offsets.find(|(_, r)| r.timestamp_ms >= ts_ms) {
                return Ok(offset);
            }
        }
        Ok(end)
    }

    /// Calls `visit` with each control entry of the frames from `from` (a frame boundary, or
    /// a position in a segment retention deleted: then from the oldest segment) up to the
    /// visible end, in log order, with the position after its frame. Message frames are
    /// stepped over by their length. A bad frame ends the replay with
    /// [`BrokerError::Corrupt`]. Blocking file I/O.
    pub(crate) fn replay_controls(
        &self,
        from: LogPosition,
        mut visit: impl FnMut(LogPosition, Bytes) -> Result<()>,
    ) -> Result<()> {
        self.replay(from, MessageFrames::Skip, |at, entry| match entry {
            Replayed::Control(entry) => visit(at, entry),
            Replayed::Messages { .. } => Ok(()),
        })?;
        Ok(())
    }

    /// [`LogView::replay_controls`] that also visits the message batches `messages` asks for
    /// (decoding them; the others are stepped over). Returns the position it replayed to:
    /// the visible end when it started.
    pub(crate) fn replay(
        &self,
        from: LogPosition,
        messages: MessageFrames,
        visit: impl FnMut(LogPosition, Replayed) -> Result<()>,
    ) -> Result<LogPosition> {
        self.replay_until(from, LogPosition::MAX, messages, visit)
    }

    /// [`LogView::replay`] that stops at `until` when it comes before the visible end;
    /// returns the position it replayed to.
    pub(crate) fn replay_until(
        &self,
        from: LogPosition,
        until: LogPosition,
        messages: MessageFrames,
        mut visit: impl FnMut(LogPosition, Replayed) -> Result<()>,
    ) -> Result<LogPosition> {
        let end = self.end_position().min(until);
        // Retention deletes oldest first: a deleted `from` segment leaves only later ones.
        let first = self
            .all_segments()
            .into_iter()
            .find(|s| s.base_offset() >= from.segment_base);
        let Some(segment) = first else {
            return Ok(end);
        };
        let position = if segment.base_offset() == from.segment_base {
            from.position
        } else {
            0
        };
        let mut cursor = FrameCursor {
            view: self,
            segment,
            position,
            messages,
            until: end,
        };
        while let Some((_, step)) = cursor.next()? {
            let Step::Frame(batch) = step else { continue };
            let after = cursor.here();
            match batch.header.kind {
                BatchKind::Control => {
                    for entry in batch.controls {
                        visit(after, Replayed::Control(entry))?;
                    }
                }
                BatchKind::Messages => visit(
                    after,
                    Replayed::Messages {
                        base_offset: batch.header.base_offset,
                        records: batch.records,
                    },
                )?,
                // Raft's own entries are the replication layer's, not the broker's state.
                BatchKind::Meta => {}
            }
        }
        Ok(end)
    }
}

/// Which message frames a replay ([`crate::storage::PartitionHandle::replay`]) reads; it
/// steps over the others by their length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageFrames {
    /// None (a replay of control entries).
    Skip,
    /// Those holding a record whose id the producer chose or a record moved out of the delay
    /// schedule (what the dedup index and the schedule derive); the others are walked by
    /// their lengths, not decoded.
    Marked,
    /// Every one.
    All,
}

/// What a replay ([`crate::storage::PartitionHandle::replay`]) meets, in log order.
#[derive(Debug)]
pub enum Replayed {
    /// One control entry.
    Control(Bytes),
    /// One message batch.
    Messages {
        /// The offset of its first record.
        base_offset: u64,
        /// Its records, in offset order.
        records: Vec<crate::message::Record>,
    },
}

/// Adds the records of `batch` from `next` to `out` within the limits `(max_records,
/// max_bytes)` and below `end`; whether the read is complete (a limit or the end was reached
/// inside this batch).
fn take_records(
    batch: &Batch,
    next: u64,
    end: u64,
    (max_records, max_bytes): (usize, usize),
    out: &mut Vec<StoredRecord>,
    gathered: &mut usize,
) -> bool {
    let base = batch.header.base_offset;
    for (offset, record) in (base..).zip(&batch.records) {
        if offset < next {
            continue;
        }
        let fits = out.is_empty() || *gathered + record.value.len() <= max_bytes;
        if offset >= end || out.len() >= max_records || !fits {
            return true;
        }
        *gathered += record.value.len();
        out.push(StoredRecord {
            offset,
            leader_epoch: batch.header.leader_epoch,
            record: record.clone(),
        });
    }
    false
}
