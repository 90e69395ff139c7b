//! Whole frames with their place and time, for state derived from the log that must find a
//! frame again (the trace index, `crate::trace_store`): a replay hands out entries with the
//! position after their frame, but no frame start and no frame time.

use bytes::Bytes;

use super::codec::BatchKind;
use super::reads::FrameCursor;
use super::view::{LogPosition, LogView};
use crate::error::Result;
use crate::message::Record;

/// One frame of a partition's log.
#[derive(Debug)]
pub struct Frame {
    /// Where the frame starts: [`crate::storage::PartitionHandle::frame_at`] reads it again.
    pub start: LogPosition,
    /// Where the next frame starts.
    pub end: LogPosition,
    /// The frame's time: a message batch's first record's, a control batch's writing time.
    pub ts_ms: u64,
    /// Its content.
    pub body: FrameBody,
}

/// What a frame holds.
#[derive(Debug)]
pub enum FrameBody {
    /// A message batch: its first offset and its records.
    Messages {
        /// The offset of its first record.
        base_offset: u64,
        /// Its records, in offset order.
        records: Vec<Record>,
    },
    /// A control batch's entries.
    Controls(Vec<Bytes>),
    /// A frame of the replication layer's own.
    Other,
}

impl LogView {
    /// Visits at most `max_frames` visible frames from `from` (a frame start, or the start of
    /// a deleted segment's successor), in log order; returns where the walk stopped: after
    /// the last frame visited, or the visible end. Blocking file I/O.
    pub(crate) fn walk_frames(
        &self,
        from: LogPosition,
        max_frames: usize,
        mut visit: impl FnMut(Frame) -> Result<()>,
    ) -> Result<LogPosition> {
        let Some(mut cursor) = self.frame_cursor_at(from, false) else {
            return Ok(from);
        };
        let mut stopped = cursor.here();
        for _ in 0..max_frames {
            let Some((start, step)) = cursor.next()? else {
                break;
            };
            stopped = cursor.here();
            if let Some(frame) = step.into_frame(start, stopped) {
                visit(frame)?;
            }
        }
        Ok(stopped)
    }

    /// The visible frame starting at `at`, if there is one. Blocking file I/O.
    pub(crate) fn frame_at(&self, at: LogPosition) -> Result<Option<Frame>> {
        let Some(mut cursor) = self.frame_cursor_at(at, true) else {
            return Ok(None);
        };
        match cursor.next()? {
            Some((start, step)) if start == at => Ok(step.into_frame(start, cursor.here())),
            _ => Ok(None),
        }
    }

    /// A cursor at `from`, or at the start of the first segment after it when its segment is
    /// gone (`exact`: then none); none when no segment is left.
    fn frame_cursor_at(&self, from: LogPosition, exact: bool) -> Option<FrameCursor<'_>> {
        let segment = self
            .all_segments()
            .into_iter()
            .find(|s| s.base_offset() >= from.segment_base)?;
        let same = segment.base_offset() == from.segment_base;
        if exact && !same {
            return None;
        }
        Some(FrameCursor::new(
            self,
            segment,
            if same { from.position } else { 0 },
            self.end_position(),
        ))
    }
}

impl super::reads::Step {
    fn into_frame(self, start: LogPosition, end: LogPosition) -> Option<Frame> {
        let super::reads::Step::Frame(batch) = self else {
            return None;
        };
        let body = match batch.header.kind {
            BatchKind::Messages => FrameBody::Messages {
                base_offset: batch.header.base_offset,
                records: batch.records,
            },
            BatchKind::Control => FrameBody::Controls(batch.controls),
            BatchKind::Meta => FrameBody::Other,
        };
        Some(Frame {
            start,
            end,
            ts_ms: batch.header.first_ts,
            body,
        })
    }
}
