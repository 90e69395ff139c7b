//! [`PartitionMachine`]: what applying a partition's committed entries does.
//!
//! The entries are already in the partition log (it is the Raft log), so applying them copies
//! nothing: it makes them visible to readers up to the last applied entry, wakes readers
//! waiting at the end of the log, and answers each message entry with where its messages
//! landed. Control entries (acks, seeks…) become visible the same way and the broker's
//! appliers derive their state from the visible log, as on a single node. Membership entries
//! are remembered.
//!
//! A snapshot of a partition is small: the applied id, the membership and the offset where
//! the log continues. Installing one (a replica too far behind for the leader's log) replaces
//! the replica's log with an empty one that continues at that offset.

use std::io::Cursor;
use std::sync::Arc;

use openraft::storage::{RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{
    Entry, EntryPayload, LogId, RaftSnapshotBuilder, StorageError, StorageIOError, StoredMembership,
};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use super::types::{Applied, NodeInfo, TypeConfig, snapshot_meta};
use crate::error::BrokerError;
use crate::storage::PartitionHandle;

type StorageResult<T> = Result<T, StorageError<u64>>;

/// What a partition snapshot's bytes hold besides its metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct SnapshotBody {
    /// The offset the next message gets after the snapshot's last entry.
    next_offset: u64,
}

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
}

impl PartitionMachine {
    /// The machine of partition log `log`, waking `on_commit` as entries become visible.
    /// Nothing is applied yet: openraft applies the committed entries again after a restart.
    pub fn new(log: PartitionHandle, on_commit: Arc<Notify>) -> PartitionMachine {
        PartitionMachine {
            log,
            on_commit,
            state: Arc::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Applying> {
        crate::sync::lock(&self.state)
    }
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
        let body: SnapshotBody = serde_json::from_slice(&bytes)
            .map_err(|e| StorageIOError::read_snapshot(Some(meta.signature()), &e))?;
        let behind = match (meta.last_log_id, self.log.last_entry()) {
            (Some(snapshot_last), Some(own_last)) => own_last.index < snapshot_last.index,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if behind {
            self.log
                .reset_entries(body.next_offset)
                .await
                .map_err(|e| sm_error(&e))?;
        }
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

impl RaftSnapshotBuilder<TypeConfig> for PartitionMachine {
    async fn build_snapshot(&mut self) -> StorageResult<Snapshot<TypeConfig>> {
        let next_offset = self.log.end_offset();
        let bytes = serde_json::to_vec(&SnapshotBody { next_offset })
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        let mut state = self.state();
        state.snapshots_built += 1;
        let meta = snapshot_meta(state.applied, &state.membership, state.snapshots_built);
        state.snapshot = Some(Stored {
            meta: meta.clone(),
            bytes: bytes.clone(),
        });
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(bytes)),
        })
    }
}
