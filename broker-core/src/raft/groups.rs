//! This node's Raft groups: opening a replicated partition's group, and [`RaftGroups`], the
//! registry that answers other nodes' RPCs for them (the [`RpcHandler`] behind the cluster
//! port).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use openraft::error::{ClientWriteError, InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::{Config, Raft};
use tokio::sync::{Notify, Semaphore};

use super::append_guard::{APPENDS_IN_FLIGHT, append_guarded};

use super::codec::{decode_append, decode_json, encode_json};
use super::controller::{ControllerMachine, Metadata};
use super::log_store::LogStore;
use super::network::GroupNetwork;
use super::partition_group::{PartitionGroup, StartedReplica};
use super::proposer::RaftProposer;
use super::snapshot::{DerivedState, NoDerivedState};
use super::state_machine::PartitionMachine;
use super::status::OpenedLog;
use super::transfer::{Holds, TransferAnswer, WriteHold, answer_step};
use super::transport::{GroupId, HandlerFuture, Rpc, RpcError, RpcHandler, Transport};
use super::types::{NodeInfo, TypeConfig};
use crate::config::LogConfig;
use crate::error::{BrokerError, Result};
use crate::storage::{EntryBody, PartitionHandle};

/// openraft's heartbeat interval: a fifth of the shortest election timeout, so a follower
/// misses several before it gives up on a leader. openraft checks its timers every 1.5 of
/// these (75 ms) and a leader sends its heartbeat at that check, so an idle group's
/// followers hear it every 75 ms. Every group of a node checks at the same instants
/// (`vendor/README.md`): a node wakes once per check for all its groups.
pub const HEARTBEAT_MS: u64 = 50;
/// A follower that hears nothing for a random time in this range calls an election. openraft
/// also makes a voter refuse candidates until the longest timeout passed since it last heard
/// the leader (its leader lease), so replacing a dead leader takes about one to two of these
/// ranges: 250–500 ms gave a new leader 0.77–1.8 s after a kill -9 (p50 0.87 s over ten
/// kills in two runs) where 500–1000 ms took 1.6–2.0 s
/// (reliability/tests/faults/process_faults.rs, three processes on this 2-core machine; issue
/// 9's target is p50 ≤ 1 s, max ≤ 3 s).
/// Shorter would let a loaded machine's scheduling hiccups depose healthy leaders.
pub const ELECTION_TIMEOUT_MS: (u64, u64) = (250, 500);

/// Most entries openraft reads from the log for one append to a follower (its default is
/// 300). Entries joined from many produces are up to [`super::coalesce::MAX_JOINED_BYTES`]
/// each, so this bounds what a leader reads and holds per follower catching up (32 MiB);
/// [`super::network::MAX_APPEND_BYTES`] then bounds each append's body.
pub const MAX_PAYLOAD_ENTRIES: u64 = 32;

/// The openraft settings every group of this node uses.
pub fn raft_config() -> Result<Arc<Config>> {
    let config = Config {
        cluster_name: "wharf".into(),
        heartbeat_interval: HEARTBEAT_MS,
        election_timeout_min: ELECTION_TIMEOUT_MS.0,
        election_timeout_max: ELECTION_TIMEOUT_MS.1,
        // Snapshots are taken when retention deletes old segments, not by entry count, and
        // retention alone purges (`Raft::trigger().purge_log`): openraft's own purge after a
        // snapshot would delete segments derived state still needs.
        snapshot_policy: openraft::SnapshotPolicy::Never,
        max_in_snapshot_log_to_keep: u64::MAX,
        max_payload_entries: MAX_PAYLOAD_ENTRIES,
        ..Config::default()
    };
    config
        .validate()
        .map(Arc::new)
        .map_err(|e| BrokerError::invalid("raft config", e.to_string()))
}

/// The settings of `group`: a partition's leader lets a new commit index ride on its next
/// append or heartbeat (at most [`HEARTBEAT_MS`] later, openraft's `eager_commit_notice` off,
/// vendor/README.md): a notice of its own held up the partition's next entry for a round
/// trip (produce p50 at 1,000 msg/s 2.6 → 1.9 ms). The controller keeps telling followers at
/// once: a topic or subscription made through one node is used through another moments later.
/// A partition's followers apply up to a heartbeat later; their reads already allow
/// [`super::FOLLOWER_READ_MAX_LAG_MS`].
///
/// A partition's leader also sends its new entries to the followers while it fsyncs them
/// (`async_leader_flush`, vendor/README.md change 4), so a produce waits for the slower of
/// its own fsync and a follower's round trip instead of both in turn. The controller keeps
/// openraft's order: applying its entries makes durable changes (metadata, topic directories),
/// which must never get ahead of its own log on disk.
fn group_config(group: &GroupId, config: Arc<Config>) -> Arc<Config> {
    match group {
        GroupId::Partition { .. } => Arc::new(Config {
            eager_commit_notice: false,
            async_leader_flush: true,
            ..(*config).clone()
        }),
        GroupId::Controller => config,
    }
}

/// One replicated partition on this node: its Raft and its log.
#[derive(Clone)]
pub struct PartitionReplica {
    /// The partition's Raft.
    pub raft: Raft<TypeConfig>,
    /// Its log (the Raft log).
    pub log: PartitionHandle,
}

/// Where and how to open one partition's replica.
pub struct ReplicaSpec {
    /// This node's id.
    pub node_id: u64,
    /// The group.
    pub group: GroupId,
    /// The partition's directory.
    pub dir: PathBuf,
    /// Its index tree.
    pub index: sled::Tree,
    /// Its log settings.
    pub log_config: LogConfig,
    /// Woken when entries become visible.
    pub on_commit: Arc<Notify>,
}

/// What a partition's group needs besides its log: its peers, its settings, what to wake as
/// entries become visible, and the state the broker derives from its log (which its
/// snapshots carry).
pub struct GroupParts {
    /// Reaches the other nodes.
    pub transport: Arc<dyn Transport>,
    /// openraft's settings.
    pub config: Arc<Config>,
    /// Woken when entries become visible.
    pub on_commit: Arc<Notify>,
    /// The broker's state derived from the log.
    pub derived: Arc<dyn DerivedState>,
}

impl PartitionReplica {
    /// Opens the partition's log and state and starts its Raft, reaching peers over
    /// `transport`; the log's writes go to the Raft from then on (a [`RaftProposer`]).
    /// Blocking file I/O runs on the blocking pool.
    pub async fn open(
        spec: ReplicaSpec,
        transport: Arc<dyn Transport>,
        config: Arc<Config>,
    ) -> Result<PartitionReplica> {
        let ReplicaSpec {
            node_id,
            group,
            dir,
            index,
            log_config,
            on_commit,
        } = spec;
        let wake = Arc::clone(&on_commit);
        let log = tokio::task::spawn_blocking(move || {
            PartitionHandle::open_replicated(dir, index, log_config, wake, None)
        })
        .await
        .map_err(|e| BrokerError::Panicked {
            task: e.to_string(),
        })??;
        let parts = GroupParts {
            transport,
            config,
            on_commit,
            derived: Arc::new(NoDerivedState),
        };
        let what = group.to_string();
        let raft = Self::start(node_id, group, log.clone(), parts).await?.raft;
        log.set_proposer(Arc::new(RaftProposer::new(node_id, raft.clone(), what)));
        Ok(PartitionReplica { raft, log })
    }

    /// Starts the Raft of a partition whose log is open ([`PartitionHandle::open_replicated`]):
    /// reads its Raft state and kept snapshot, repairs a log damaged after the snapshot (see
    /// `repair`) and starts the group with `parts`. The caller routes the log's writes to it
    /// (the broker through its [`super::PartitionGroup`]) and its vote requests by the repair
    /// claim it returns.
    pub async fn start(
        node_id: u64,
        group: GroupId,
        log: PartitionHandle,
        parts: GroupParts,
    ) -> Result<StartedReplica> {
        let GroupParts {
            transport,
            config,
            on_commit,
            derived,
        } = parts;
        let (opened, dir) = (log.clone(), log.dir().to_path_buf());
        let (store, machine, damaged) = tokio::task::spawn_blocking(move || {
            let store = LogStore::open(opened.clone(), dir)?;
            let machine = PartitionMachine::open(opened.clone(), on_commit, derived)?;
            let applied = machine.applied_index();
            // What openraft reads at start and applies after: the entries after the snapshot.
            let damaged = opened.find_damaged_entries(applied.map_or(0, |i| i + 1))?;
            let damaged = match (damaged, applied) {
                (Some(d), Some(applied)) if d.first_lost() <= applied => {
                    // Readers may have seen it: it cannot be cut, and reads of it fail.
                    tracing::error!(at = ?d.at, first_lost = d.first_lost(), applied, "a bad frame at or below the last applied entry: left in place, its offsets answer an error");
                    None
                }
                (damaged, _) => damaged,
            };
            Ok::<_, BrokerError>((store, machine, damaged))
        })
        .await
        .map_err(|e| BrokerError::Panicked {
            task: e.to_string(),
        })??;
        if let Some(beyond) = log.cut_beyond() {
            let claim = store
                .claim_at_least(super::types::log_id(beyond.term, beyond.index))
                .await?;
            tracing::warn!(
                %group,
                claim = %claim,
                "recovery cut a bad frame with intact entries beyond it: re-syncing from the leader"
            );
        }
        if let Some(damaged) = damaged {
            let claim = store.begin_repair(damaged).await?;
            tracing::warn!(
                %group,
                at = ?damaged.at,
                first_lost = damaged.first_lost(),
                claim = %claim,
                "a bad frame before the log's tail: cut there, re-syncing from the leader"
            );
        }
        let repair = store.repair();
        let opened = OpenedLog {
            term: store.saved_vote_term().await?.unwrap_or(0),
            last: log.last_entry().map(|e| e.index),
        };
        let raft = start_group(node_id, group, store, machine, transport, config).await?;
        repair.hold_elections(&raft);
        Ok(StartedReplica {
            raft,
            repair,
            opened,
        })
    }

    /// Stops its Raft and its log's writer.
    pub async fn shutdown(&self) {
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!(error = %e, "a Raft group did not stop cleanly");
        }
        self.log.shutdown();
    }
}

/// Starts `group`'s Raft on this node over `store` and `machine`, reaching peers over
/// `transport`.
async fn start_group<M: openraft::storage::RaftStateMachine<TypeConfig>>(
    node_id: u64,
    group: GroupId,
    store: LogStore,
    machine: M,
    transport: Arc<dyn Transport>,
    config: Arc<Config>,
) -> Result<Raft<TypeConfig>> {
    let config = group_config(&group, config);
    let network = GroupNetwork::new(transport, group);
    Raft::new(node_id, config, network, store, machine)
        .await
        .map_err(|e| BrokerError::invalid("raft", e.to_string()))
}

/// Opens a replicated log and its Raft storage on the blocking pool.
async fn open_log(
    dir: PathBuf,
    index: sled::Tree,
    log_config: LogConfig,
    on_commit: Arc<Notify>,
) -> Result<(PartitionHandle, LogStore)> {
    tokio::task::spawn_blocking(move || {
        let log =
            PartitionHandle::open_replicated(dir.clone(), index, log_config, on_commit, None)?;
        let store = LogStore::open(log.clone(), dir)?;
        Ok::<_, BrokerError>((log, store))
    })
    .await
    .map_err(|e| BrokerError::Panicked {
        task: e.to_string(),
    })?
}

/// This node's replica of the controller group.
pub struct ControllerReplica<M> {
    /// The controller's Raft.
    pub raft: Raft<TypeConfig>,
    /// Its log.
    pub log: PartitionHandle,
    /// Its state machine (read the metadata through it).
    pub machine: ControllerMachine<M>,
}

impl<M: Metadata> ControllerReplica<M> {
    /// Opens the controller's log in `spec.dir` and starts its Raft over `metadata` (which
    /// committed commands are applied to), reaching peers over `transport`.
    pub async fn open(
        spec: ReplicaSpec,
        transport: Arc<dyn Transport>,
        config: Arc<Config>,
        metadata: M,
    ) -> Result<ControllerReplica<M>> {
        let (log, store) = open_log(spec.dir, spec.index, spec.log_config, spec.on_commit).await?;
        let machine = ControllerMachine::new(log.clone(), metadata);
        let what = spec.group.to_string();
        let raft = start_group(
            spec.node_id,
            spec.group,
            store,
            machine.clone(),
            transport,
            config,
        )
        .await?;
        log.set_proposer(Arc::new(RaftProposer::new(
            spec.node_id,
            raft.clone(),
            what,
        )));
        Ok(ControllerReplica { raft, log, machine })
    }

    /// Proposes `command` (the metadata's encoding) and waits until it is committed and
    /// applied on this node.
    pub async fn propose(&self, command: bytes::Bytes) -> Result<()> {
        self.log
            .queue_control(vec![command])?
            .wait()
            .await
            .map(|_| ())
    }

    /// Takes `node` out of the group's voters (this node must lead the group), waiting up to
    /// [`super::PROPOSE_TIMEOUT_MS`] for the change to commit. A node that is no voter is
    /// left as it is; the last voter is never removed.
    pub async fn remove_voter(&self, node: u64) -> Result<()> {
        let voters = self.voters();
        if !voters.contains(&node) {
            return Ok(());
        }
        let staying: BTreeSet<u64> = voters.into_iter().filter(|v| *v != node).collect();
        if staying.is_empty() {
            return Err(crate::error::ClusterError::LastNode { node }.into());
        }
        let ms = super::PROPOSE_TIMEOUT_MS;
        membership_change(ms, self.raft.change_membership(staying, false)).await
    }

    /// Makes `node` (reached at `info`) a voter of the group (this node must lead the group):
    /// first a learner, which catches up with the log, then a voter, each step within
    /// `ADD_VOTER_STEP_MS` (10 s). A voter already is left as it is.
    pub async fn add_voter(&self, node: u64, info: NodeInfo) -> Result<()> {
        let mut voters = self.voters();
        if voters.contains(&node) {
            return Ok(());
        }
        let learner = self.raft.add_learner(node, info, true);
        membership_change(ADD_VOTER_STEP_MS, learner).await?;
        voters.insert(node);
        let voter = self.raft.change_membership(voters, false);
        membership_change(ADD_VOTER_STEP_MS, voter).await
    }

    /// The group's voters, as this node knows them.
    pub fn voters(&self) -> BTreeSet<u64> {
        let metrics = self.raft.metrics();
        let metrics = metrics.borrow();
        metrics.membership_config.membership().voter_ids().collect()
    }

    /// Stops its Raft and its log's writer.
    pub async fn shutdown(&self) {
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!(error = %e, "the controller's Raft did not stop cleanly");
        }
        self.log.shutdown();
    }
}

/// What a proposal from another node came to: committed, or the leader to ask instead
/// (`None`: no leader known), or why it failed.
pub type ProposeAnswer = std::result::Result<(), ProposeRefusal>;

/// Why a proposal was not committed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ProposeRefusal {
    /// This node does not lead the group.
    NotLeader(Option<u64>),
    /// This node does not lead the group; `leader` does, at cluster address `cluster_addr`
    /// (for a node that knows no address of it yet: one joining the cluster).
    LeaderAt {
        /// The leader.
        leader: u64,
        /// Its cluster address, as the group's membership records it.
        cluster_addr: String,
    },
    /// Not committed within [`super::PROPOSE_TIMEOUT_MS`], or the group's Raft stopped or
    /// panicked after it was proposed; it may still be committed.
    Timeout,
    /// Refused for another reason, in words (a partition write's writer answers it as
    /// `not_leader`: its leader refused it before writing).
    Failed(String),
}

/// How long each step of [`ControllerReplica::add_voter`] may take: the learner's catch-up
/// replays the controller log, which is small (metadata commands only).
pub const ADD_VOTER_STEP_MS: u64 = 10_000;

/// What a membership change of the controller group answers.
type MembershipAnswer<T> = std::result::Result<T, RaftError<u64, ClientWriteError<u64, NodeInfo>>>;

/// Waits up to `ms` for a membership change of the controller group.
async fn membership_change<T>(
    ms: u64,
    change: impl std::future::Future<Output = MembershipAnswer<T>>,
) -> Result<()> {
    match tokio::time::timeout(std::time::Duration::from_millis(ms), change).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(forward)))) => {
            Err(BrokerError::NotLeader {
                what: "cluster metadata".into(),
                leader: forward.leader_id,
            })
        }
        // The Raft core stopped or panicked: the change may still be committed.
        Ok(Err(RaftError::Fatal(e))) => Err(BrokerError::ReplicationTimeout {
            what: format!("cluster metadata voters (its Raft failed: {e})"),
            ms,
        }),
        Ok(Err(e)) => Err(BrokerError::invalid("controller voters", e.to_string())),
        Err(_) => Err(BrokerError::ReplicationTimeout {
            what: "cluster metadata voters".into(),
            ms,
        }),
    }
}

/// Proposes one command (a control entry holding `command`) to `raft` here, as its leader.
pub async fn propose_command(raft: &Raft<TypeConfig>, command: Bytes) -> ProposeAnswer {
    let body = EntryBody::control(crate::clock::now_ms(), &[command])
        .map_err(|e| ProposeRefusal::Failed(e.to_string()))?;
    let timeout = std::time::Duration::from_millis(super::PROPOSE_TIMEOUT_MS);
    match tokio::time::timeout(timeout, raft.client_write(body)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(forward)))) => {
            Err(match (forward.leader_id, forward.leader_node) {
                (Some(leader), Some(node)) if !node.cluster_addr.is_empty() => {
                    ProposeRefusal::LeaderAt {
                        leader,
                        cluster_addr: node.cluster_addr,
                    }
                }
                (leader, _) => ProposeRefusal::NotLeader(leader),
            })
        }
        // The Raft core stopped or panicked, maybe after the entry went out to followers
        // who may still commit it: the outcome is unknown, as after a timeout.
        Ok(Err(RaftError::Fatal(error))) => {
            tracing::warn!(%error, "a controller proposal failed with its outcome unknown");
            Err(ProposeRefusal::Timeout)
        }
        Ok(Err(e)) => Err(ProposeRefusal::Failed(e.to_string())),
        Err(_) => Err(ProposeRefusal::Timeout),
    }
}

/// A group's Raft, its seat and its append guard.
type MemberParts = (
    Raft<TypeConfig>,
    Option<Arc<PartitionGroup>>,
    Arc<Semaphore>,
);

/// The Raft groups of this node, by id; answers RPCs for them.
#[derive(Default)]
pub struct RaftGroups {
    groups: RwLock<BTreeMap<GroupId, Member>>,
    holds: Arc<Holds>,
}

/// One group of this node: its Raft, and for a partition its seat (where the appends it
/// accepts from the leader are recorded, for its follower reads, and the proposer other
/// nodes' writes go through).
struct Member {
    raft: Raft<TypeConfig>,
    seat: Option<Arc<PartitionGroup>>,
    /// Held while an append carrying entries is with this group's Raft (see
    /// [`APPENDS_IN_FLIGHT`]).
    appending: Arc<Semaphore>,
}

impl Member {
    fn new(raft: Raft<TypeConfig>, seat: Option<Arc<PartitionGroup>>) -> Member {
        Member {
            raft,
            seat,
            appending: Arc::new(Semaphore::new(APPENDS_IN_FLIGHT)),
        }
    }
}

impl RaftGroups {
    /// Makes `raft` answer RPCs for `group`.
    pub fn insert(&self, group: GroupId, raft: Raft<TypeConfig>) {
        let member = Member::new(raft, None);
        crate::sync::write(&self.groups).insert(group, member);
    }

    /// Makes `raft`, seated in `seat`, answer RPCs for partition group `group`: each append
    /// it accepts from the leader is recorded in the seat's contact, and other nodes' writes
    /// go through the seat's proposer as this node's own do.
    pub fn insert_followed(
        &self,
        group: GroupId,
        raft: Raft<TypeConfig>,
        seat: Arc<PartitionGroup>,
    ) {
        let member = Member::new(raft, Some(seat));
        crate::sync::write(&self.groups).insert(group, member);
    }

    /// Stops answering for `group`.
    pub fn remove(&self, group: &GroupId) {
        crate::sync::write(&self.groups).remove(group);
    }

    /// The Raft of `group`, if this node has it.
    pub fn get(&self, group: &GroupId) -> Option<Raft<TypeConfig>> {
        crate::sync::read(&self.groups)
            .get(group)
            .map(|m| m.raft.clone())
    }

    /// The Raft of `group`, its seat and its append guard, if this node has it.
    fn member(&self, group: &GroupId) -> Option<MemberParts> {
        crate::sync::read(&self.groups)
            .get(group)
            .map(|m| (m.raft.clone(), m.seat.clone(), Arc::clone(&m.appending)))
    }

    /// What `group`'s proposer asks before each write: whether its leadership is moving
    /// away from this node.
    pub fn write_hold(&self, group: GroupId) -> WriteHold {
        self.holds.write_hold(group)
    }
}

impl RpcHandler for RaftGroups {
    fn handle(&self, group: GroupId, rpc: Rpc, body: Bytes) -> HandlerFuture {
        let member = self.member(&group);
        let holds = Arc::clone(&self.holds);
        Box::pin(async move {
            let (raft, seat, appending) =
                member.ok_or_else(|| RpcError::UnknownGroup(group.to_path()))?;
            match rpc {
                Rpc::Append => {
                    let request: AppendEntriesRequest<TypeConfig> = decode_append(body)?;
                    let leader_commit = request.leader_commit.map(|c| c.index);
                    let answer = append_guarded(&group, raft, &appending, request).await?;
                    if let (Some(seat), Ok(AppendEntriesResponse::Success)) = (&seat, &answer) {
                        seat.contact().record(leader_commit);
                    }
                    encode_json(&answer)
                }
                Rpc::Vote => {
                    let request: VoteRequest<u64> = decode_json(&body)?;
                    let repair = seat
                        .as_ref()
                        .and_then(|s| s.seated())
                        .map(|s| s.repair.clone());
                    let answer: std::result::Result<VoteResponse<u64>, RaftError<u64>> =
                        match repair.and_then(|r| r.refuses(request.last_log_id.as_ref())) {
                            Some(claim) => Ok(refused_by_claim(&raft, claim)),
                            None => raft.vote(request).await,
                        };
                    encode_json(&answer)
                }
                Rpc::Propose => {
                    let answer = propose_command(&raft, body).await;
                    encode_json(&answer)
                }
                Rpc::Transfer => {
                    let step = decode_json(&body)?;
                    let answer: TransferAnswer = answer_step(&holds, group, raft, step).await;
                    encode_json(&answer)
                }
                Rpc::Membership => {
                    let step = decode_json(&body)?;
                    let answer = super::membership::answer_membership(&raft, step).await;
                    encode_json(&answer)
                }
                Rpc::Write => {
                    let answer = super::remote_write::answer_write(seat.as_deref(), body).await?;
                    encode_json(&answer)
                }
                Rpc::Snapshot => {
                    let request = decode_json(&body)?;
                    let answer: std::result::Result<
                        InstallSnapshotResponse<u64>,
                        RaftError<u64, InstallSnapshotError>,
                    > = raft.install_snapshot(request).await;
                    encode_json(&answer)
                }
            }
        })
    }
}

/// The answer to a candidate whose log is older than this replica's repair claim: refused,
/// as openraft refuses a candidate with an older log (without taking its term), naming the
/// claim as this replica's last entry so the candidate waits before it tries again.
fn refused_by_claim(raft: &Raft<TypeConfig>, claim: openraft::LogId<u64>) -> VoteResponse<u64> {
    let vote = raft.metrics().borrow().vote;
    tracing::info!(claim = %claim, "a vote refused: the candidate's log ends before this replica's repair claim");
    VoteResponse {
        vote,
        vote_granted: false,
        last_log_id: Some(claim),
    }
}
