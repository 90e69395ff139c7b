//! [`LogStore`]: openraft's log storage on a partition's segment files.
//!
//! The entries are the partition log's frames ([`PartitionHandle`]'s Raft operations); the
//! vote and the last purged id live in the partition's [`RaftState`] file. Every write goes
//! through the partition's writer thread in call order (appends, cuts, purges; the state
//! machine's reset on a snapshot install goes the same way) or, for the vote, through one
//! async lock, so writes never overtake each other, as openraft requires. Blocking file I/O
//! runs on tokio's blocking pool.
//!
//! The entries appended last are also kept in memory ([`RecentEntries`]): the leader's
//! replication reads them once per follower per append, and reading them back from the file
//! cost a blocking-pool hop and a decode each time.
//!
//! Contracts kept (openraft `RaftLogStorage`): an appended entry is readable when `append`
//! returns and durable (per the fsync policy: `always` for Raft's promise) when its callback
//! fires; a purge is durable in the state file before it returns; entries at or below the
//! purged id are never returned, even while their segment still exists (a purge deletes
//! whole sealed segments only, so the active one stays even when all of it is purged).
//!
//! A read may race a truncation or a purge: a replication task of a leadership this node just
//! lost still reads entries while the new leader's first append cuts them away. What such a
//! read meets (a frame cut short, another entry's bytes at the old place) is not a storage
//! failure but entries no longer there, which openraft allows a reader to leave out; and
//! openraft treats any error of a replication read as fatal, stopping the group on this node
//! for good. So a read that fails while entries were being removed returns the entries it
//! read before the failure ([`Inner::removals`]).

use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bytes::Bytes;
use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, LogId, RaftLogReader, StorageError, StorageIOError, Vote};

use super::recent_entries::RecentEntries;
use super::repair::RepairClaim;
use super::types::{TypeConfig, from_frame, log_id, to_raft_entry};
use crate::error::BrokerError;
use crate::storage::{BatchHeader, DamagedEntries, EntryBody, PartitionHandle, RaftState};
use crate::telemetry::{self, WriteStage};

/// Bytes of entry bodies one read gathers before it returns what it has and reads on.
const READ_CHUNK_BYTES: usize = 8 * 1024 * 1024;

type StorageResult<T> = Result<T, StorageError<u64>>;

/// The log storage of one replicated partition (also its log reader: clones share it).
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<Inner>,
}

struct Inner {
    log: PartitionHandle,
    dir: PathBuf,
    /// The state file's contents; the lock serialises its writes.
    state: tokio::sync::Mutex<RaftState>,
    /// The last purged id, decoded, for readers.
    purged: std::sync::Mutex<Option<LogId<u64>>>,
    /// Bumped when a truncation or a purge starts and again when it ends (odd while one
    /// runs), so a reader can tell that entries were removed under it.
    removals: AtomicU64,
    /// The claim while the log re-syncs entries it lost to damage (see `repair`).
    repair: Arc<RepairClaim>,
    /// The entries appended last, for the replication's reads of them.
    recent: std::sync::Mutex<RecentEntries>,
}

impl Inner {
    /// Whether entries were being removed at any time since `before` was read from
    /// [`Inner::removals`].
    fn removed_since(&self, before: u64) -> bool {
        before % 2 == 1 || self.removals.load(Ordering::Acquire) != before
    }
}

/// Marks a removal of entries (truncation or purge) under way, from its creation to its drop
/// (also when the removing future is dropped early).
struct Removing<'a>(&'a AtomicU64);

impl<'a> Removing<'a> {
    fn start(removals: &'a AtomicU64) -> Self {
        removals.fetch_add(1, Ordering::AcqRel);
        Removing(removals)
    }
}

impl Drop for Removing<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

impl LogStore {
    /// The storage of the partition log `log` whose directory is `dir`. Blocking: reads the
    /// state file.
    pub fn open(log: PartitionHandle, dir: PathBuf) -> Result<LogStore, BrokerError> {
        let state = RaftState::load(&dir)?;
        let purged = decode(state.purged.as_ref())?;
        let claim = decode(state.claim.as_ref())?;
        Ok(LogStore {
            inner: Arc::new(Inner {
                log,
                dir,
                state: tokio::sync::Mutex::new(state),
                purged: std::sync::Mutex::new(purged),
                removals: AtomicU64::new(0),
                repair: Arc::new(RepairClaim::new(claim)),
                recent: std::sync::Mutex::default(),
            }),
        })
    }

    /// The log's repair claim, shared with the replica's vote handler.
    pub fn repair(&self) -> Arc<RepairClaim> {
        Arc::clone(&self.inner.repair)
    }

    /// Cuts the bad frame `damaged` and every later entry, having first saved as the claim
    /// the last entry the log held (or the claim already standing, if later): the replica
    /// then re-syncs them from the leader (see `repair`). The claim it saved.
    pub async fn begin_repair(&self, damaged: DamagedEntries) -> Result<LogId<u64>, BrokerError> {
        let held = self.last_log_id().ok_or_else(|| {
            BrokerError::invalid("raft repair", "a damaged log without entries".to_owned())
        })?;
        let claim = self.claim_at_least(held).await?;
        let _removing = Removing::start(&self.inner.removals);
        crate::sync::lock(&self.inner.recent).clear();
        self.inner.log.cut_damaged_entries(damaged).await?;
        Ok(claim)
    }

    /// Saves `held` as the repair claim, or keeps the one standing if it is later: the last
    /// entry the log held before damage cut it. The claim standing after.
    pub async fn claim_at_least(&self, held: LogId<u64>) -> Result<LogId<u64>, BrokerError> {
        let claim = self.inner.repair.claim().map_or(held, |c| c.max(held));
        let bytes = encode(&claim)?;
        self.save_state(|state| state.claim = Some(bytes)).await?;
        self.inner.repair.set(claim);
        Ok(claim)
    }

    /// Drops the claim once the log holds its index again (durably first: a crash before
    /// keeps the claim, which only delays the end of the repair).
    async fn end_repair_if_reached(&self) -> Result<(), BrokerError> {
        let repair = &self.inner.repair;
        if repair.claim().is_none() || !repair.reached_by(self.last_log_id().as_ref()) {
            return Ok(());
        }
        self.save_state(|state| state.claim = None).await?;
        repair.clear();
        Ok(())
    }

    /// The term of the vote saved in the state file (none on a fresh log).
    pub async fn saved_vote_term(&self) -> Result<Option<u64>, BrokerError> {
        let state = self.inner.state.lock().await;
        let vote: Option<Vote<u64>> = decode(state.vote.as_ref())?;
        Ok(vote.map(|v| v.leader_id().term))
    }

    /// The partition log under this storage.
    pub fn log(&self) -> &PartitionHandle {
        &self.inner.log
    }

    fn purged(&self) -> Option<LogId<u64>> {
        *crate::sync::lock(&self.inner.purged)
    }

    /// The last entry's id, or the purged id when no entry is newer.
    fn last_log_id(&self) -> Option<LogId<u64>> {
        let last = self.inner.log.last_entry().map(|e| log_id(e.term, e.index));
        let purged = self.purged();
        match (last, purged) {
            (Some(last), Some(purged)) if last.index > purged.index => Some(last),
            (Some(_), purged @ Some(_)) | (None, purged) => purged,
            (last, None) => last,
        }
    }

    async fn save_state(&self, change: impl FnOnce(&mut RaftState)) -> Result<(), BrokerError> {
        let mut state = self.inner.state.lock().await;
        let mut next = state.clone();
        change(&mut next);
        let dir = self.inner.dir.clone();
        let saved = next.clone();
        blocking(move || saved.save(&dir)).await?;
        *state = next;
        Ok(())
    }
}

/// Runs blocking file I/O off the async workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, BrokerError> + Send + 'static,
) -> Result<T, BrokerError> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(BrokerError::Panicked {
            task: e.to_string(),
        })
    })
}

fn encode<T: serde::Serialize>(value: &T) -> Result<Bytes, BrokerError> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(|e| BrokerError::invalid("raft state", e.to_string()))
}

fn decode<T: serde::de::DeserializeOwned>(bytes: Option<&Bytes>) -> Result<Option<T>, BrokerError> {
    bytes
        .map(|b| serde_json::from_slice(b))
        .transpose()
        .map_err(|e| BrokerError::invalid("raft state", e.to_string()))
}

/// Frames of entries `from..to`, read in chunks, and the failure that stopped the reading
/// early, if one did: the frames read before it are kept. Blocking file I/O.
fn read_frames(
    log: &PartitionHandle,
    from: u64,
    to: u64,
) -> (Vec<(BatchHeader, EntryBody)>, Option<BrokerError>) {
    let mut frames = Vec::new();
    let mut next = from;
    while next < to {
        let chunk = match log.read_entries(next, to, READ_CHUNK_BYTES) {
            Ok(chunk) => chunk,
            Err(error) => return (frames, Some(error)),
        };
        let Some((last, _)) = chunk.last() else { break };
        next = last.raft_index.map_or(to, |i| i + 1);
        frames.extend(chunk);
    }
    (frames, None)
}

fn read_error(e: &BrokerError) -> StorageError<u64> {
    StorageIOError::read_logs(e).into()
}

fn write_error(e: &BrokerError) -> StorageError<u64> {
    StorageIOError::write_logs(e).into()
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> StorageResult<Vec<Entry<TypeConfig>>> {
        let first_kept = self.purged().map_or(0, |p| p.index + 1);
        let from = match range.start_bound() {
            Bound::Included(&i) => i,
            Bound::Excluded(&i) => i.saturating_add(1),
            Bound::Unbounded => 0,
        }
        .max(first_kept);
        let end = self.inner.log.last_entry().map_or(0, |e| e.index + 1);
        let to = match range.end_bound() {
            Bound::Included(&i) => i.saturating_add(1),
            Bound::Excluded(&i) => i,
            Bound::Unbounded => u64::MAX,
        }
        .min(end);
        let last = self.inner.log.last_entry().map(|e| log_id(e.term, e.index));
        if let Some(kept) = crate::sync::lock(&self.inner.recent).get(from, to, last) {
            return Ok(kept);
        }
        let log = self.inner.log.clone();
        let removals = self.inner.removals.load(Ordering::Acquire);
        let (frames, failure) = blocking(move || Ok(read_frames(&log, from, to)))
            .await
            .map_err(|e| read_error(&e))?;
        let mut entries = Vec::new();
        let mut failure = failure;
        for (header, body) in frames {
            match from_frame(&header, body) {
                Ok(entry) => entries.push(entry),
                Err(error) => {
                    failure = Some(error);
                    break;
                }
            }
        }
        match failure {
            Some(error) if !self.inner.removed_since(removals) => Err(read_error(&error)),
            _ => Ok(entries),
        }
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> StorageResult<LogState<TypeConfig>> {
        Ok(LogState {
            last_purged_log_id: self.purged(),
            last_log_id: self.last_log_id(),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> StorageResult<()> {
        let bytes = encode(vote).map_err(|e| StorageIOError::write_vote(&e))?;
        self.save_state(|state| state.vote = Some(bytes))
            .await
            .map_err(|e| StorageIOError::write_vote(&e).into())
    }

    async fn read_vote(&mut self) -> StorageResult<Option<Vote<u64>>> {
        let state = self.inner.state.lock().await;
        decode(state.vote.as_ref()).map_err(|e| StorageIOError::read_vote(&e).into())
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> StorageResult<()>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let appended = Instant::now();
        let now = crate::clock::now_ms();
        let given: Vec<Entry<TypeConfig>> = entries.into_iter().collect();
        let entries = given
            .iter()
            .map(|e| to_raft_entry(e, now))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| write_error(&e))?;
        let flushed = self
            .inner
            .log
            .append_entries(entries)
            .await
            .map_err(|e| write_error(&e))?;
        crate::sync::lock(&self.inner.recent).add(&given);
        let store = self.clone();
        tokio::spawn(async move {
            let result = match flushed.await {
                Ok(Ok(_)) => {
                    let seconds = appended.elapsed().as_secs_f64();
                    telemetry::write_stage(WriteStage::LogAppend, seconds);
                    Ok(())
                }
                Ok(Err(e)) => Err(io::Error::other(e)),
                Err(_) => Err(io::Error::other("the partition writer stopped")),
            };
            let durable = result.is_ok();
            callback.log_io_completed(result);
            if durable && let Err(e) = store.end_repair_if_reached().await {
                tracing::warn!(error = %e, "could not drop a met repair claim; kept until the next append");
            }
        });
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId<u64>) -> StorageResult<()> {
        let _removing = Removing::start(&self.inner.removals);
        crate::sync::lock(&self.inner.recent).cut_from(log_id.index);
        self.inner
            .log
            .truncate_entries(log_id.index)
            .await
            .map_err(|e| write_error(&e))
    }

    async fn purge(&mut self, log_id: LogId<u64>) -> StorageResult<()> {
        if self.purged().is_some_and(|p| p.index >= log_id.index) {
            return Ok(());
        }
        let bytes = encode(&log_id).map_err(|e| write_error(&e))?;
        self.save_state(|state| state.purged = Some(bytes))
            .await
            .map_err(|e| write_error(&e))?;
        *crate::sync::lock(&self.inner.purged) = Some(log_id);
        let _removing = Removing::start(&self.inner.removals);
        // Whole sealed segments go, in the writer's order; the active one stays even when
        // every entry in it is purged (readers of entries skip them), so the next message
        // offset is kept. A follower installing a snapshot has its log reset by the state
        // machine (to the snapshot's next offset), which openraft may do before or after
        // this purge: the purge deletes nothing of the new log.
        self.inner
            .log
            .purge_entries(log_id.index)
            .await
            .map(|_| ())
            .map_err(|e| write_error(&e))
    }
}
