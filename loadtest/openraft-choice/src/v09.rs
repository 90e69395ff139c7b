//! openraft 0.9.25 (storage-v2): in-memory log store, counting state machine,
//! in-process network (RaftNetwork) and an N-node cluster.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io::Cursor;
use std::ops::RangeBounds;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::OnceLock;
use std::time::Duration;

use openraft::BasicNode;
use openraft::Config;
use openraft::Entry;
use openraft::EntryPayload;
use openraft::LogId;
use openraft::LogState;
use openraft::RaftLogReader;
use openraft::RaftNetwork;
use openraft::RaftNetworkFactory;
use openraft::RaftSnapshotBuilder;
use openraft::Snapshot;
use openraft::SnapshotMeta;
use openraft::StorageError;
use openraft::StoredMembership;
use openraft::Vote;
use openraft::error::InstallSnapshotError;
use openraft::error::RPCError;
use openraft::error::RaftError;
use openraft::error::Unreachable;
use openraft::network::RPCOption;
use openraft::raft::AppendEntriesRequest;
use openraft::raft::AppendEntriesResponse;
use openraft::raft::InstallSnapshotRequest;
use openraft::raft::InstallSnapshotResponse;
use openraft::raft::VoteRequest;
use openraft::raft::VoteResponse;
use openraft::storage::LogFlushed;
use openraft::storage::RaftLogStorage;
use openraft::storage::RaftStateMachine;
use openraft09 as openraft;

use crate::Data;

openraft::declare_raft_types!(
    pub TypeConfig:
        D = Data,
        R = u64,
);

type NodeId = u64;
pub type Raft = openraft::Raft<TypeConfig>;

// ---------------------------------------------------------------- log store

#[derive(Default)]
struct LogInner {
    last_purged: Option<LogId<NodeId>>,
    log: BTreeMap<u64, Entry<TypeConfig>>,
    committed: Option<LogId<NodeId>>,
    vote: Option<Vote<NodeId>>,
}

/// In-memory log: what a durable store does, minus the disk.
#[derive(Clone, Default)]
pub struct LogStore {
    inner: Arc<Mutex<LogInner>>,
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<NodeId>> {
        let inner = self.inner.lock().unwrap();
        Ok(inner.log.range(range).map(|(_, e)| e.clone()).collect())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        let inner = self.inner.lock().unwrap();
        let last = inner
            .log
            .values()
            .next_back()
            .map(|e| e.log_id)
            .or(inner.last_purged);
        Ok(LogState {
            last_purged_log_id: inner.last_purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        self.inner.lock().unwrap().vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        Ok(self.inner.lock().unwrap().vote)
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<NodeId>>,
    ) -> Result<(), StorageError<NodeId>> {
        self.inner.lock().unwrap().committed = committed;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
        Ok(self.inner.lock().unwrap().committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        {
            let mut inner = self.inner.lock().unwrap();
            for e in entries {
                inner.log.insert(e.log_id.index, e);
            }
        }
        // "Flushed" right away: no disk.
        callback.log_io_completed(Ok(()));
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let mut inner = self.inner.lock().unwrap();
        let _ = inner.log.split_off(&log_id.index);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let mut inner = self.inner.lock().unwrap();
        inner.last_purged = Some(log_id);
        let keep = inner.log.split_off(&(log_id.index + 1));
        inner.log = keep;
        Ok(())
    }
}

// ---------------------------------------------------------- state machine

#[derive(Default)]
struct SmInner {
    last_applied: Option<LogId<NodeId>>,
    last_membership: StoredMembership<NodeId, BasicNode>,
    applied_count: u64,
    snapshot_idx: u64,
    snapshot: Option<(SnapshotMeta<NodeId, BasicNode>, Vec<u8>)>,
}

/// Trivial state machine: counts applied entries, answers with the entry's index.
#[derive(Clone, Default)]
pub struct StateMachine {
    inner: Arc<Mutex<SmInner>>,
}

impl StateMachine {
    pub fn applied_count(&self) -> u64 {
        self.inner.lock().unwrap().applied_count
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        let mut inner = self.inner.lock().unwrap();
        inner.snapshot_idx += 1;
        let meta = SnapshotMeta {
            last_log_id: inner.last_applied,
            last_membership: inner.last_membership.clone(),
            snapshot_id: format!("{:?}-{}", inner.last_applied, inner.snapshot_idx),
        };
        let data = inner.applied_count.to_le_bytes().to_vec();
        inner.snapshot = Some((meta.clone(), data.clone()));
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = Self;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, StoredMembership<NodeId, BasicNode>), StorageError<NodeId>>
    {
        let inner = self.inner.lock().unwrap();
        Ok((inner.last_applied, inner.last_membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<u64>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let mut inner = self.inner.lock().unwrap();
        let mut res = Vec::new();
        for entry in entries {
            inner.last_applied = Some(entry.log_id);
            match entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(_) => inner.applied_count += 1,
                EntryPayload::Membership(m) => {
                    inner.last_membership = StoredMembership::new(Some(entry.log_id), m)
                }
            }
            res.push(entry.log_id.index);
        }
        Ok(res)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<NodeId>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<NodeId>> {
        let data = snapshot.into_inner();
        let mut inner = self.inner.lock().unwrap();
        let mut b = [0u8; 8];
        b.copy_from_slice(&data[..8]);
        inner.applied_count = u64::from_le_bytes(b);
        inner.last_applied = meta.last_log_id;
        inner.last_membership = meta.last_membership.clone();
        inner.snapshot = Some((meta.clone(), data));
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        let inner = self.inner.lock().unwrap();
        Ok(inner.snapshot.as_ref().map(|(meta, data)| Snapshot {
            meta: meta.clone(),
            snapshot: Box::new(Cursor::new(data.clone())),
        }))
    }
}

// ---------------------------------------------------------------- network

/// In-process router: calls the target's `Raft` handle directly.
#[derive(Clone, Default)]
pub struct Router {
    nodes: Arc<OnceLock<BTreeMap<u64, Raft>>>,
}

pub struct Conn {
    target: Raft,
}

fn unreachable<E: std::error::Error + 'static>(e: E) -> Unreachable {
    Unreachable::new(&e)
}

impl RaftNetworkFactory<TypeConfig> for Router {
    type Network = Conn;

    async fn new_client(&mut self, target: NodeId, _node: &BasicNode) -> Self::Network {
        let nodes = self
            .nodes
            .get()
            .expect("router is filled before replication starts");
        Conn {
            target: nodes[&target].clone(),
        }
    }
}

impl RaftNetwork<TypeConfig> for Conn {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        // A real transport copies the payload onto the wire.
        let sent = rpc.clone();
        drop(rpc);
        self.target
            .append_entries(sent)
            .await
            .map_err(|e| RPCError::Unreachable(unreachable(e)))
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        self.target
            .install_snapshot(rpc)
            .await
            .map_err(|e| RPCError::Unreachable(unreachable(e)))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.target
            .vote(rpc)
            .await
            .map_err(|e| RPCError::Unreachable(unreachable(e)))
    }
}

// ---------------------------------------------------------------- cluster

pub struct Cluster {
    pub leader: Raft,
    nodes: Vec<Raft>,
    sms: Vec<StateMachine>,
}

pub fn config() -> Arc<Config> {
    let c = Config {
        heartbeat_interval: crate::heartbeat_ms(),
        election_timeout_min: crate::heartbeat_ms() * 10,
        election_timeout_max: crate::heartbeat_ms() * 20,
        ..Default::default()
    };
    Arc::new(c.validate().expect("valid config"))
}

impl Cluster {
    pub async fn start(n: u64) -> Cluster {
        let router = Router::default();
        let mut map = BTreeMap::new();
        let mut sms = Vec::new();
        for id in 1..=n {
            let sm = StateMachine::default();
            sms.push(sm.clone());
            let raft = Raft::new(id, config(), router.clone(), LogStore::default(), sm)
                .await
                .expect("new raft");
            map.insert(id, raft);
        }
        assert!(router.nodes.set(map.clone()).is_ok(), "router set once");
        let leader = map[&1].clone();
        let members: BTreeMap<u64, BasicNode> =
            (1..=n).map(|id| (id, BasicNode::default())).collect();
        leader.initialize(members).await.expect("initialize");
        leader
            .wait(Some(Duration::from_secs(10)))
            .current_leader(1, "leader elected")
            .await
            .expect("leader");
        // Wait until the leader's blank entry is applied before measuring.
        let last = leader.metrics().borrow().last_log_index;
        leader
            .wait(Some(Duration::from_secs(10)))
            .applied_index_at_least(last, "blank applied")
            .await
            .expect("applied");
        Cluster {
            leader,
            nodes: map.into_values().collect(),
            sms,
        }
    }

    pub async fn write(&self, d: Data) -> u64 {
        let resp = self.leader.client_write(d).await.expect("client_write");
        resp.data
    }

    pub fn applied_on_leader(&self) -> u64 {
        self.sms[0].applied_count()
    }

    pub async fn shutdown(self) {
        for r in &self.nodes {
            r.shutdown().await.ok();
        }
    }
}

// ------------------------------------------------------- storage test suite

#[cfg(test)]
mod tests {
    use openraft::testing::StoreBuilder;
    use openraft::testing::Suite;

    use super::*;

    struct Builder;

    impl StoreBuilder<TypeConfig, LogStore, StateMachine> for Builder {
        async fn build(&self) -> Result<((), LogStore, StateMachine), StorageError<NodeId>> {
            Ok(((), LogStore::default(), StateMachine::default()))
        }
    }

    #[test]
    fn openraft_storage_suite() -> Result<(), StorageError<NodeId>> {
        Suite::test_all(Builder)
    }
}
