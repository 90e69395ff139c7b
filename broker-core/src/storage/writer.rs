//! The writer thread of a partition and [`PartitionHandle`], the clonable handle on it.
//!
//! Producers hand batches over a bounded channel ([`WRITER_QUEUE_DEPTH`]) and, so that the
//! depth of big batches cannot pin gigabytes, within a budget of queued bytes
//! ([`MAX_WRITER_QUEUED_BYTES`]): a batch that does not fit is refused at once with
//! [`BrokerError::Overloaded`] (a batch alone in an empty queue always fits). The writer, a
//! dedicated thread because file I/O blocks, takes whatever is queued as one group: each
//! request (a message batch, or a control batch of state changes such as acks) becomes one
//! frame, then one fsync for all of them as the policy asks, then the index is committed, the
//! new end offset and position are published, `on_commit` wakes waiting readers, and each
//! producer gets its answer. Under `IntervalMs(n)` the thread also wakes on its own to fsync
//! at most `n` ms after the first unsynced write; writes become visible to readers only with
//! that fsync (their producers are answered once written). Under `Never` they are visible at
//! once.
//!
//! The thread waits with a tiny current-thread tokio runtime (timers only) so one wait covers
//! a request, the fsync deadline and shutdown. Shutdown closes the channel, so producers get
//! [`BrokerError::ShuttingDown`], lets the writer finish what is queued, fsyncs and joins.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc::error::{SendTimeoutError, TrySendError};
use tokio::sync::{Notify, mpsc, oneshot};

use bytes::Bytes;

use super::codec::raft::EntryBody;
use super::frames::Frame;
use super::partition_log::PartitionLog;
use super::proposer::{ProposalSlot, Proposer};
use super::queued_bytes::QueuedBytes;
use super::raft_handle::RaftOp;
use super::reads::{MessageFrames, Replayed};
use super::view::{LogPosition, LogView};
use super::writer_thread::PartitionWriter;
use crate::config::LogConfig;
use crate::error::{BrokerError, Result};
use crate::limits::{MAX_WRITER_QUEUED_BYTES, WRITER_ENQUEUE_TIMEOUT_MS, WRITER_QUEUE_DEPTH};
use crate::memory::MemoryCharge;
use crate::message::{Record, StoredRecord};

/// The `Retry-After` a producer gets when the writer queue stays full: a full queue of
/// [`WRITER_QUEUE_DEPTH`] batches drains within about a second at disk speed, and a shorter
/// hint would just bring the same burst back.
pub const QUEUE_FULL_RETRY_AFTER_MS: u64 = 1_000;

/// What an append achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendResult {
    /// Offset of the batch's first record; the others follow in order.
    pub base_offset: u64,
    /// Records appended.
    pub count: u32,
    /// The batch was fsynced before this answer (in a replicated partition: on each replica
    /// of the majority that committed it, per their fsync policy).
    pub fsynced: bool,
    /// A majority of the partition's replicas committed the batch (Raft); false on a single
    /// node.
    pub replicated: bool,
}

/// What one request appends: a message batch or a control batch of state changes.
pub(super) enum Payload {
    /// A message batch.
    Messages(Vec<Record>),
    /// A control batch.
    Control(Vec<Bytes>),
    /// An operation on a replicated partition's Raft log.
    Raft(RaftOp),
}

impl Payload {
    pub(super) fn bytes(&self) -> usize {
        match self {
            Payload::Messages(records) => batch_bytes(records),
            Payload::Control(entries) => entries.iter().map(Bytes::len).sum(),
            Payload::Raft(op) => op.bytes(),
        }
    }
}

/// One producer's batch, with where to send the answer (none for fire-and-forget), and its
/// share of the queued-bytes budget, given back when the request is dropped (answered).
pub(super) struct AppendRequest {
    pub(super) payload: Payload,
    pub(super) reply: Option<oneshot::Sender<Result<AppendResult>>>,
    /// Durable with the writer's next fsync rather than one of its own: nobody waits for
    /// it (a delivery's trace event). A group made only of these is fsynced within
    /// [`crate::limits::LAZY_SYNC_MS`] or by the next group, whichever comes first.
    pub(super) lazy_sync: bool,
    pub(super) _queued: QueuedBytes,
    /// Memory charged for a detached append, returned once it is written.
    pub(super) _held: Option<MemoryCharge>,
}

/// The approximate bytes of a batch in memory.
pub(crate) fn batch_bytes(records: &[Record]) -> usize {
    records.iter().map(Record::approx_size).sum()
}

/// Clonable, `Send + Sync` handle on one partition's log.
#[derive(Clone)]
pub struct PartitionHandle {
    pub(super) inner: Arc<HandleInner>,
}

pub(super) struct HandleInner {
    pub(super) view: Arc<LogView>,
    /// A replicated partition's Raft: its writes go there instead of the writer queue.
    proposer: OnceLock<Arc<dyn Proposer>>,
    sender: RwLock<Option<mpsc::Sender<AppendRequest>>>,
    pub(super) queued_bytes: Arc<AtomicUsize>,
    queued_bytes_limit: usize,
    stop: Arc<Notify>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for PartitionHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionHandle")
            .field("dir", &self.inner.view.dir())
            .field("start_offset", &self.start_offset())
            .field("end_offset", &self.end_offset())
            .finish()
    }
}

impl PartitionHandle {
    /// Opens (creating if needed) the log in `dir`, recovers the tail, starts the writer
    /// thread. Blocking: callers run it in `spawn_blocking` or at startup.
    pub fn open(
        dir: PathBuf,
        index: sled::Tree,
        config: LogConfig,
        on_commit: Arc<Notify>,
    ) -> Result<PartitionHandle> {
        let log = PartitionLog::open(dir.clone(), index, config)?;
        Self::start(dir, log, on_commit)
    }

    /// Starts the writer thread of an opened log.
    pub(super) fn start(
        dir: PathBuf,
        log: PartitionLog,
        on_commit: Arc<Notify>,
    ) -> Result<PartitionHandle> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| BrokerError::io(&dir, e))?;
        let name = dir
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let fsync = log.fsync_policy();
        let view = Arc::clone(log.view());
        let (sender, receiver) = mpsc::channel(WRITER_QUEUE_DEPTH);
        let stop = Arc::new(Notify::new());
        let writer = PartitionWriter::new(log, receiver, Arc::clone(&stop), on_commit, fsync);
        let thread = std::thread::Builder::new()
            .name(format!("wharf-writer-{name}"))
            .spawn(move || writer.run(&runtime))
            .map_err(|e| BrokerError::io(&dir, e))?;
        Ok(PartitionHandle {
            inner: Arc::new(HandleInner {
                view,
                proposer: OnceLock::new(),
                sender: RwLock::new(Some(sender)),
                queued_bytes: Arc::new(AtomicUsize::new(0)),
                queued_bytes_limit: MAX_WRITER_QUEUED_BYTES,
                stop,
                thread: Mutex::new(Some(thread)),
            }),
        })
    }

    /// Appends one batch (all records get consecutive offsets, in order) and waits until it
    /// is committed per the fsync policy. Refused at once with [`BrokerError::Overloaded`]
    /// when the partition's queued-bytes budget is spent; waits at most
    /// [`WRITER_ENQUEUE_TIMEOUT_MS`] for queue room, then [`BrokerError::Overloaded`]. After
    /// shutdown:
    /// [`BrokerError::ShuttingDown`]. Empty `records` is [`BrokerError::InvalidArgument`].
    pub async fn append(&self, records: Vec<Record>) -> Result<AppendResult> {
        self.append_in_term(records, None).await
    }

    /// [`PartitionHandle::append`]; on a replicated partition with `term` given, written only
    /// in that Raft term ([`Proposer::reserve_in_term`]): otherwise refused with
    /// [`BrokerError::NotLeader`], and nothing is written. `term` is ignored on a local log.
    pub async fn append_in_term(
        &self,
        records: Vec<Record>,
        term: Option<u64>,
    ) -> Result<AppendResult> {
        if let Some(proposer) = self.proposer() {
            let slot = match term {
                Some(term) => proposer.reserve_in_term(term)?,
                None => proposer.reserve()?,
            };
            let body = EntryBody::messages(&records)?;
            return proposer.propose(slot, body).await;
        }
        let sender = self.sender(records.is_empty())?;
        let payload = Payload::Messages(records);
        let queued = self.reserve(&payload)?;
        let (reply, answer) = oneshot::channel();
        let request = AppendRequest {
            payload,
            reply: Some(reply),
            lazy_sync: false,
            _queued: queued,
            _held: None,
        };
        let timeout = Duration::from_millis(WRITER_ENQUEUE_TIMEOUT_MS);
        match sender.send_timeout(request, timeout).await {
            Ok(()) => {}
            Err(SendTimeoutError::Timeout(_)) => return Err(overloaded()),
            Err(SendTimeoutError::Closed(_)) => return Err(self.stopped()),
        }
        drop(sender);
        answer.await.unwrap_or_else(|_| Err(self.panicked()))
    }

    /// Fire-and-forget append (ack=none): [`BrokerError::Overloaded`] at once when the queue
    /// is full; a later write failure is only logged.
    pub fn append_detached(&self, records: Vec<Record>) -> Result<()> {
        self.append_detached_holding(records, None, None)
    }

    /// [`PartitionHandle::append_detached`], keeping `held` (the records' memory charge)
    /// until the records are written: a producer that does not wait for its write still
    /// counts in the memory budget while its records wait in the queue. `done`, if given,
    /// gets the write's outcome (and then the failure is not logged here).
    pub fn append_detached_holding(
        &self,
        records: Vec<Record>,
        held: Option<MemoryCharge>,
        done: Option<oneshot::Sender<Result<AppendResult>>>,
    ) -> Result<()> {
        if let Some(proposer) = self.proposer() {
            let slot = proposer.reserve()?;
            let proposal = proposer.propose(slot, EntryBody::messages(&records)?);
            tokio::spawn(async move {
                let outcome = proposal.await;
                drop(held);
                match (done, outcome) {
                    (Some(done), outcome) => {
                        let _gone = done.send(outcome);
                    }
                    (None, Err(e)) => tracing::warn!(error = %e, "a fire-and-forget append failed"),
                    (None, Ok(_)) => {}
                }
            });
            return Ok(());
        }
        self.try_queue(records, done, held)
    }

    /// Queues a control batch (durable state changes: acks, nacks, seeks…) without waiting:
    /// [`BrokerError::Overloaded`] at once when the queue is full. The returned
    /// [`PendingAppend`] resolves once the batch is committed per the fsync policy. A caller
    /// that must change state only if the batch can be queued takes the place first
    /// ([`PartitionHandle::reserve_control`]).
    pub fn queue_control(&self, entries: Vec<Bytes>) -> Result<PendingAppend> {
        if entries.is_empty() {
            return Err(empty_append());
        }
        Ok(self.reserve_control()?.send(entries))
    }

    /// A place in the writer's queue, taken before a change is made so that queueing its
    /// control batch afterwards cannot fail: [`BrokerError::Overloaded`] at once when the
    /// queue is full (then nothing was changed), [`BrokerError::ShuttingDown`] after shutdown.
    pub fn reserve_control(&self) -> Result<ControlSlot> {
        self.reserve_control_in_term(None)
    }

    /// [`PartitionHandle::reserve_control`]; on a replicated partition with `term` given, the
    /// batch is written only in that Raft term ([`Proposer::reserve_in_term`]).
    pub fn reserve_control_in_term(&self, term: Option<u64>) -> Result<ControlSlot> {
        if let Some(proposer) = self.proposer() {
            let slot = match term {
                Some(term) => proposer.reserve_in_term(term)?,
                None => proposer.reserve()?,
            };
            return Ok(ControlSlot(SlotKind::Proposal { proposer, slot }));
        }
        let sender = self.sender(false)?;
        let permit = sender.try_reserve_owned().map_err(|e| match e {
            TrySendError::Full(_) => overloaded(),
            TrySendError::Closed(_) => self.stopped(),
        })?;
        Ok(ControlSlot(SlotKind::Queue {
            permit,
            queued_bytes: Arc::clone(&self.inner.queued_bytes),
        }))
    }

    /// Makes this (replicated) partition's writes go to `proposer` from now on; the first
    /// proposer set stays.
    pub fn set_proposer(&self, proposer: Arc<dyn Proposer>) {
        let _kept = self.inner.proposer.set(proposer);
    }

    /// Whether this partition's writes go to a Raft group (its log is replicated).
    pub fn is_replicated(&self) -> bool {
        self.inner.proposer.get().is_some()
    }

    fn proposer(&self) -> Option<Arc<dyn Proposer>> {
        self.inner.proposer.get().cloned()
    }

    fn try_queue(
        &self,
        records: Vec<Record>,
        reply: Option<oneshot::Sender<Result<AppendResult>>>,
        held: Option<MemoryCharge>,
    ) -> Result<()> {
        let sender = self.sender(records.is_empty())?;
        let payload = Payload::Messages(records);
        let queued = self.reserve(&payload)?;
        let request = AppendRequest {
            payload,
            reply,
            lazy_sync: false,
            _queued: queued,
            _held: held,
        };
        sender.try_send(request).map_err(|e| match e {
            TrySendError::Full(_) => overloaded(),
            TrySendError::Closed(_) => self.stopped(),
        })
    }

    /// Why the queue is closed: shutdown took the sender, or else the writer thread died.
    pub(super) fn stopped(&self) -> BrokerError {
        let sender = crate::sync::read(&self.inner.sender);
        if sender.is_some() {
            self.panicked()
        } else {
            BrokerError::ShuttingDown
        }
    }

    /// A reply that never came: the writer answers every request it takes, also at shutdown,
    /// unless its thread panicked.
    pub(super) fn panicked(&self) -> BrokerError {
        let dir = self.inner.view.dir().display();
        BrokerError::Panicked {
            task: format!("the writer of {dir}"),
        }
    }

    fn reserve(&self, payload: &Payload) -> Result<QueuedBytes> {
        QueuedBytes::reserve(
            &self.inner.queued_bytes,
            payload.bytes(),
            self.inner.queued_bytes_limit,
        )
    }

    /// One past the last visible frame, messages or control: a checkpoint of state derived
    /// from control entries taken after reading this covers every entry before it.
    pub fn end_position(&self) -> LogPosition {
        self.inner.view.end_position()
    }

    /// Calls `visit` with every visible control entry from `from` on, in log order, with the
    /// position after its frame (see `LogView::replay_controls`). Blocking file I/O.
    pub fn replay_controls(
        &self,
        from: LogPosition,
        visit: impl FnMut(LogPosition, Bytes) -> Result<()>,
    ) -> Result<()> {
        self.inner.view.replay_controls(from, visit)
    }

    /// [`PartitionHandle::replay_controls`] that also visits the message batches `messages`
    /// asks for; returns the position it replayed to (the visible end when it started).
    /// Blocking file I/O.
    pub fn replay(
        &self,
        from: LogPosition,
        messages: MessageFrames,
        visit: impl FnMut(LogPosition, Replayed) -> Result<()>,
    ) -> Result<LogPosition> {
        self.inner.view.replay(from, messages, visit)
    }

    /// [`PartitionHandle::replay`] that stops at `until` when it comes before the visible
    /// end. Blocking file I/O.
    pub fn replay_until(
        &self,
        from: LogPosition,
        until: LogPosition,
        messages: MessageFrames,
        visit: impl FnMut(LogPosition, Replayed) -> Result<()>,
    ) -> Result<LogPosition> {
        self.inner.view.replay_until(from, until, messages, visit)
    }

    /// Visits at most `max_frames` visible frames from `from`, whole, with their start, end
    /// and time; returns where it stopped. Blocking file I/O.
    pub fn walk_frames(
        &self,
        from: LogPosition,
        max_frames: usize,
        visit: impl FnMut(Frame) -> Result<()>,
    ) -> Result<LogPosition> {
        self.inner.view.walk_frames(from, max_frames, visit)
    }

    /// The visible frame starting at `at`, if any. Blocking file I/O.
    pub fn frame_at(&self, at: LogPosition) -> Result<Option<Frame>> {
        self.inner.view.frame_at(at)
    }

    /// The base offsets of the partition's segment files, oldest first.
    pub fn segment_bases(&self) -> Vec<u64> {
        self.inner
            .view
            .all_segments()
            .iter()
            .map(|s| s.base_offset())
            .collect()
    }

    /// The partition's directory.
    pub fn dir(&self) -> &std::path::Path {
        self.inner.view.dir()
    }

    /// Bytes queued for the writer and not yet answered.
    pub fn queued_bytes(&self) -> usize {
        self.inner.queued_bytes.load(Ordering::Acquire)
    }

    pub(super) fn sender(&self, empty: bool) -> Result<mpsc::Sender<AppendRequest>> {
        if empty {
            return Err(empty_append());
        }
        let sender = crate::sync::read(&self.inner.sender);
        sender.clone().ok_or(BrokerError::ShuttingDown)
    }

    /// [`PartitionHandle::read`] served from memory, when the newest records the writer keeps
    /// or the batch the last file read ended in hold `from` and complete the read; `None`
    /// otherwise (then read the files). Does not block.
    pub fn read_cached(
        &self,
        from: u64,
        max_records: usize,
        max_bytes: usize,
    ) -> Option<Vec<StoredRecord>> {
        self.inner.view.read_cached(from, max_records, max_bytes)
    }

    /// Whether a reader drained the batch the last file read ended in since the last call:
    /// then [`PartitionHandle::prefetch`] is worth running.
    pub fn prefetch_due(&self) -> bool {
        self.inner.view.prefetch_due()
    }

    /// Reads and decodes the message frame after the last-read batch ahead of its reader.
    /// Blocking file I/O.
    pub fn prefetch(&self) -> Result<()> {
        self.inner.view.prefetch()
    }

    /// Reads committed records starting at `max(from, start_offset)`: at most `max_records`
    /// (and [`crate::limits::MAX_READ_RECORDS`]), stopping before a record whose value would
    /// take the gathered value bytes past `max_bytes` (and [`crate::limits::MAX_READ_BYTES`]),
    /// but always at least one record if any. Empty at the end of the log. A frame that fails
    /// its CRC is [`BrokerError::Corrupt`], never served. Blocking file I/O.
    pub fn read(
        &self,
        from: u64,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<Vec<StoredRecord>> {
        self.inner.view.read(from, max_records, max_bytes)
    }

    /// Where a reader that met a damaged frame while reading `offset` can resume: the first
    /// offset of the next index chunk (a few KiB on), or the end offset. Blocking.
    pub fn next_readable_after(&self, offset: u64) -> Result<u64> {
        self.inner.view.next_chunk_after(offset)
    }

    /// First offset still stored.
    pub fn start_offset(&self) -> u64 {
        self.inner.view.start_offset()
    }

    /// Offset the next appended record will get: one past the last committed record. Readers
    /// never see anything at or past it.
    pub fn end_offset(&self) -> u64 {
        self.inner.view.end_offset()
    }

    /// Bytes in all segment files.
    pub fn size_bytes(&self) -> u64 {
        self.inner.view.size_bytes()
    }

    /// First offset whose record timestamp is `>= ts_ms` (the end offset if none). Blocking.
    pub fn offset_for_timestamp(&self, ts_ms: u64) -> Result<u64> {
        self.inner.view.offset_for_timestamp(ts_ms)
    }

    /// Deletes whole non-active segments, oldest first, while the oldest is older than
    /// `retention_ms` (by its largest record timestamp) or the log is larger than
    /// `retention_bytes`, but none from the segment holding `keep_from` on (the oldest
    /// position derived state reflects; [`LogPosition::MAX`] holds nothing back); returns how
    /// many it deleted. Blocking.
    pub fn enforce_retention(
        &self,
        now_ms: u64,
        retention_ms: Option<u64>,
        retention_bytes: Option<u64>,
        keep_from: LogPosition,
    ) -> Result<usize> {
        self.inner
            .view
            .enforce_retention(now_ms, retention_ms, retention_bytes, keep_from)
    }

    /// For a replicated log: the index of the last Raft entry in the segments
    /// [`PartitionHandle::enforce_retention`] would delete now, or `None` when it would delete
    /// none. Raft purges up to it once a snapshot covers it. Blocking.
    pub fn retention_purge_index(
        &self,
        now_ms: u64,
        retention_ms: Option<u64>,
        retention_bytes: Option<u64>,
        keep_from: LogPosition,
    ) -> Result<Option<u64>> {
        self.inner
            .view
            .retention_purge_index(now_ms, retention_ms, retention_bytes, keep_from)
    }

    /// Stops taking appends, lets the writer finish what is queued, fsyncs, joins the thread.
    /// Idempotent. Blocking.
    pub fn shutdown(&self) {
        drop(crate::sync::write(&self.inner.sender).take());
        self.inner.stop.notify_one();
        let thread = crate::sync::lock(&self.inner.thread).take();
        if let Some(thread) = thread
            && thread.join().is_err()
        {
            tracing::error!(dir = %self.inner.view.dir().display(), "partition writer panicked");
        }
    }
}

/// A reserved place in a partition writer's queue ([`PartitionHandle::reserve_control`]);
/// dropping it unused gives the place back.
pub struct ControlSlot(SlotKind);

enum SlotKind {
    /// A place in the writer's queue.
    Queue {
        permit: mpsc::OwnedPermit<AppendRequest>,
        queued_bytes: Arc<AtomicUsize>,
    },
    /// A place among a replicated partition's proposals.
    Proposal {
        proposer: Arc<dyn Proposer>,
        slot: ProposalSlot,
    },
}

impl std::fmt::Debug for ControlSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlSlot").finish_non_exhaustive()
    }
}

impl ControlSlot {
    /// Queues a control batch in the reserved place; it resolves once committed per the
    /// fsync policy. Its bytes count in the queued-bytes budget without being refused by it:
    /// control entries are tens of bytes each, and the place was already granted.
    pub fn send(self, entries: Vec<Bytes>) -> PendingAppend {
        let (reply, answer) = oneshot::channel();
        self.send_with(entries, Some(reply), false);
        PendingAppend(answer)
    }

    /// [`ControlSlot::send`] without an answer, and without an fsync of its own: the batch is
    /// durable with the writer's next fsync, at most [`crate::limits::LAZY_SYNC_MS`] later
    /// (so a receive that logs its deliveries costs no fsync); a failure is logged.
    pub fn send_detached(self, entries: Vec<Bytes>) {
        self.send_with(entries, None, true);
    }

    fn send_with(
        self,
        entries: Vec<Bytes>,
        reply: Option<oneshot::Sender<Result<AppendResult>>>,
        lazy_sync: bool,
    ) {
        match self.0 {
            SlotKind::Queue {
                permit,
                queued_bytes,
            } => {
                let payload = Payload::Control(entries);
                let queued = QueuedBytes::force(&queued_bytes, payload.bytes());
                permit.send(AppendRequest {
                    payload,
                    reply,
                    lazy_sync,
                    _queued: queued,
                    _held: None,
                });
            }
            SlotKind::Proposal { proposer, slot } => {
                let now = crate::clock::now_ms();
                let proposal = EntryBody::control(now, &entries).map(|b| proposer.propose(slot, b));
                tokio::spawn(async move {
                    let outcome = match proposal {
                        Ok(proposal) => proposal.await,
                        Err(e) => Err(e),
                    };
                    match (reply, outcome) {
                        (Some(reply), outcome) => {
                            let _gone = reply.send(outcome);
                        }
                        (None, Err(e)) => tracing::warn!(error = %e, "a control proposal failed"),
                        (None, Ok(_)) => {}
                    }
                });
            }
        }
    }
}

/// An append queued without waiting; [`PendingAppend::wait`] gives its outcome.
#[derive(Debug)]
pub struct PendingAppend(oneshot::Receiver<Result<AppendResult>>);

impl PendingAppend {
    /// Waits until the batch is committed per the fsync policy (or failed).
    pub async fn wait(self) -> Result<AppendResult> {
        // The writer answers every request it takes, also at shutdown, unless it panicked.
        self.0.await.unwrap_or_else(|_| {
            Err(BrokerError::Panicked {
                task: "a partition writer".into(),
            })
        })
    }
}

fn empty_append() -> BrokerError {
    BrokerError::invalid("records", "an append needs at least one record")
}

fn overloaded() -> BrokerError {
    BrokerError::Overloaded {
        resource: "partition writer queue",
        retry_after_ms: QUEUE_FULL_RETRY_AFTER_MS,
    }
}
