//! openraft 0.10.0-alpha.37: in-memory log store, counting state machine,
//! in-process network (RaftNetworkV2) and an N-node cluster.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::io;
use std::ops::RangeBounds;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::OnceLock;
use std::time::Duration;

use futures_util::Stream;
use futures_util::StreamExt;
use futures_util::TryStreamExt;
use openraft::BasicNode;
use openraft::Config;
use openraft::EntryPayload;
use openraft::LogState;
use openraft::OptionalSend;
use openraft::RaftLogReader;
use openraft::RaftNetworkFactory;
use openraft::RaftSnapshotBuilder;
use openraft::base::BoxFuture;
use openraft::base::BoxStream;
use openraft::errors::RPCError;
use openraft::errors::ReplicationClosed;
use openraft::errors::StreamingError;
use openraft::errors::Unreachable;
use openraft::network::RPCOption;
use openraft::network::v2::RaftNetworkV2;
use openraft::raft::AppendEntriesRequest;
use openraft::raft::AppendEntriesResponse;
use openraft::raft::SnapshotResponse;
use openraft::raft::StreamAppendResult;
use openraft::raft::VoteRequest;
use openraft::raft::VoteResponse;
use openraft::storage::EntryResponder;
use openraft::storage::IOFlushed;
use openraft::storage::RaftLogStorage;
use openraft::storage::RaftStateMachine;
use openraft::type_config::alias::LogIdOf;
use openraft::type_config::alias::SnapshotMetaOf;
use openraft::type_config::alias::SnapshotOf;
use openraft::type_config::alias::StoredMembershipOf;
use openraft::type_config::alias::VoteOf;
use openraft10 as openraft;

use crate::Data;

openraft::declare_raft_types!(
    pub TypeConfig:
        D = Data,
        R = u64,
);

type Entry = <TypeConfig as openraft::RaftTypeConfig>::Entry;
pub type Raft = openraft::Raft<TypeConfig, StateMachine>;
type SnapshotData = Vec<u8>;

// ---------------------------------------------------------------- log store

#[derive(Default)]
struct LogInner {
    last_purged: Option<LogIdOf<TypeConfig>>,
    log: BTreeMap<u64, Entry>,
    committed: Option<LogIdOf<TypeConfig>>,
    vote: Option<VoteOf<TypeConfig>>,
}

/// In-memory log: what a durable store does, minus the disk.
#[derive(Clone, Default)]
pub struct LogStore {
    inner: Arc<Mutex<LogInner>>,
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        let inner = self.inner.lock().unwrap();
        Ok(inner.log.range(range).map(|(_, e)| e.clone()).collect())
    }

    async fn read_vote(&mut self) -> Result<Option<VoteOf<TypeConfig>>, io::Error> {
        Ok(self.inner.lock().unwrap().vote)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, io::Error> {
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

    async fn save_vote(&mut self, vote: &VoteOf<TypeConfig>) -> Result<(), io::Error> {
        self.inner.lock().unwrap().vote = Some(*vote);
        Ok(())
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogIdOf<TypeConfig>>,
    ) -> Result<(), io::Error> {
        self.inner.lock().unwrap().committed = committed;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogIdOf<TypeConfig>>, io::Error> {
        Ok(self.inner.lock().unwrap().committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: IOFlushed<TypeConfig>,
    ) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        {
            let mut inner = self.inner.lock().unwrap();
            for e in entries {
                inner.log.insert(e.log_id.index(), e);
            }
        }
        // "Flushed" right away: no disk.
        callback.io_completed(Ok(()));
        Ok(())
    }

    async fn truncate_after(
        &mut self,
        last_log_id: Option<LogIdOf<TypeConfig>>,
    ) -> Result<(), io::Error> {
        let start = last_log_id.map(|l| l.index() + 1).unwrap_or(0);
        let mut inner = self.inner.lock().unwrap();
        let _ = inner.log.split_off(&start);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogIdOf<TypeConfig>) -> Result<(), io::Error> {
        let mut inner = self.inner.lock().unwrap();
        inner.last_purged = Some(log_id);
        let keep = inner.log.split_off(&(log_id.index() + 1));
        inner.log = keep;
        Ok(())
    }
}

// ---------------------------------------------------------- state machine

#[derive(Default)]
struct SmInner {
    last_applied: Option<LogIdOf<TypeConfig>>,
    last_membership: StoredMembershipOf<TypeConfig>,
    applied_count: u64,
    snapshot: Option<(SnapshotMetaOf<TypeConfig>, SnapshotData)>,
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
    type SnapshotData = SnapshotData;

    async fn build_snapshot(&mut self) -> Result<SnapshotOf<TypeConfig, SnapshotData>, io::Error> {
        let mut inner = self.inner.lock().unwrap();
        let meta = SnapshotMetaOf::<TypeConfig> {
            last_log_id: inner.last_applied,
            last_membership: inner.last_membership.clone(),
        };
        let data = inner.applied_count.to_le_bytes().to_vec();
        inner.snapshot = Some((meta.clone(), data.clone()));
        Ok(SnapshotOf::<TypeConfig, SnapshotData> {
            meta,
            snapshot: data,
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotData = SnapshotData;
    type SnapshotBuilder = Self;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogIdOf<TypeConfig>>, StoredMembershipOf<TypeConfig>), io::Error> {
        let inner = self.inner.lock().unwrap();
        Ok((inner.last_applied, inner.last_membership.clone()))
    }

    async fn apply<Strm>(&mut self, mut entries: Strm) -> Result<(), io::Error>
    where
        Strm: Stream<Item = Result<EntryResponder<TypeConfig>, io::Error>> + Unpin + OptionalSend,
    {
        while let Some((entry, responder)) = entries.try_next().await? {
            let index = entry.log_id.index();
            {
                let mut inner = self.inner.lock().unwrap();
                inner.last_applied = Some(entry.log_id);
                match &entry.payload {
                    EntryPayload::Blank => {}
                    EntryPayload::Normal(_) => inner.applied_count += 1,
                    EntryPayload::Membership(m) => {
                        inner.last_membership =
                            StoredMembershipOf::<TypeConfig>::new(Some(entry.log_id), m.clone())
                    }
                }
            }
            if let Some(r) = responder {
                r.send(index);
            }
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMetaOf<TypeConfig>,
        snapshot: SnapshotData,
    ) -> Result<(), io::Error> {
        let mut inner = self.inner.lock().unwrap();
        let mut b = [0u8; 8];
        b.copy_from_slice(&snapshot[..8]);
        inner.applied_count = u64::from_le_bytes(b);
        inner.last_applied = meta.last_log_id;
        inner.last_membership = meta.last_membership.clone();
        inner.snapshot = Some((meta.clone(), snapshot));
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<SnapshotOf<TypeConfig, SnapshotData>>, io::Error> {
        let inner = self.inner.lock().unwrap();
        Ok(inner
            .snapshot
            .as_ref()
            .map(|(meta, data)| SnapshotOf::<TypeConfig, SnapshotData> {
                meta: meta.clone(),
                snapshot: data.clone(),
            }))
    }
}

// ---------------------------------------------------------------- network

/// In-process router: calls the target's `Raft` handle directly.
#[derive(Clone)]
pub struct Router {
    nodes: Arc<OnceLock<BTreeMap<u64, Raft>>>,
    /// Use `Raft::stream_append` on the target (pipelined) instead of the default
    /// sequential `stream_append` built on `append_entries`.
    pipelined: bool,
}

pub struct Conn {
    target: Raft,
    pipelined: bool,
}

fn unreachable<E: std::error::Error + 'static>(e: E) -> Unreachable<TypeConfig> {
    Unreachable::new(&e)
}

impl RaftNetworkFactory<TypeConfig> for Router {
    type Network = Conn;

    async fn new_client(&mut self, target: u64, _node: &BasicNode) -> Self::Network {
        let nodes = self
            .nodes
            .get()
            .expect("router is filled before raft starts");
        Conn {
            target: nodes[&target].clone(),
            pipelined: self.pipelined,
        }
    }
}

impl RaftNetworkV2<TypeConfig> for Conn {
    type SnapshotData = SnapshotData;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<TypeConfig>, RPCError<TypeConfig>> {
        // A real transport copies the payload onto the wire.
        let sent = rpc.clone();
        drop(rpc);
        self.target
            .append_entries(sent)
            .await
            .map_err(|e| RPCError::Unreachable(unreachable(e)))
    }

    fn stream_append<'s, S>(
        &'s mut self,
        input: S,
        option: RPCOption,
    ) -> BoxFuture<
        's,
        Result<
            BoxStream<'s, Result<StreamAppendResult<TypeConfig>, RPCError<TypeConfig>>>,
            RPCError<TypeConfig>,
        >,
    >
    where
        S: Stream<Item = AppendEntriesRequest<TypeConfig>> + OptionalSend + Unpin + 'static,
    {
        if !self.pipelined {
            return openraft::network::stream_append_sequential(self, input, option);
        }
        let target = self.target.clone();
        Box::pin(async move {
            let copied = input.map(|rpc| {
                let sent = rpc.clone();
                drop(rpc);
                sent
            });
            let out = target
                .stream_append(copied)
                .map(|r| r.map_err(|fatal| RPCError::Unreachable(unreachable(fatal))));
            let out: BoxStream<'s, _> = Box::pin(out);
            Ok(out)
        })
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.target
            .vote(rpc)
            .await
            .map_err(|e| RPCError::Unreachable(unreachable(e)))
    }

    async fn full_snapshot(
        &mut self,
        vote: VoteOf<TypeConfig>,
        snapshot: SnapshotOf<TypeConfig, SnapshotData>,
        _cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        self.target
            .install_full_snapshot(vote, snapshot)
            .await
            .map_err(|e| StreamingError::Unreachable(unreachable(e)))
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
    pub async fn start(n: u64, pipelined: bool) -> Cluster {
        let router = Router {
            nodes: Arc::new(OnceLock::new()),
            pipelined,
        };
        let mut map = BTreeMap::new();
        let mut sms = Vec::new();
        for id in 1..=n {
            let sm = StateMachine::default();
            sms.push(sm.clone());
            let raft = Raft::build(id, config(), router.clone(), LogStore::default(), sm)
                .await
                .expect("build raft");
            map.insert(id, raft);
        }
        assert!(router.nodes.set(map.clone()).is_ok(), "router set once");
        for r in map.values() {
            r.run();
        }
        let leader = map[&1].clone();
        let members: BTreeMap<u64, BasicNode> =
            (1..=n).map(|id| (id, BasicNode::default())).collect();
        leader.initialize(members).await.expect("initialize");
        leader
            .wait(Some(Duration::from_secs(10)))
            .current_leader(1, "leader elected")
            .await
            .expect("leader");
        // Make sure the leader's blank entry is applied before measuring.
        // Right after election the leader may not hold its lease yet
        // (ForwardToLeader/LeaseExpired): retry, bounded.
        let t0 = std::time::Instant::now();
        loop {
            match leader.write_blank().await {
                Ok(_) => break,
                Err(e) if t0.elapsed() < Duration::from_secs(10) => {
                    eprintln!("0.10 blank write retry: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("blank write: {e}"),
            }
        }
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

    /// Batch write: one call, many entries; returns when all are applied.
    pub async fn write_many(&self, ds: Vec<Data>) -> u64 {
        let mut strm = self
            .leader
            .client_write_many(ds)
            .await
            .expect("client_write_many");
        let mut last = 0;
        while let Some(r) = strm.try_next().await.expect("fatal") {
            last = r.expect("write").response;
        }
        last
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
    use openraft::StorageError;
    use openraft::testing::log::StoreBuilder;
    use openraft::testing::log::Suite;

    use super::*;

    struct Builder;

    impl StoreBuilder<TypeConfig, LogStore, StateMachine> for Builder {
        async fn build(&self) -> Result<((), LogStore, StateMachine), StorageError<TypeConfig>> {
            Ok(((), LogStore::default(), StateMachine::default()))
        }
    }

    #[tokio::test]
    async fn openraft_storage_suite() -> Result<(), StorageError<TypeConfig>> {
        Suite::test_all(Builder).await
    }
}
