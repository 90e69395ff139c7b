//! The writer's side of a replicated partition: the log is the partition's Raft log, one
//! frame per entry, and Raft decides what readers see.
//!
//! - `append_entry` writes an entry after the last, its messages taking the next offsets (the
//!   same on every replica, as their logs are equal up to it), and indexes them at once.
//!   Readers see it only once Raft applied it ([`LogView::publish_applied`]), which may come
//!   before this replica's fsync of it; never at the writer's commit.
//! - `truncate_entries` cuts a conflicting tail that Raft never committed: the frame of the
//!   first doomed entry and everything after it, later segments included; the next message
//!   offset goes back to that entry's. The cut is fsynced before it returns.
//! - `purge_entries` deletes whole sealed segments whose entries are all at or below an
//!   index Raft no longer needs; `reset_entries` deletes them all, when a snapshot from the
//!   leader replaces the log.

use super::PartitionLog;
use crate::error::{BrokerError, Result};
use crate::storage::codec::BatchKind;
use crate::storage::codec::raft::EntryBody;
use crate::storage::index::BatchLocation;
use crate::storage::raft_tail::EntryLocation;
use crate::storage::raft_view::DamagedEntries;
use std::sync::Arc;

use crate::storage::segment::{Segment, sync_dir};
use crate::storage::view::LogPosition;

impl PartitionLog {
    /// Writes entry `index` of term `term` after the last entry (any later index: see below);
    /// readers see it once it is published as applied.
    pub(crate) fn append_entry(
        &mut self,
        term: u64,
        index: u64,
        body: &EntryBody,
    ) -> Result<EntryLocation> {
        self.check_usable()?;
        // Raft never leaves a hole, but openraft's own storage suite appends one (an entry its
        // state machine applied without the log holding it): indexes only need to grow.
        if let Some(last) = self.view.last_entry()
            && index <= last.index
        {
            return Err(self.out_of_order(format!(
                "Raft entry {index} appended after entry {}",
                last.index
            )));
        }
        let (header, frame) = body.frame(term, index, self.next_offset)?;
        self.roll_if_full()?;
        let position = self.active.append(&frame)?;
        let frame_len = frame.len() as u64;
        // Indexed at once, not at the group's commit after its fsync: Raft may apply the
        // entry (its followers hold it) while this replica's fsync is still under way, and a
        // reader of a visible offset must find it (`tests/failpoints/raft_written_reads.rs`).
        // Before the entry's location below, which is what replication reads it by.
        if header.kind == BatchKind::Messages {
            self.view.note_batches(&[BatchLocation {
                base_offset: header.base_offset,
                record_count: header.record_count,
                segment_base: self.active.base_offset(),
                position,
                frame_len: u32::try_from(frame_len).unwrap_or(u32::MAX),
                max_ts: header.max_ts,
            }]);
        }
        self.next_offset = header.next_offset();
        self.unsynced = true;
        let entry = EntryLocation {
            index,
            term,
            kind: header.kind,
            base_offset: header.base_offset,
            next_offset: header.next_offset(),
            at: LogPosition {
                segment_base: self.active.base_offset(),
                position,
            },
            frame_len,
        };
        self.view.raft().push(entry);
        Ok(entry)
    }

    /// Deletes entry `from` and every later one; nothing if the log ends before `from`.
    /// Refuses to cut anything readers can see: Raft only truncates what it never committed.
    pub(crate) fn truncate_entries(&mut self, from: u64) -> Result<()> {
        self.check_usable()?;
        let Some(doomed) = self.view.locate_entry(from)? else {
            return Ok(());
        };
        self.cut_entries_at(doomed.at, doomed.base_offset, from)
    }

    /// Deletes the bad frame `damaged` found and everything after it, as a truncation does,
    /// so the replica can take those entries from the leader again. Refuses when readers can
    /// see the bad frame (it lies at or below what Raft applied) or when the frame before it is
    /// not an entry (a message offset to continue from cannot be told).
    pub(crate) fn cut_damaged_entries(&mut self, damaged: DamagedEntries) -> Result<()> {
        self.check_usable()?;
        let next_offset = match damaged.last_intact {
            Some(entry) if entry.at.segment_base == damaged.at.segment_base => entry.next_offset,
            _ if damaged.at.position == 0 => damaged.at.segment_base,
            _ => {
                return Err(self.out_of_order(format!(
                    "no entry before the bad frame at {:?} to continue from",
                    damaged.at
                )));
            }
        };
        self.cut_entries_at(damaged.at, next_offset, damaged.first_lost())?;
        // The in-memory tail may have held only entries after the bad frame: the last
        // intact one must be the log's last again, or Raft would take the log for empty.
        if let Some(last) = damaged.last_intact {
            let mut tail = self.view.raft();
            if tail.last().is_none_or(|l| l.index < last.index) {
                tail.push(last);
            }
        }
        Ok(())
    }

    /// Deletes the frames from `at` on (entry `from` and later ones), later segments
    /// included; the next message offset becomes `next_offset`. Durable before it returns.
    fn cut_entries_at(&mut self, at: LogPosition, next_offset: u64, from: u64) -> Result<()> {
        if at < self.view.end_position() {
            return Err(self.out_of_order(format!(
                "Raft entry {from} is visible to readers and cannot be truncated"
            )));
        }
        self.sync()?;
        let later = self.view.split_segments_after(at.segment_base);
        for segment in &later {
            segment.remove_file()?;
        }
        if !later.is_empty() {
            sync_dir(self.view.dir())?;
        }
        let holding = self.view.segment(at.segment_base).ok_or_else(|| {
            self.out_of_order(format!("the segment of Raft entry {from} is gone"))
        })?;
        holding.truncate(at.position)?;
        if at.position == 0 {
            holding.forget_first_raft_index();
        }
        self.active = holding;
        self.next_offset = next_offset;
        self.appended.retain(|b| b.base_offset < next_offset);
        self.view.index().remove_from(next_offset)?;
        self.view.forget_chunks_from(next_offset);
        self.view.raft().cut_from(from);
        self.synced = self.end_position();
        self.unsynced = false;
        Ok(())
    }

    /// Deletes the sealed segments whose entries all lie at or below `upto` (a segment whose
    /// successor starts at or below `upto + 1`); the active segment always stays. Returns
    /// how many went.
    pub(crate) fn purge_entries(&mut self, upto: u64) -> Result<usize> {
        self.check_usable()?;
        let _serial = crate::sync::lock(&self.view.retention);
        let mut purged = 0;
        loop {
            let segments = self.view.all_segments();
            let (Some(oldest), Some(next)) = (segments.first(), segments.get(1)) else {
                break;
            };
            let next_first = next.first_raft_index()?;
            if next_first.is_none_or(|first| first > upto.saturating_add(1)) {
                break;
            }
            self.view.delete_segment(oldest, next.base_offset())?;
            purged += 1;
        }
        Ok(purged)
    }

    /// Deletes every entry and segment and starts an empty log whose next message offset is
    /// `next_offset`, durably. A replica does this when a snapshot replaces its log.
    pub(crate) fn reset_entries(&mut self, next_offset: u64) -> Result<()> {
        self.check_usable()?;
        self.sync()?;
        let _serial = crate::sync::lock(&self.view.retention);
        for segment in self.view.all_segments() {
            segment.remove_file()?;
        }
        sync_dir(self.view.dir())?;
        self.view.index().clear()?;
        let segment = Arc::new(Segment::create(self.view.dir(), next_offset)?);
        self.view.reset(Arc::clone(&segment), next_offset);
        self.active = segment;
        self.next_offset = next_offset;
        self.appended.clear();
        self.synced = self.end_position();
        self.committed = (next_offset, self.end_position());
        self.unsynced = false;
        Ok(())
    }

    fn out_of_order(&self, reason: String) -> BrokerError {
        BrokerError::Corrupt {
            path: self.view.dir().to_path_buf(),
            position: 0,
            reason,
        }
    }
}
