//! [`PartitionHandle`]'s operations on a replicated partition's Raft log. Appends, cuts and
//! purges go through the writer thread, in the order they are called, so a cut always lands
//! after the appends queued before it; reads and publishing run on the caller's thread.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::{Notify, oneshot};

use super::codec::BatchHeader;
use super::codec::raft::EntryBody;
use super::partition_log::PartitionLog;
use super::queued_bytes::QueuedBytes;
use super::raft_tail::EntryLocation;
use super::raft_view::DamagedEntries;
use super::writer::{AppendRequest, PartitionHandle, Payload};
use crate::config::LogConfig;
use crate::error::Result;

/// One Raft entry to append: where it goes and what it holds.
#[derive(Debug, Clone)]
pub struct RaftEntry {
    /// Its term.
    pub term: u64,
    /// Its index.
    pub index: u64,
    /// Its body.
    pub body: EntryBody,
}

/// What an append of Raft entries achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntriesWritten {
    /// Where the last entry landed.
    pub last: Option<EntryLocation>,
    /// The entries were fsynced before this answer.
    pub fsynced: bool,
}

/// An operation the writer thread runs on a Raft log, with where its answer goes.
pub(super) enum RaftOp {
    /// Append entries after the last: `written` is answered once they are written (readable),
    /// `reply` once fsynced per the policy.
    Append {
        entries: Vec<RaftEntry>,
        written: oneshot::Sender<Result<()>>,
        reply: oneshot::Sender<Result<EntriesWritten>>,
    },
    /// Delete every entry and start an empty log whose first message offset is `next_offset`
    /// (a snapshot from the leader replaced what this replica had).
    Reset {
        next_offset: u64,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Delete an entry and all later ones.
    Truncate {
        from: u64,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Delete a bad frame found among the entries and everything after it.
    CutDamaged {
        damaged: DamagedEntries,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Delete sealed segments of entries at or below an index.
    Purge {
        upto: u64,
        reply: oneshot::Sender<Result<usize>>,
    },
}

impl RaftOp {
    /// Bytes the operation holds in the queue.
    pub(super) fn bytes(&self) -> usize {
        match self {
            RaftOp::Append { entries, .. } => entries.iter().map(|e| e.body.len()).sum(),
            RaftOp::Truncate { .. }
            | RaftOp::CutDamaged { .. }
            | RaftOp::Purge { .. }
            | RaftOp::Reset { .. } => 0,
        }
    }
}

impl PartitionHandle {
    /// Opens the log of a replicated partition in `dir`, recovering its tail as
    /// [`PartitionHandle::open`] does: readers see entries up to `applied` (the last index
    /// Raft applied before, as its state machine recorded), later ones as Raft applies them. Blocking: callers run it in `spawn_blocking` or at startup.
    pub fn open_replicated(
        dir: PathBuf,
        index: sled::Tree,
        config: LogConfig,
        on_commit: Arc<Notify>,
        applied: Option<u64>,
    ) -> Result<PartitionHandle> {
        let log = PartitionLog::open_replicated(dir.clone(), index, config, applied)?;
        Self::start(dir, log, on_commit)
    }

    /// Appends Raft entries after the last one. Returns once they are written, so readers of
    /// entries find them (waiting for queue room, never refused for it: Raft bounds what it
    /// has in flight); the receiver gets the outcome once they are fsynced as the policy asks.
    pub async fn append_entries(
        &self,
        entries: Vec<RaftEntry>,
    ) -> Result<oneshot::Receiver<Result<EntriesWritten>>> {
        let (written, was_written) = oneshot::channel();
        let (reply, answer) = oneshot::channel();
        self.send_raft(RaftOp::Append {
            entries,
            written,
            reply,
        })
        .await?;
        was_written.await.unwrap_or_else(|_| Err(self.panicked()))?;
        Ok(answer)
    }

    /// Deletes every entry, durably, and starts an empty log whose next message offset is
    /// `next_offset`: what a replica does when a snapshot from the leader replaces its log.
    pub async fn reset_entries(&self, next_offset: u64) -> Result<()> {
        let (reply, answer) = oneshot::channel();
        self.send_raft(RaftOp::Reset { next_offset, reply }).await?;
        answer.await.unwrap_or_else(|_| Err(self.panicked()))
    }

    /// Deletes entry `from` and every later one, durably, once the appends queued before it
    /// are written.
    pub async fn truncate_entries(&self, from: u64) -> Result<()> {
        let (reply, answer) = oneshot::channel();
        self.send_raft(RaftOp::Truncate { from, reply }).await?;
        answer.await.unwrap_or_else(|_| Err(self.panicked()))
    }

    /// The last intact entry recovery found beyond a bad frame it cut when it opened the log
    /// (damage, not a torn write: entries the replica may have acknowledged were cut).
    pub fn cut_beyond(&self) -> Option<EntryLocation> {
        self.inner.view.raft().cut_beyond()
    }

    /// Checks the frames from the segment holding entry `from` to the end: the first bad one,
    /// if any (see [`DamagedEntries`]). Blocking file I/O: it reads those segments whole.
    pub fn find_damaged_entries(&self, from: u64) -> Result<Option<DamagedEntries>> {
        self.inner.view.find_damaged_entries(from)
    }

    /// Deletes the bad frame `damaged` and everything after it, durably, once the appends
    /// queued before it are written; refused when readers can see the bad frame.
    pub async fn cut_damaged_entries(&self, damaged: DamagedEntries) -> Result<()> {
        let (reply, answer) = oneshot::channel();
        self.send_raft(RaftOp::CutDamaged { damaged, reply })
            .await?;
        answer.await.unwrap_or_else(|_| Err(self.panicked()))
    }

    /// Deletes the sealed segments whose entries all lie at or below `upto`; how many went.
    pub async fn purge_entries(&self, upto: u64) -> Result<usize> {
        let (reply, answer) = oneshot::channel();
        self.send_raft(RaftOp::Purge { upto, reply }).await?;
        answer.await.unwrap_or_else(|_| Err(self.panicked()))
    }

    async fn send_raft(&self, op: RaftOp) -> Result<()> {
        let sender = self.sender(false)?;
        let queued = QueuedBytes::force(&self.inner.queued_bytes, op.bytes());
        let request = AppendRequest {
            payload: Payload::Raft(op),
            reply: None,
            lazy_sync: false,
            _queued: queued,
            _held: None,
        };
        sender.send(request).await.map_err(|_| self.stopped())
    }

    /// Makes the entries up to `index` visible to readers (Raft applied them) and wakes
    /// waiting readers when anything new became visible.
    pub fn publish_applied(&self, index: u64, on_commit: &Notify) -> Result<()> {
        if self.inner.view.publish_applied(index)? {
            on_commit.notify_waiters();
        }
        Ok(())
    }

    /// [`PartitionHandle::publish_applied`] from async code: at once when the entry's place is
    /// in memory (every commit in steady state), on the blocking pool when finding it takes a
    /// scan of files (entries re-applied after a restart).
    pub async fn publish_applied_async(&self, index: u64, on_commit: Arc<Notify>) -> Result<()> {
        if let Some(moved) = self.inner.view.publish_applied_from_tail(index) {
            if moved {
                on_commit.notify_waiters();
            }
            return Ok(());
        }
        let log = self.clone();
        tokio::task::spawn_blocking(move || log.publish_applied(index, &on_commit))
            .await
            .unwrap_or_else(|e| {
                Err(crate::error::BrokerError::Panicked {
                    task: e.to_string(),
                })
            })
    }

    /// The log's last entry, unless it holds none.
    pub fn last_entry(&self) -> Option<EntryLocation> {
        self.inner.view.last_entry()
    }

    /// Where entry `index` lies, if the log holds it. Blocking file I/O for an old entry.
    pub fn locate_entry(&self, index: u64) -> Result<Option<EntryLocation>> {
        self.inner.view.locate_entry(index)
    }

    /// Entries `from..to`, at most about `max_bytes` of bodies (at least one). Blocking file
    /// I/O.
    pub fn read_entries(
        &self,
        from: u64,
        to: u64,
        max_bytes: usize,
    ) -> Result<Vec<(BatchHeader, EntryBody)>> {
        self.inner.view.read_entries(from, to, max_bytes)
    }
}

#[cfg(test)]
mod tests;
