//! The writer thread of a partition: it takes whatever is queued as one group commit (see
//! `writer` for the contract), fsyncs per the policy, publishes, answers, and between groups
//! moves fsynced index chunks into sled.

use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::Instant;

use super::partition_log::PartitionLog;
use super::raft_handle::{EntriesWritten, RaftOp};
use super::writer::{AppendRequest, AppendResult, Payload};
use crate::config::FsyncPolicy;
use crate::error::Result;
use crate::limits::{LAZY_SYNC_MS, WRITER_QUEUE_DEPTH};
use crate::telemetry;

/// What woke the writer.
enum Wake {
    Request(AppendRequest),
    FsyncDue,
    Stop,
}

/// The state the writer thread owns.
pub(super) struct PartitionWriter {
    log: PartitionLog,
    receiver: mpsc::Receiver<AppendRequest>,
    stop: Arc<Notify>,
    on_commit: Arc<Notify>,
    fsync: FsyncPolicy,
    fsync_deadline: Option<Instant>,
}

impl PartitionWriter {
    /// The writer of `log`, taking requests from `receiver` until `stop` or the queue closes.
    pub(super) fn new(
        log: PartitionLog,
        receiver: mpsc::Receiver<AppendRequest>,
        stop: Arc<Notify>,
        on_commit: Arc<Notify>,
        fsync: FsyncPolicy,
    ) -> PartitionWriter {
        PartitionWriter {
            log,
            receiver,
            stop,
            on_commit,
            fsync,
            fsync_deadline: None,
        }
    }

    /// The thread's loop: group commits until stopped, then what is queued, then a last
    /// fsync and index persist.
    pub(super) fn run(mut self, runtime: &Runtime) {
        loop {
            match runtime.block_on(self.next_wake()) {
                Wake::Request(first) => self.commit_group(first),
                Wake::FsyncDue => self.fsync_now(),
                Wake::Stop => break,
            }
        }
        self.receiver.close();
        while let Ok(first) = self.receiver.try_recv() {
            self.commit_group(first);
        }
        self.fsync_now();
        if let Err(e) = self.log.persist_index(true) {
            tracing::error!(error = %e, "persisting the partition index at shutdown failed");
        }
        if let Err(e) = self.log.trim_active() {
            tracing::warn!(error = %e, "trimming the zeros ahead of the log's end failed");
        }
    }

    async fn next_wake(&mut self) -> Wake {
        let deadline = self.fsync_deadline;
        let fsync_due = async move {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = self.stop.notified() => Wake::Stop,
            () = fsync_due => Wake::FsyncDue,
            request = self.receiver.recv() => request.map_or(Wake::Stop, Wake::Request),
        }
    }

    /// Fsyncs now and publishes what the fsync made durable (an interval's writes become
    /// visible only once fsynced).
    fn fsync_now(&mut self) {
        self.fsync_deadline = None;
        match self.sync_timed().and_then(|()| {
            self.publish();
            self.log.persist_index(false)
        }) {
            Ok(()) => {}
            Err(e) => tracing::error!(error = %e, "partition fsync failed"),
        }
    }

    /// Fsyncs what is unsynced, recording the fsync's time when there was one to do.
    fn sync_timed(&mut self) -> Result<()> {
        if !self.log.is_unsynced() {
            return self.log.sync();
        }
        let started = std::time::Instant::now();
        let synced = self.log.sync();
        telemetry::fsync(started.elapsed().as_secs_f64());
        synced
    }

    /// Writes `first` and whatever else is queued as one group commit, then answers each.
    fn commit_group(&mut self, first: AppendRequest) {
        fail::fail_point!("writer::commit_group", |_| {});
        let queue_depth = 1 + self.receiver.len();
        let mut group = vec![first];
        while group.len() < WRITER_QUEUE_DEPTH {
            match self.receiver.try_recv() {
                Ok(request) => group.push(request),
                Err(_) => break,
            }
        }
        let bytes = group.iter().map(|r| r.payload.bytes()).sum();
        telemetry::group_commit(group.len(), bytes, queue_depth);
        if group.iter().any(|r| matches!(r.payload, Payload::Raft(_))) {
            self.commit_raft_group(group, bytes);
            return;
        }
        let now = crate::clock::now_ms();
        let written: Vec<_> = group
            .iter()
            .map(|r| match &r.payload {
                Payload::Messages(records) => self.log.append(records),
                Payload::Control(entries) => self.log.append_control(entries, now),
                Payload::Raft(_) => Err(raft_mixed()),
            })
            .collect();
        let committed = if written.iter().any(Result::is_ok) {
            // The written records move into the tail cache as they become visible.
            let batches = group
                .iter_mut()
                .zip(&written)
                .filter_map(|(request, written)| {
                    let header = written.as_ref().ok()?;
                    match &mut request.payload {
                        Payload::Messages(records) => Some((*header, std::mem::take(records))),
                        Payload::Control(_) | Payload::Raft(_) => None,
                    }
                })
                .collect();
            // A group nobody waits for is fsynced later (by the next group or the deadline),
            // not now: no fsync of its own on a receive.
            let synced = match group.iter().all(|r| r.lazy_sync) {
                true => Ok(self.defer_sync()),
                false => self.flush_per_policy(),
            };
            synced.and_then(|fsynced| {
                self.log.commit(batches)?;
                if fsynced || self.fsync == FsyncPolicy::Never {
                    self.publish();
                }
                Ok(fsynced)
            })
        } else {
            Ok(false)
        };
        if let Err(e) = &committed {
            tracing::error!(error = %e, "partition group commit failed");
        }
        for (request, written) in group.into_iter().zip(written) {
            let answer = match (&committed, written) {
                (Ok(fsynced), Ok(header)) => Ok(AppendResult {
                    base_offset: header.base_offset,
                    count: header.message_count(),
                    fsynced: *fsynced,
                    replicated: false,
                }),
                (Err(_), Ok(_)) => Err(self.log.failure_error()),
                (_, Err(e)) => Err(e),
            };
            answer_producer(request.reply, answer);
        }
        // After the answers: no producer of this group waits for the index's sled write or
        // for the zeros written ahead.
        if let Err(e) = self.log.persist_index(false) {
            tracing::error!(error = %e, "persisting the partition index failed");
        }
        if let Err(e) = self.log.zero_ahead(bytes) {
            tracing::warn!(error = %e, "writing zeros ahead of the log's end failed");
        }
    }

    /// A group of Raft operations, run in order: appends are written and answered after the
    /// group's fsync (per the policy), cuts and purges are answered as they finish. Nothing
    /// is published: readers see what Raft applies.
    fn commit_raft_group(&mut self, group: Vec<AppendRequest>, bytes: usize) {
        let mut appended = Vec::new();
        for request in group {
            let Payload::Raft(op) = request.payload else {
                answer_producer(request.reply, Err(raft_mixed()));
                continue;
            };
            match op {
                RaftOp::Append {
                    entries,
                    written: was_written,
                    reply,
                } => {
                    let mut last = None;
                    let written = entries.iter().try_for_each(|e| {
                        last = Some(self.log.append_entry(e.term, e.index, &e.body)?);
                        Ok(())
                    });
                    // A failed write is answered on `written`; its flush is never awaited.
                    match written {
                        Ok(()) => {
                            let _gone = was_written.send(Ok(()));
                            appended.push((reply, Ok(last)));
                        }
                        Err(e) => {
                            let _gone = was_written.send(Err(e));
                        }
                    }
                }
                RaftOp::Reset { next_offset, reply } => {
                    let _gone = reply.send(self.log.reset_entries(next_offset));
                }
                RaftOp::Truncate { from, reply } => {
                    let _gone = reply.send(self.log.truncate_entries(from));
                }
                RaftOp::CutDamaged { damaged, reply } => {
                    let _gone = reply.send(self.log.cut_damaged_entries(damaged));
                }
                RaftOp::Purge { upto, reply } => {
                    let _gone = reply.send(self.log.purge_entries(upto));
                }
            }
        }
        let committed = self
            .flush_per_policy()
            .and_then(|fsynced| self.log.commit(Vec::new()).map(|()| fsynced));
        if let Err(e) = &committed {
            tracing::error!(error = %e, "partition Raft group commit failed");
        }
        for (reply, written) in appended {
            let answer = match (&committed, written) {
                (Ok(fsynced), Ok(last)) => Ok(EntriesWritten {
                    last,
                    fsynced: *fsynced,
                }),
                (Err(_), Ok(_)) => Err(self.log.failure_error()),
                (_, Err(e)) => Err(e),
            };
            let _gone = reply.send(answer);
        }
        if let Err(e) = self.log.persist_index(false) {
            tracing::error!(error = %e, "persisting the partition index failed");
        }
        if let Err(e) = self.log.zero_ahead(bytes) {
            tracing::warn!(error = %e, "writing zeros ahead of the log's end failed");
        }
    }

    /// Makes what is committed visible and wakes readers if anything new is.
    fn publish(&mut self) {
        if self.log.publish() {
            self.on_commit.notify_waiters();
        }
    }

    /// Leaves a group's writes to a later fsync: the next group's, or at the latest the
    /// deadline ([`LAZY_SYNC_MS`] under `always`, the interval under `interval_ms`, none
    /// under `never`); whether the group is now fsynced (never).
    fn defer_sync(&mut self) -> bool {
        let wait_ms = match self.fsync {
            FsyncPolicy::Always => LAZY_SYNC_MS,
            FsyncPolicy::IntervalMs(ms) => ms,
            FsyncPolicy::Never => return false,
        };
        // A deadline already set is sooner than or as soon as this one.
        self.fsync_deadline
            .get_or_insert(Instant::now() + Duration::from_millis(wait_ms));
        false
    }

    /// Fsyncs as the policy asks after a group's writes; whether the group is now fsynced.
    fn flush_per_policy(&mut self) -> Result<bool> {
        match self.fsync {
            FsyncPolicy::Always => {
                // Covers any deferred group too.
                self.fsync_deadline = None;
                self.sync_timed().map(|()| true)
            }
            FsyncPolicy::Never => Ok(false),
            FsyncPolicy::IntervalMs(ms) => {
                let now = Instant::now();
                let deadline = *self
                    .fsync_deadline
                    .get_or_insert(now + Duration::from_millis(ms));
                if deadline > now && self.log.is_unsynced() {
                    return Ok(false);
                }
                self.fsync_deadline = None;
                self.sync_timed().map(|()| true)
            }
        }
    }
}

/// A message or control batch sent to a replicated partition's writer, or the reverse: each
/// kind of partition takes one kind of write.
fn raft_mixed() -> crate::error::BrokerError {
    crate::error::BrokerError::invalid(
        "partition",
        "a replicated partition takes Raft entries only, an unreplicated one no Raft entries",
    )
}

fn answer_producer(
    reply: Option<oneshot::Sender<Result<AppendResult>>>,
    answer: Result<AppendResult>,
) {
    match (reply, answer) {
        (Some(reply), answer) => {
            let _gone = reply.send(answer);
        }
        (None, Err(e)) => tracing::warn!(error = %e, "a fire-and-forget append failed"),
        (None, Ok(_)) => {}
    }
}
