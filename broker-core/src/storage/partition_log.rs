//! The single-writer side of a partition's log: synchronous, owned by one writer thread.
//!
//! A group commit is `append` (messages) or `append_control` (state changes) for each request,
//! then `sync` as the fsync policy asks, then `commit`, which notes the group's batches in the
//! sparse index (in memory), and `publish`, which makes it visible: the new end offset and end
//! position. Nothing a reader can see is ever unindexed or, under [`crate::FsyncPolicy::Always`] and
//! [`crate::FsyncPolicy::IntervalMs`], unsynced (the writer publishes an interval's writes after their
//! fsync). Between groups the writer calls `persist_index`, which moves fsynced index chunks
//! into sled at most every [`INDEX_PERSIST_MS`]: no producer waits for a sled write.
//!
//! After a failed fsync the page cache can no longer be trusted to hold what was written, so
//! the log refuses every later append until it is reopened (and recovery re-reads the files).
//!
//! Seams for replication, not built yet: appending as a follower takes an already-framed batch
//! from the leader, checks its CRC and that its base offset is `next_offset`, and writes it as
//! is (keeping the leader's epoch); truncating to an offset (a follower dropping a divergent
//! tail) cuts the segment holding it at that batch's position, deletes later segments and
//! calls `LogIndex::remove_from`, as recovery does for a torn tail.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;

use super::codec::{self, BatchHeader};
use super::index::{BatchLocation, LogIndex};
use super::recovery;
use super::segment::Segment;
use super::view::{LogPosition, LogView};
use crate::config::{FsyncPolicy, LogConfig};
use crate::error::{BrokerError, Result};
use crate::message::Record;

mod raft;

/// How often the writer moves fsynced index chunks into sled: seconds of index in memory
/// are a few hundred entries per busy partition, and a crash only makes recovery scan them.
pub(crate) const INDEX_PERSIST_MS: u64 = 1_000;
/// Index chunks in memory past which the writer persists at once: 16 MiB of segment at
/// 4 KiB a chunk, bounding the memory (about 48 bytes a chunk) of a partition written fast.
pub(crate) const MAX_RECENT_CHUNKS: usize = 4_096;
/// Zeros the writer keeps ahead of the active segment's end under `fsync always` (see
/// `segment`): one write and fdatasync of 1 MiB took 1.1 ms here, once per ~27 groups of
/// produce-1, where every one of those groups saves the inode write of a growing file.
pub(crate) const ZERO_AHEAD_BYTES: u64 = 1024 * 1024;
/// The writer tops the zeros up once fewer than this remain ahead of the end.
pub(crate) const ZERO_AHEAD_LOW_WATER: u64 = 256 * 1024;
/// A group of more bytes than this does not zero ahead: zeros cost about 1 µs a KiB to write
/// and flush, the inode write they save 80–300 µs per fdatasync, so big groups (batch
/// produces) gain nothing from them and would write their bytes twice.
pub(crate) const ZERO_AHEAD_MAX_GROUP_BYTES: usize = 64 * 1024;

/// The writer's handle on a partition's log.
pub(crate) struct PartitionLog {
    view: Arc<LogView>,
    active: Arc<Segment>,
    /// Message batches appended since the last commit, for the sparse index (a single node's
    /// log; a replicated one indexes each entry as it writes it).
    appended: Vec<BatchLocation>,
    next_offset: u64,
    /// Everything before this position is fsynced.
    synced: LogPosition,
    /// When the index was last persisted.
    persisted_at: std::time::Instant,
    /// End offset and position of what was committed: what `publish` makes visible.
    committed: (u64, LogPosition),
    config: LogConfig,
    unsynced: bool,
    failure: Option<String>,
    /// The log is a Raft log: readers see what Raft applied, not what the writer committed.
    replicated: bool,
}

impl PartitionLog {
    /// Opens (creating if needed) the log in `dir`, recovering its tail.
    pub(crate) fn open(dir: PathBuf, tree: sled::Tree, config: LogConfig) -> Result<PartitionLog> {
        let index = LogIndex::new(tree, dir.clone());
        let recovered = recovery::recover(&dir, &index)?;
        let active = recovered
            .segments
            .values()
            .next_back()
            .cloned()
            .ok_or_else(|| BrokerError::Corrupt {
                path: dir.clone(),
                position: 0,
                reason: "recovery left no segment".into(),
            })?;
        // What recovery read may only be in the page cache: fsync it once, so the index of it
        // can go to sled.
        active.sync()?;
        let end_offset = recovered.end_offset;
        let end_position = LogPosition {
            segment_base: active.base_offset(),
            position: active.size(),
        };
        let view = LogView::new(
            dir,
            index,
            recovered.segments,
            end_offset,
            end_position,
            recovered.recent,
            recovered.raft,
        );
        Ok(PartitionLog {
            view: Arc::new(view),
            active,
            appended: Vec::new(),
            next_offset: end_offset,
            synced: end_position,
            persisted_at: std::time::Instant::now(),
            committed: (end_offset, end_position),
            config,
            unsynced: false,
            failure: None,
            replicated: false,
        })
    }

    /// Opens the log of a replicated partition: as [`PartitionLog::open`], but readers see
    /// only the entries up to `applied` (the last index Raft applied before, as its state
    /// machine recorded), and later ones once Raft applies them again.
    pub(crate) fn open_replicated(
        dir: PathBuf,
        tree: sled::Tree,
        config: LogConfig,
        applied: Option<u64>,
    ) -> Result<PartitionLog> {
        let mut log = PartitionLog::open(dir, tree, config)?;
        log.replicated = true;
        log.view.hide_from_start();
        if let Some(applied) = applied {
            log.view.publish_applied(applied)?;
        }
        Ok(log)
    }

    /// When the log fsyncs.
    pub(crate) fn fsync_policy(&self) -> FsyncPolicy {
        self.config.fsync
    }

    /// The shared read side.
    pub(crate) fn view(&self) -> &Arc<LogView> {
        &self.view
    }

    /// Whether some appended bytes have not been fsynced.
    pub(crate) fn is_unsynced(&self) -> bool {
        self.unsynced
    }

    /// Writes one batch after the last; readers see it only after [`PartitionLog::commit`].
    pub(crate) fn append(&mut self, records: &[Record]) -> Result<BatchHeader> {
        self.check_usable()?;
        let (header, frame) =
            codec::encode_batch(self.next_offset, self.config.leader_epoch, records)?;
        self.roll_if_full()?;
        let position = self.active.append(&frame)?;
        self.appended.push(BatchLocation {
            base_offset: header.base_offset,
            record_count: header.record_count,
            segment_base: self.active.base_offset(),
            position,
            frame_len: u32::try_from(frame.len()).unwrap_or(u32::MAX),
            max_ts: header.max_ts,
        });
        self.next_offset = header.next_offset();
        self.unsynced = true;
        Ok(header)
    }

    /// Writes one control batch (state changes) before the next message offset; readers of
    /// messages never see it, replays find it after [`PartitionLog::commit`].
    pub(crate) fn append_control(&mut self, entries: &[Bytes], ts_ms: u64) -> Result<BatchHeader> {
        self.check_usable()?;
        let (header, frame) =
            codec::encode_control(self.next_offset, self.config.leader_epoch, ts_ms, entries)?;
        self.roll_if_full()?;
        self.active.append(&frame)?;
        self.unsynced = true;
        Ok(header)
    }

    /// Where the next frame goes.
    fn end_position(&self) -> LogPosition {
        LogPosition {
            segment_base: self.active.base_offset(),
            position: self.active.size(),
        }
    }

    /// Starts a new segment once the active one is full. A sealed segment is always fsynced
    /// (under `never` too, once per segment), so its index chunks may go to sled.
    ///
    /// Segments are named and ordered by their first message offset, so one holding control
    /// batches only (no message since it began: a topic that only schedules delayed messages,
    /// a partition that only gets acks) stays active past `segment_bytes` until the next
    /// message: its successor would have the same base offset.
    fn roll_if_full(&mut self) -> Result<()> {
        let size = self.active.size();
        let no_message_yet = self.active.base_offset() == self.next_offset;
        if size == 0 || size < self.config.segment_bytes || no_message_yet {
            return Ok(());
        }
        if let Err(e) = self.active.trim() {
            self.failure = Some(format!("sealing the segment failed: {e}"));
            return Err(e);
        }
        self.sync()?;
        let segment = Arc::new(Segment::create(self.view.dir(), self.next_offset)?);
        self.view.add_segment(Arc::clone(&segment));
        self.active = segment;
        self.synced = self.end_position();
        Ok(())
    }

    /// Fsyncs the active segment if it has unsynced bytes. A failure poisons the log.
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.check_usable()?;
        if !self.unsynced {
            return Ok(());
        }
        if let Err(e) = self.active.sync() {
            self.failure = Some(format!("fsync failed: {e}"));
            return Err(e);
        }
        self.unsynced = false;
        self.synced = self.end_position();
        Ok(())
    }

    /// Under `fsync always`, after a group of `group_bytes`: tops up the zeros ahead of the
    /// active segment's end (up to [`ZERO_AHEAD_BYTES`], never past `segment_bytes`) and
    /// fsyncs them, so the next groups' fdatasyncs flush data only. A failed write of zeros
    /// changes nothing else; a failed fsync poisons the log as any failed fsync does.
    pub(crate) fn zero_ahead(&mut self, group_bytes: usize) -> Result<()> {
        let wanted = self.config.fsync == FsyncPolicy::Always
            && group_bytes <= ZERO_AHEAD_MAX_GROUP_BYTES
            && self.failure.is_none()
            && self.active.zeros_ahead() < ZERO_AHEAD_LOW_WATER;
        if !wanted {
            return Ok(());
        }
        let end = (self.active.size() + ZERO_AHEAD_BYTES).min(self.config.segment_bytes);
        if !self.active.zero_ahead(end)? {
            return Ok(());
        }
        self.active.sync().inspect_err(|e| {
            self.failure = Some(format!("fsync failed: {e}"));
        })
    }

    /// Cuts the zeros ahead of the active segment's end, at a clean shutdown.
    pub(crate) fn trim_active(&mut self) -> Result<()> {
        self.active.trim()
    }

    /// Moves fsynced index chunks into sled if `now`, if [`INDEX_PERSIST_MS`] passed since the
    /// last time, or if [`MAX_RECENT_CHUNKS`] wait in memory. A sled failure poisons the log,
    /// as a failed fsync does: the index could no longer be trusted to match the files.
    pub(crate) fn persist_index(&mut self, now: bool) -> Result<()> {
        self.check_usable()?;
        let due = now || self.persisted_at.elapsed().as_millis() >= u128::from(INDEX_PERSIST_MS);
        if !due && self.view.recent_chunks() < MAX_RECENT_CHUNKS {
            return Ok(());
        }
        self.persisted_at = std::time::Instant::now();
        if let Err(e) = self.view.persist_index(self.synced) {
            self.failure = Some(format!("indexing failed: {e}"));
            return Err(e);
        }
        Ok(())
    }

    /// Indexes every batch appended since the last commit, ready for [`PartitionLog::publish`];
    /// `batches` (the appended message batches, with their records) go to the tail cache first,
    /// so that the cache holds every offset it may serve as soon as readers can ask for it.
    /// Failpoint `partition_log::before_index`: the group is written (and fsynced as the
    /// policy asks) but neither indexed nor published; a `panic` there is a crash at that point.
    pub(crate) fn commit(&mut self, batches: Vec<(BatchHeader, Vec<Record>)>) -> Result<()> {
        self.check_usable()?;
        fail::fail_point!("partition_log::before_index");
        self.view.note_batches(&self.appended);
        self.appended.clear();
        for (header, records) in batches {
            self.view
                .remember(header.base_offset, header.leader_epoch, records);
        }
        self.committed = (self.next_offset, self.end_position());
        Ok(())
    }

    /// Makes everything committed visible to readers; whether anything new became visible.
    pub(crate) fn publish(&mut self) -> bool {
        if self.replicated {
            return false;
        }
        let (end_offset, end_position) = self.committed;
        self.view.publish_end(end_offset, end_position)
    }

    fn check_usable(&self) -> Result<()> {
        match self.failure {
            Some(_) => Err(self.failure_error()),
            None => Ok(()),
        }
    }

    /// The error every append gets once the log is poisoned.
    pub(crate) fn failure_error(&self) -> BrokerError {
        let what = self.failure.as_deref().unwrap_or("unknown failure");
        let message = format!("{what}; the partition refuses writes until it is reopened");
        BrokerError::io(self.active.path(), io::Error::other(message))
    }
}
