//! The read side of a partition's log, shared by the writer, readers and retention.
//!
//! Readers see only what the writer has published: the writer notes a group's batches in the
//! sparse index, then publishes the new end offset, so every offset below
//! [`LogView::end_offset`] lies in a chunk the index knows and every frame a reader decodes has
//! passed its CRC (the reads themselves are in `reads`). Invariant:
//! `start_offset <= end_offset`, both only grow.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::codec::Batch;
use super::index::{BatchLocation, LogIndex};
use super::raft_tail::RaftTail;
use super::recent::RecentIndex;
use super::segment::Segment;
use super::tail::TailCache;
use crate::error::Result;
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

impl LogPosition {
    /// Past every frame of every log.
    pub const MAX: LogPosition = LogPosition {
        segment_base: u64::MAX,
        position: u64::MAX,
    };
}

/// Largest decoded batch a partition keeps from its last read (see [`LastRead`]): a batch of
/// a hundred 1 KiB messages fits; a thousand partitions would hold 250 MiB at most, as the
/// tail cache, which is why it is not larger.
pub(crate) const LAST_READ_BYTES: usize = 256 * 1024;

/// The batch the last file read of a partition ended in, decoded, and where the frame after
/// it starts: consumers reading a deep backlog a few messages at a time come back to it.
#[derive(Debug)]
pub(crate) struct LastRead {
    /// The decoded batch.
    pub batch: Batch,
    /// The position right after its frame.
    pub after: LogPosition,
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
    /// The sparse index's chunks not yet in sled.
    recent: Mutex<RecentIndex>,
    /// The batch the last file read ended in.
    last_read: Mutex<Option<Arc<LastRead>>>,
    /// A reader drained the last-read batch: the frame after it is worth reading ahead.
    prefetch_due: AtomicBool,
    /// Where the newest Raft entries lie (replicated partitions only).
    raft: Mutex<RaftTail>,
}

impl LogView {
    /// The view of a freshly recovered log; `segments` is not empty.
    pub(crate) fn new(
        dir: PathBuf,
        index: LogIndex,
        segments: BTreeMap<u64, Arc<Segment>>,
        end_offset: u64,
        end_position: LogPosition,
        recent: RecentIndex,
        raft: RaftTail,
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
            recent: Mutex::new(recent),
            last_read: Mutex::new(None),
            prefetch_due: AtomicBool::new(false),
            raft: Mutex::new(raft),
        }
    }

    /// The batch the last file read ended in, if it holds committed `offset`.
    pub(super) fn last_read_holding(&self, offset: u64) -> Option<Arc<LastRead>> {
        let last = crate::sync::lock(&self.last_read);
        last.as_ref()
            .filter(|l| {
                let header = &l.batch.header;
                header.base_offset <= offset && offset < header.next_offset()
            })
            .cloned()
    }

    /// Notes that a reader drained the last-read batch.
    pub(super) fn want_prefetch(&self) {
        self.prefetch_due.store(true, Ordering::Release);
    }

    /// Whether a prefetch is due (taking it: one prefetch per drained batch).
    pub(crate) fn prefetch_due(&self) -> bool {
        self.prefetch_due.swap(false, Ordering::AcqRel)
    }

    /// The batch the last file read ended in, whatever it holds.
    pub(super) fn last_read(&self) -> Option<Arc<LastRead>> {
        crate::sync::lock(&self.last_read).clone()
    }

    /// Keeps the batch a file read ended in, if it is at most [`LAST_READ_BYTES`].
    pub(super) fn remember_read(&self, batch: Batch, after: LogPosition) {
        let bytes: usize = batch.records.iter().map(Record::approx_size).sum();
        if bytes <= LAST_READ_BYTES {
            let mut last = crate::sync::lock(&self.last_read);
            *last = Some(Arc::new(LastRead { batch, after }));
        }
    }

    /// The locations of the newest Raft entries.
    pub(super) fn raft(&self) -> std::sync::MutexGuard<'_, RaftTail> {
        crate::sync::lock(&self.raft)
    }

    /// Forgets the in-memory index chunks from `offset` on (a conflicting Raft tail was cut).
    pub(super) fn forget_chunks_from(&self, offset: u64) {
        self.recent().forget_from(offset);
    }

    /// Forgets the segments after the one with base `base` (a conflicting Raft tail was cut
    /// inside it); returns them.
    pub(super) fn split_segments_after(&self, base: u64) -> Vec<Arc<Segment>> {
        let mut segments = self.segments_mut();
        let later = segments.split_off(&base.saturating_add(1));
        later.into_values().collect()
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, RecentIndex> {
        crate::sync::lock(&self.recent)
    }

    /// Notes committed message batches in the sparse index (in memory); only the writer calls
    /// this, before it publishes them.
    pub(crate) fn note_batches(&self, batches: &[BatchLocation]) {
        let mut recent = self.recent();
        batches.iter().for_each(|b| recent.note(b));
    }

    /// Moves the closed chunks whose bytes are all fsynced (before `synced`) from memory into
    /// sled; returns how many chunks stay in memory. Only the writer calls this. The chunks go
    /// to sled before memory forgets them, so a concurrent lookup always finds one of the two.
    pub(crate) fn persist_index(&self, synced: LogPosition) -> Result<usize> {
        let chunks = self.recent().persistable(synced);
        if let Some(last) = chunks.last() {
            let mut staged = self.index.stage()?;
            chunks.iter().for_each(|c| staged.add(c));
            self.index.apply(&mut staged)?;
            self.recent().forget_below(last.base_offset + 1);
        }
        Ok(self.recent().len())
    }

    /// Index chunks waiting in memory.
    pub(crate) fn recent_chunks(&self) -> usize {
        self.recent().len()
    }

    /// The sparse index chunk holding `offset`, or the last one before it: from memory if the
    /// oldest chunk there is not after `offset`, else from sled.
    pub(crate) fn chunk_at_or_before(&self, offset: u64) -> Result<Option<BatchLocation>> {
        if let Some(chunk) = self.recent().floor(offset) {
            return Ok(Some(chunk));
        }
        self.index.batch_at_or_before(offset)
    }

    /// Base offset of the first index chunk after the one holding `offset`: where a reader
    /// that met a damaged frame at `offset` can resume. The end offset if there is none.
    pub(crate) fn next_chunk_after(&self, offset: u64) -> Result<u64> {
        let in_memory = self.recent().first_after(offset);
        let stored = self
            .index
            .batches_from(offset.saturating_add(1))
            .next()
            .transpose()?
            .map(|c| c.base_offset);
        let end = self.end_offset();
        Ok(in_memory
            .into_iter()
            .chain(stored)
            .min()
            .unwrap_or(end)
            .min(end))
    }

    /// Base offset of the first chunk that may hold a record at or after `ts`: every chunk
    /// before it holds only earlier records. `None` if none reached `ts`.
    pub(crate) fn first_chunk_reaching(&self, ts: u64) -> Result<Option<u64>> {
        match self.index.first_batch_reaching(ts)? {
            Some(base) => Ok(Some(base)),
            None => Ok(self.recent().first_reaching(ts)),
        }
    }

    /// Largest timestamp of the chunks starting in `from..to`, in sled and in memory.
    pub(crate) fn max_ts_between(&self, from: u64, to: u64) -> Result<Option<u64>> {
        let stored = self.index.max_ts_between(from, to)?;
        Ok(stored.max(self.recent().max_ts_between(from, to)))
    }

    /// Forgets the in-memory chunks below `offset` (retention deleted their segments).
    pub(super) fn forget_chunks_below(&self, offset: u64) {
        self.recent().forget_below(offset);
    }

    /// Keeps a batch in the tail cache; only the writer calls this, as it commits the batch
    /// (readers get nothing at or past the end offset from it).
    pub(crate) fn remember(&self, base_offset: u64, leader_epoch: u64, records: Vec<Record>) {
        crate::sync::lock(&self.tail).push(base_offset, leader_epoch, records);
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
        let tail = crate::sync::lock(&self.tail).read(from, end, max_records, max_bytes);
        tail.or_else(|| self.read_last(from, max_records, max_bytes))
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
        *crate::sync::lock(&self.end_position)
    }

    /// Makes offsets below `end` and frames before `position` visible; only the writer calls
    /// this, after indexing them. Whether anything new became visible.
    pub(crate) fn publish_end(&self, end: u64, position: LogPosition) -> bool {
        let mut visible = crate::sync::lock(&self.end_position);
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

    /// Hides every frame from readers: a replicated log at open, before it publishes what
    /// Raft had applied.
    pub(super) fn hide_from_start(&self) {
        let first = crate::sync::read(&self.segments).keys().next().copied();
        let start = first.unwrap_or_else(|| self.start_offset());
        *crate::sync::lock(&self.end_position) = LogPosition {
            segment_base: start,
            position: 0,
        };
        self.end_offset.store(start, Ordering::Release);
    }

    /// Replaces every segment with `segment`, empty, where the log now starts and ends at
    /// `next_offset` (a replica's log replaced by a snapshot). Only the writer calls this.
    pub(super) fn reset(&self, segment: Arc<Segment>, next_offset: u64) {
        let mut segments = self.segments_mut();
        segments.clear();
        segments.insert(segment.base_offset(), segment);
        drop(segments);
        *crate::sync::lock(&self.tail) = TailCache::default();
        *crate::sync::lock(&self.last_read) = None;
        *self.recent() = RecentIndex::default();
        *self.raft() = RaftTail::default();
        *crate::sync::lock(&self.end_position) = LogPosition {
            segment_base: next_offset,
            position: 0,
        };
        self.start_offset.store(next_offset, Ordering::Release);
        self.end_offset.store(next_offset, Ordering::Release);
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
        let segments = crate::sync::read(&self.segments);
        let mut bases = segments.values();
        let oldest = bases.next()?;
        let next_base = bases.next()?.base_offset();
        (next_base <= self.end_offset()).then(|| (Arc::clone(oldest), next_base))
    }

    /// Bytes in all segment files.
    pub(crate) fn size_bytes(&self) -> u64 {
        let segments = crate::sync::read(&self.segments);
        segments.values().map(|s| s.size()).sum()
    }

    /// The segment with that base offset, if it still exists.
    pub(super) fn segment(&self, base_offset: u64) -> Option<Arc<Segment>> {
        let segments = crate::sync::read(&self.segments);
        segments.get(&base_offset).cloned()
    }

    /// The first segment after the one with base offset `base`, if any.
    pub(super) fn segment_after(&self, base: u64) -> Option<Arc<Segment>> {
        let segments = crate::sync::read(&self.segments);
        segments
            .range(base.saturating_add(1)..)
            .next()
            .map(|(_, s)| Arc::clone(s))
    }

    /// Every segment, oldest first.
    pub(super) fn all_segments(&self) -> Vec<Arc<Segment>> {
        let segments = crate::sync::read(&self.segments);
        segments.values().cloned().collect()
    }

    fn segments_mut(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<u64, Arc<Segment>>> {
        crate::sync::write(&self.segments)
    }
}
