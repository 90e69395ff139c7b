//! The controller group's state machine: cluster metadata as a sequence of commands.
//!
//! The controller's log is a replicated log like a partition's (the same [`LogStore`] on its
//! own segment files); each committed command is a control entry holding the command's bytes.
//! [`ControllerMachine`] hands them, in order, to the node's [`Metadata`] (the pure cluster
//! state: every node applies every command and refuses the same invalid ones) and then
//! publishes the new version, so the node's reconciler (which opens and closes topics and
//! their partitions' groups to match) wakes. A snapshot of the controller is the whole
//! metadata, serialised by it.
//!
//! [`LogStore`]: super::LogStore

use std::io::Cursor;
use std::sync::Arc;

use openraft::storage::{RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{
    Entry, EntryPayload, LogId, RaftSnapshotBuilder, StorageError, StorageIOError, StoredMembership,
};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::types::{Applied, NodeInfo, TypeConfig, snapshot_meta};
use crate::error::BrokerError;
use crate::storage::PartitionHandle;

type StorageResult<T> = Result<T, StorageError<u64>>;

/// The cluster metadata the controller replicates, as the controller sees it: commands in,
/// a snapshot out.
pub trait Metadata: Send + Sync + 'static {
    /// Applies the committed command `bytes` (entry `index`); a command the metadata refuses
    /// changes nothing (every node refuses it alike). Never blocks on I/O.
    fn apply(&mut self, index: u64, bytes: &[u8]);
    /// The whole metadata as bytes.
    fn snapshot(&self) -> Result<Vec<u8>, BrokerError>;
    /// Replaces the metadata with a snapshot's.
    fn restore(&mut self, bytes: &[u8]) -> Result<(), BrokerError>;
}

/// What a controller snapshot's bytes hold.
#[derive(Serialize, Deserialize)]
struct ControllerSnapshot {
    metadata: Vec<u8>,
}

struct State<M> {
    metadata: M,
    applied: Option<LogId<u64>>,
    membership: StoredMembership<u64, NodeInfo>,
    snapshot: Option<(SnapshotMeta<u64, NodeInfo>, Vec<u8>)>,
    snapshots_built: u64,
}

/// The controller's state machine over `M`.
pub struct ControllerMachine<M> {
    log: PartitionHandle,
    state: Arc<std::sync::Mutex<State<M>>>,
    version: Arc<watch::Sender<u64>>,
}

impl<M> Clone for ControllerMachine<M> {
    fn clone(&self) -> Self {
        ControllerMachine {
            log: self.log.clone(),
            state: Arc::clone(&self.state),
            version: Arc::clone(&self.version),
        }
    }
}

impl<M: Metadata> ControllerMachine<M> {
    /// The machine applying to `metadata`, over the controller log `log`.
    pub fn new(log: PartitionHandle, metadata: M) -> ControllerMachine<M> {
        ControllerMachine {
            log,
            state: Arc::new(std::sync::Mutex::new(State {
                metadata,
                applied: None,
                membership: StoredMembership::default(),
                snapshot: None,
                snapshots_built: 0,
            })),
            version: Arc::new(watch::channel(0).0),
        }
    }

    /// Changes whenever a command was applied (its value: the last applied index).
    pub fn version(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Reads the metadata.
    pub fn read<T>(&self, read: impl FnOnce(&M) -> T) -> T {
        read(&crate::sync::lock(&self.state).metadata)
    }
}

fn sm_error(e: &BrokerError) -> StorageError<u64> {
    StorageIOError::write_state_machine(e).into()
}

impl<M: Metadata> RaftStateMachine<TypeConfig> for ControllerMachine<M> {
    type SnapshotBuilder = ControllerMachine<M>;

    async fn applied_state(
        &mut self,
    ) -> StorageResult<(Option<LogId<u64>>, StoredMembership<u64, NodeInfo>)> {
        let state = crate::sync::lock(&self.state);
        Ok((state.applied, state.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> StorageResult<Vec<Applied>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let mut answers = Vec::new();
        let mut last = None;
        {
            let mut state = crate::sync::lock(&self.state);
            for entry in entries {
                last = Some(entry.log_id);
                state.applied = Some(entry.log_id);
                match entry.payload {
                    EntryPayload::Normal(body) => {
                        for command in body.control_entries().map_err(|e| sm_error(&e))? {
                            state.metadata.apply(entry.log_id.index, &command);
                        }
                    }
                    EntryPayload::Membership(membership) => {
                        state.membership = StoredMembership::new(Some(entry.log_id), membership);
                    }
                    EntryPayload::Blank => {}
                }
                answers.push(Applied::default());
            }
        }
        if let Some(last) = last {
            self.log
                .publish_applied_async(last.index, Arc::new(tokio::sync::Notify::new()))
                .await
                .map_err(|e| sm_error(&e))?;
            self.version.send_replace(last.index);
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
        let body: ControllerSnapshot = serde_json::from_slice(&bytes)
            .map_err(|e| StorageIOError::read_snapshot(Some(meta.signature()), &e))?;
        {
            let mut state = crate::sync::lock(&self.state);
            state
                .metadata
                .restore(&body.metadata)
                .map_err(|e| sm_error(&e))?;
            state.applied = meta.last_log_id;
            state.membership = meta.last_membership.clone();
            state.snapshot = Some((meta.clone(), bytes));
        }
        if let Some(applied) = meta.last_log_id {
            self.version.send_replace(applied.index);
        }
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> StorageResult<Option<Snapshot<TypeConfig>>> {
        let state = crate::sync::lock(&self.state);
        Ok(state.snapshot.as_ref().map(|(meta, bytes)| Snapshot {
            meta: meta.clone(),
            snapshot: Box::new(Cursor::new(bytes.clone())),
        }))
    }
}

impl<M: Metadata> RaftSnapshotBuilder<TypeConfig> for ControllerMachine<M> {
    async fn build_snapshot(&mut self) -> StorageResult<Snapshot<TypeConfig>> {
        let mut state = crate::sync::lock(&self.state);
        let metadata = state
            .metadata
            .snapshot()
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        let bytes = serde_json::to_vec(&ControllerSnapshot { metadata })
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        state.snapshots_built += 1;
        let meta = snapshot_meta(state.applied, &state.membership, state.snapshots_built);
        state.snapshot = Some((meta.clone(), bytes.clone()));
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(bytes)),
        })
    }
}
