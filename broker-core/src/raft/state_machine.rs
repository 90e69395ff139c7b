//! [`PartitionMachine`]: what applying a partition's committed entries does.
//!
//! The entries are already in the partition log (it is the Raft log), so applying them copies
//! nothing: it makes them visible to readers up to the last applied entry, wakes readers
//! waiting at the end of the log, and answers each message entry with where its messages
//! landed. Control entries (acks, seeks…) become visible the same way and the broker's
//! appliers derive their state from the visible log, as on a single node. Membership entries
//! are remembered.
//!
//! A snapshot of a partition is the applied id, the membership, the offset where the log
//! continues and the state the broker derived from the log up to it (its subscription tables:
//! see [`DerivedState`]; format in `snapshot`). A replica keeps its latest snapshot in a file
//! and starts from it after a restart, since the log below it may be purged. Installing one
//! (a replica too far behind for the leader's log) replaces the replica's log with an empty
//! one that continues at that offset, then the derived state with the snapshot's.

use std::io::Cursor;
use std::sync::Arc;
use std::time::Instant;

use openraft::storage::{RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{
    Entry, EntryPayload, LogId, RaftSnapshotBuilder, StorageError, StorageIOError, StoredMembership,
};
use tokio::sync::Notify;

use super::snapshot::{DerivedState, SnapshotBody, SnapshotFile};
use super::types::{Applied, NodeInfo, TypeConfig, log_id, snapshot_meta};
use crate::error::BrokerError;
use crate::storage::{LogPosition, PartitionHandle};
use crate::telemetry::{self, WriteStage};

type StorageResult<T> = Result<T, StorageError<u64>>;

/// A snapshot this replica built or installed.
#[derive(Debug, Clone)]
struct Stored {
    meta: SnapshotMeta<u64, NodeInfo>,
    bytes: Vec<u8>,
}

#[derive(Debug, Default)]
struct Applying {
    applied: Option<LogId<u64>>,
    membership: StoredMembership<u64, NodeInfo>,
    snapshot: Option<Stored>,
    snapshots_built: u64,
}

/// The state machine of one replicated partition (its snapshot builder shares it).
#[derive(Clone)]
pub struct PartitionMachine {
    log: PartitionHandle,
    on_commit: Arc<Notify>,
    state: Arc<std::sync::Mutex<Applying>>,
    /// Held while entries are applied and published, and while a snapshot's point is chosen,
    /// so the point's entry is visible and the derived state captured ends exactly there.
    applying: Arc<tokio::sync::Mutex<()>>,
    derived: Option<Arc<dyn DerivedState>>,
}

impl PartitionMachine {
    /// The machine of partition log `log`, waking `on_commit` as entries become visible.
    /// Nothing is applied yet: openraft applies the committed entries again after a restart.
    /// Its snapshots carry no derived state and are not kept in a file.
    pub fn new(log: PartitionHandle, on_commit: Arc<Notify>) -> PartitionMachine {
        PartitionMachine {
            log,
            on_commit,
            state: Arc::default(),
            applying: Arc::default(),
            derived: None,
        }
    }

    /// The machine of partition log `log` whose snapshots carry `derived` and are kept in
    /// the log's directory: it starts from the snapshot kept there (applied up to it, the
    /// entries up to it published to readers), and openraft applies the committed entries
    /// after it again. Blocking (reads the snapshot file).
    pub fn open(
        log: PartitionHandle,
        on_commit: Arc<Notify>,
        derived: Arc<dyn DerivedState>,
    ) -> Result<PartitionMachine, BrokerError> {
        let mut machine = PartitionMachine::new(log, on_commit);
        machine.derived = Some(derived);
        if let Some(file) = SnapshotFile::load(machine.log.dir())? {
            if let Some(last) = file.meta.last_log_id
                && machine.log.locate_entry(last.index)?.is_some()
            {
                machine
                    .log
                    .publish_applied(last.index, &machine.on_commit)?;
            }
            let mut state = machine.state();
            state.applied = file.meta.last_log_id;
            state.membership = file.meta.last_membership.clone();
            state.snapshot = Some(Stored {
                meta: file.meta,
                bytes: file.bytes,
            });
        }
        Ok(machine)
    }

    /// The index of the last entry applied (at start: the kept snapshot's).
    pub fn applied_index(&self) -> Option<u64> {
        self.state().applied.map(|id| id.index)
    }

    /// Keeps the snapshot in the log's directory, when this machine keeps its snapshots.
    async fn keep(&self, meta: &SnapshotMeta<u64, NodeInfo>, bytes: &[u8]) -> StorageResult<()> {
        if self.derived.is_none() {
            return Ok(());
        }
        let file = SnapshotFile {
            meta: meta.clone(),
            bytes: bytes.to_vec(),
        };
        let dir = self.log.dir().to_path_buf();
        blocking(move || file.save(&dir))
            .await
            .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), &e).into())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Applying> {
        crate::sync::lock(&self.state)
    }
}

/// Runs blocking work off the async workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, BrokerError> + Send + 'static,
) -> Result<T, BrokerError> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(BrokerError::Panicked {
            task: e.to_string(),
        })
    })
}

fn sm_error(e: &BrokerError) -> StorageError<u64> {
    StorageIOError::write_state_machine(e).into()
}

impl RaftStateMachine<TypeConfig> for PartitionMachine {
    type SnapshotBuilder = PartitionMachine;

    async fn applied_state(
        &mut self,
    ) -> StorageResult<(Option<LogId<u64>>, StoredMembership<u64, NodeInfo>)> {
        let state = self.state();
        Ok((state.applied, state.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> StorageResult<Vec<Applied>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let _applying = self.applying.lock().await;
        let applying = Instant::now();
        // The visible end is where the first of these entries' messages start: entries apply
        // in log order, each right after the last one made visible.
        let mut next_offset = self.log.end_offset();
        let mut answers = Vec::new();
        let mut last = None;
        {
            let mut state = self.state();
            for entry in entries {
                last = Some(entry.log_id);
                state.applied = Some(entry.log_id);
                answers.push(match entry.payload {
                    EntryPayload::Normal(body) => {
                        let count = body.message_count();
                        let applied = Applied {
                            base_offset: next_offset,
                            count,
                        };
                        next_offset += u64::from(count);
                        applied
                    }
                    EntryPayload::Blank => Applied {
                        base_offset: next_offset,
                        count: 0,
                    },
                    EntryPayload::Membership(membership) => {
                        state.membership = StoredMembership::new(Some(entry.log_id), membership);
                        Applied {
                            base_offset: next_offset,
                            count: 0,
                        }
                    }
                });
            }
        }
        if let Some(last) = last {
            self.log
                .publish_applied_async(last.index, Arc::clone(&self.on_commit))
                .await
                .map_err(|e| sm_error(&e))?;
        }
        telemetry::write_stage(WriteStage::Apply, applying.elapsed().as_secs_f64());
        Ok(answers)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> StorageResult<Box<Cursor<Vec<u8>>>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, NodeInfo>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> StorageResult<()> {
        let bytes = snapshot.into_inner();
        let body = SnapshotBody::decode(&bytes)
            .map_err(|e| StorageIOError::read_snapshot(Some(meta.signature()), &e))?;
        let behind = match (meta.last_log_id, self.log.last_entry()) {
            (Some(snapshot_last), Some(own_last)) => own_last.index < snapshot_last.index,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if behind {
            let _applying = self.applying.lock().await;
            self.log
                .reset_entries(body.next_offset)
                .await
                .map_err(|e| sm_error(&e))?;
            if let Some(derived) = self.derived.clone() {
                let tables = body.derived.clone();
                blocking(move || derived.install(&tables))
                    .await
                    .map_err(|e| StorageIOError::read_snapshot(Some(meta.signature()), &e))?;
            }
        }
        self.keep(meta, &bytes).await?;
        let mut state = self.state();
        state.applied = meta.last_log_id;
        state.membership = meta.last_membership.clone();
        state.snapshot = Some(Stored {
            meta: meta.clone(),
            bytes,
        });
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> StorageResult<Option<Snapshot<TypeConfig>>> {
        let state = self.state();
        Ok(state.snapshot.as_ref().map(|stored| Snapshot {
            meta: stored.meta.clone(),
            snapshot: Box::new(Cursor::new(stored.bytes.clone())),
        }))
    }
}

impl PartitionMachine {
    /// Where the next snapshot ends: its last entry's id, the next message offset after it
    /// and the end of its frame. Retention's point when it has one and it is applied (never
    /// before the membership's entry, which the snapshot carries), else the last applied
    /// entry. The caller holds `applying`, so the last applied entry is visible.
    async fn snapshot_end(
        &self,
        wanted: Option<u64>,
    ) -> StorageResult<(
        Option<LogId<u64>>,
        u64,
        LogPosition,
        StoredMembership<u64, NodeInfo>,
    )> {
        let (applied, membership) = {
            let state = self.state();
            (state.applied, state.membership.clone())
        };
        let at_applied = (
            applied,
            self.log.end_offset(),
            self.log.end_position(),
            membership.clone(),
        );
        let member_index = membership.log_id().map_or(0, |id| id.index);
        let Some(point) = wanted
            .map(|w| w.max(member_index))
            .filter(|p| applied.is_some_and(|a| *p < a.index))
        else {
            return Ok(at_applied);
        };
        let log = self.log.clone();
        let located = blocking(move || log.locate_entry(point))
            .await
            .map_err(|e| StorageIOError::read_logs(&e))?;
        Ok(match located {
            Some(entry) => (
                Some(log_id(entry.term, entry.index)),
                entry.next_offset,
                entry.end(),
                membership,
            ),
            None => at_applied,
        })
    }
}

impl RaftSnapshotBuilder<TypeConfig> for PartitionMachine {
    async fn build_snapshot(&mut self) -> StorageResult<Snapshot<TypeConfig>> {
        let wanted = match self.derived.clone() {
            Some(derived) => blocking(move || derived.snapshot_point())
                .await
                .map_err(|e| StorageIOError::read_logs(&e))?,
            None => None,
        };
        // The point is chosen while nothing applies, so the entries up to it are visible; the
        // derived state is captured up to its frame's end, however far applying has gone
        // meanwhile.
        let (last, next_offset, until, membership) = {
            let _applying = self.applying.lock().await;
            self.snapshot_end(wanted).await?
        };
        let derived = match self.derived.clone() {
            Some(derived) => blocking(move || derived.capture(until))
                .await
                .map_err(|e| StorageIOError::write_snapshot(None, &e))?,
            None => bytes::Bytes::new(),
        };
        let bytes = SnapshotBody {
            next_offset,
            derived,
        }
        .encode();
        let meta = {
            let mut state = self.state();
            state.snapshots_built += 1;
            snapshot_meta(last, &membership, state.snapshots_built)
        };
        self.keep(&meta, &bytes).await?;
        self.state().snapshot = Some(Stored {
            meta: meta.clone(),
            bytes: bytes.clone(),
        });
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(bytes)),
        })
    }
}
