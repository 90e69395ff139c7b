//! The read side of a replicated partition's Raft log: finding an entry by index, reading a
//! run of entries for replication, and publishing what Raft applied.
//!
//! Entries the in-memory tail ([`RaftTail`]) holds are found at once; an older one is found
//! by reading each segment's first Raft index (cached) and scanning frames forward in the
//! segment holding it, from the nearest entry position a scan noted before
//! ([`super::entry_marks`]): a restart's reads of old entries and a follower far behind.

use super::codec::BatchHeader;
use super::codec::raft::{EntryBody, split_entry};
use super::raft_tail::EntryLocation;
use super::segment::{ScanStep, Segment};
use super::view::{LogPosition, LogView};
use crate::error::Result;

/// A bad frame among a replicated log's entries, before its tail (recovery cut any bad frame
/// in the tail): bit rot or a bad sector in data already acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DamagedEntries {
    /// Where the first bad frame starts.
    pub at: LogPosition,
    /// The last intact entry before it, when the files hold one.
    pub last_intact: Option<EntryLocation>,
}

impl DamagedEntries {
    /// The index of the first entry lost with the bad frame: the one after the last intact.
    pub fn first_lost(&self) -> u64 {
        self.last_intact.map_or(0, |e| e.index + 1)
    }
}

impl LogView {
    /// The newest Raft entry in the tail: the log's last entry, unless the log has none.
    pub(crate) fn last_entry(&self) -> Option<EntryLocation> {
        self.raft().last()
    }

    /// Where entry `index` lies, if the log holds it. Blocking file I/O for an entry older
    /// than the in-memory tail.
    pub(crate) fn locate_entry(&self, index: u64) -> Result<Option<EntryLocation>> {
        let last = {
            let tail = self.raft();
            if let Some(entry) = tail.get(index) {
                return Ok(Some(entry));
            }
            tail.last()
        };
        if last.is_some_and(|l| index > l.index) {
            return Ok(None);
        }
        let Some(segment) = self.segment_holding_entry(index)? else {
            return Ok(None);
        };
        scan_for_entry(&segment, index)
    }

    /// Checks every frame from the start of the segment before the one holding entry `from`
    /// (the oldest segment when none does) to the log's end: the first bad one, if any.
    /// Blocking file I/O (reads those segments whole).
    pub(crate) fn find_damaged_entries(&self, from: u64) -> Result<Option<DamagedEntries>> {
        let segments = self.all_segments();
        // From the segment before the one holding `from`, so a bad first frame of that one
        // still has the entry before it.
        let start = match self.segment_holding_entry(from)? {
            Some(holding) => segments
                .iter()
                .position(|s| s.base_offset() == holding.base_offset())
                .map_or(0, |i| i.saturating_sub(1)),
            None => 0,
        };
        let mut last_intact = None;
        for segment in &segments[start..] {
            let mut position = 0;
            let cuts = segment.entry_cuts();
            loop {
                let at = LogPosition {
                    segment_base: segment.base_offset(),
                    position,
                };
                match segment.scan_at(position)? {
                    ScanStep::Frame { batch, frame_len } => {
                        if let Some(entry) = EntryLocation::of(&batch.header, at, frame_len) {
                            segment.note_entry(entry.index, position, cuts);
                            last_intact = Some(entry);
                        }
                        position += frame_len;
                    }
                    ScanStep::End | ScanStep::Zeros => break,
                    ScanStep::Skipped { .. } | ScanStep::Invalid(_) => {
                        return Ok(Some(DamagedEntries { at, last_intact }));
                    }
                }
            }
        }
        Ok(None)
    }

    /// The newest segment whose first entry is at or before `index`.
    fn segment_holding_entry(&self, index: u64) -> Result<Option<std::sync::Arc<Segment>>> {
        for segment in self.all_segments().into_iter().rev() {
            match segment.first_raft_index()? {
                Some(first) if first <= index => return Ok(Some(segment)),
                _ => {}
            }
        }
        Ok(None)
    }

    /// The index of the oldest entry the files hold, if any. Blocking file I/O (once per
    /// segment: the answer is cached).
    pub(crate) fn first_entry_index(&self) -> Result<Option<u64>> {
        for segment in self.all_segments() {
            if let Some(first) = segment.first_raft_index()? {
                return Ok(Some(first));
            }
        }
        Ok(None)
    }

    /// The entries from `from` (or the oldest entry, if later) up to `to` (exclusive), at
    /// most `max_bytes` of bodies (always at least one entry when one is in range), in order,
    /// with their headers. Fewer if the log ends first. Blocking file I/O.
    pub(crate) fn read_entries(
        &self,
        from: u64,
        to: u64,
        max_bytes: usize,
    ) -> Result<Vec<(BatchHeader, EntryBody)>> {
        let mut out = Vec::new();
        let from = match self.first_entry_index()? {
            Some(first) => from.max(first),
            None => return Ok(out),
        };
        let Some(first) = self.locate_entry(from)? else {
            return Ok(out);
        };
        let Some(mut segment) = self.segment(first.at.segment_base) else {
            return Ok(out);
        };
        fail::fail_point!("raft_view::read_entries::located");
        let mut position = first.at.position;
        let mut bytes = 0;
        let mut next = from;
        while next < to && (out.is_empty() || bytes < max_bytes) {
            let Some(frame) = segment.read_raw(position)? else {
                match self.segment_after(segment.base_offset()) {
                    Some(later) => {
                        segment = later;
                        position = 0;
                        continue;
                    }
                    None => break,
                }
            };
            let frame_len = frame.len() as u64;
            let (header, body) =
                split_entry(frame).map_err(|e| segment.corrupt(position, e.to_string()))?;
            let index = header.raft_index.unwrap_or(0);
            if index < next {
                return Err(segment.corrupt(position, format!("expected Raft entry {next}")));
            }
            if index >= to {
                break;
            }
            bytes += body.len();
            out.push((header, body));
            position += frame_len;
            next = index + 1;
        }
        Ok(out)
    }

    /// Makes every entry up to `index` (which Raft applied) visible to readers: offsets below
    /// its next offset, frames before its end. Whether anything new became visible. An entry
    /// already visible, or purged, changes nothing. Blocking file I/O for an entry older than
    /// the in-memory tail (only at open).
    pub(crate) fn publish_applied(&self, index: u64) -> Result<bool> {
        if let Some(moved) = self.publish_applied_from_tail(index) {
            return Ok(moved);
        }
        let entry = self.locate_entry(index)?;
        Ok(self.publish_entry(index, entry))
    }

    /// [`LogView::publish_applied`] when the in-memory tail holds `index` (every commit in
    /// steady state): no file I/O. `None` when it does not.
    pub(crate) fn publish_applied_from_tail(&self, index: u64) -> Option<bool> {
        let entry = self.raft().get(index)?;
        Some(self.publish_entry(index, Some(entry)))
    }

    fn publish_entry(&self, index: u64, entry: Option<EntryLocation>) -> bool {
        self.raft().forget_below_applied(index);
        match entry {
            Some(entry) if entry.end() > self.end_position() => {
                self.publish_end(entry.next_offset, entry.end())
            }
            _ => false,
        }
    }
}

/// Scans `segment` for entry `index`, from the nearest entry a scan found before it (the
/// segment's start the first time), noting the entries it passes.
fn scan_for_entry(segment: &Segment, index: u64) -> Result<Option<EntryLocation>> {
    let (mut position, cuts) = segment.entry_scan_start(index);
    loop {
        let (batch, frame_len) = match segment.scan_at(position)? {
            ScanStep::Frame { batch, frame_len } => (batch, frame_len),
            ScanStep::End | ScanStep::Zeros => return Ok(None),
            ScanStep::Skipped { .. } | ScanStep::Invalid(_) => {
                return Err(segment.corrupt(position, "a bad frame before a Raft entry"));
            }
        };
        if let Some(found) = batch.header.raft_index {
            segment.note_entry(found, position, cuts);
        }
        match batch.header.raft_index {
            Some(found) if found == index => {
                let at = LogPosition {
                    segment_base: segment.base_offset(),
                    position,
                };
                return Ok(EntryLocation::of(&batch.header, at, frame_len));
            }
            Some(found) if found > index => return Ok(None),
            _ => position += frame_len,
        }
    }
}
