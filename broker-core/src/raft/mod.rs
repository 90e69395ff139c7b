//! Replication: how Wharf's Raft groups (one per partition, one controller) reach each other.
//!
//! # Layout
//! - `transport`: the seam between the groups and the wire: a [`Transport`] sends one RPC's
//!   bytes to a node and brings its answer back; an [`RpcHandler`] answers RPC bytes for the
//!   groups of this node. The gateway carries them over HTTP on the cluster port, tests in
//!   memory. Group ids ([`GroupId`]) name the controller or one topic partition.
//!
//! - `types`: openraft's type configuration ([`TypeConfig`]: entries carry an
//!   [`crate::storage::EntryBody`], applying answers [`Applied`]) and how an entry maps onto
//!   a frame.
//! - `log_store`: [`LogStore`], openraft's log storage on the partition's segment files (the
//!   partition log is the Raft log), with the vote in the partition's Raft state file.
//! - `state_machine`: [`PartitionMachine`]: applying publishes committed entries to readers;
//!   a snapshot is where the log continues and the state derived from the log before it.
//! - `snapshot`: a snapshot's versioned bytes ([`SnapshotBody`]), the [`DerivedState`] it
//!   carries, and the file a replica keeps its latest in.
//! - `purge`: retention in a cluster: a snapshot, then openraft's purge of the log prefix
//!   ([`purge_through_snapshot`]).
//! - `recent_entries`: the entries a replica appended last, which the replication reads
//!   from memory instead of the segment file.
//! - `codec`: RPCs as bytes (appends in a binary form that ships bodies as they are).
//! - `network`: [`GroupNetwork`], openraft's network for one group over a [`Transport`].
//! - `proposer`: [`RaftProposer`]: a replicated partition's writes (the broker's ordinary
//!   appends and control batches) proposed to its Raft, bounded and timed out.
//! - `contact`: [`LeaderContact`], when a follower last heard its partition's leader and the
//!   commit it heard of, for follower reads (at most [`FOLLOWER_READ_MAX_LAG_MS`] behind).
//! - `controller`: [`ControllerMachine`], the controller group's state machine: committed
//!   commands handed in order to the node's cluster [`Metadata`], a version to wake on.
//! - `status`: [`GroupStatus`], one group as this node sees it (leader, term, lag).
//! - `leader_proof`: [`LeaderProof`], when a partition's leader last saw a quorum follow it:
//!   a receive relies on a proof younger than [`READ_LEASE_MS`] instead of a heartbeat round
//!   ([`prove_leadership`]).
//! - `transfer`: moving a group's leadership to a chosen voter ([`TransferCoordinator`]):
//!   the other voters hold their heartbeats and elections for a bounded time while the
//!   target campaigns.
//! - `partition_group`: [`PartitionGroup`], this node's seat in one partition's group (its
//!   Raft when it holds a replica, else the leader the metadata names), where the broker's
//!   topic keeps it and where the partition's writes go.
//! - `membership`: changing a partition group's members at its leader (a learner added,
//!   caught up, then the voters replaced): how a replica moves ([`MembershipStep`]).
//! - `remote_write`: an already-built message batch appended at a partition's leader on
//!   another node ([`write_at_leader`], an [`Rpc::Write`]): how a redrive reaches partitions
//!   led elsewhere.
//! - `groups`: [`PartitionReplica`] (opening a partition's Raft), [`RaftGroups`] (this node's
//!   groups, answering peers' RPCs) and the timing every group uses ([`raft_config`]).
//!
//! openraft 0.9.25 is chosen by measurement (`loadtest/openraft-choice`) and stays behind this
//! module: nothing outside it names an openraft type except through these re-exports. The
//! broker never depends on HTTP types: RPCs are bytes here.

mod append_guard;
mod coalesce;
mod codec;
mod contact;
mod controller;
mod groups;
mod leader_proof;
mod log_store;
mod membership;
mod network;
mod partition_group;
mod proposer;
mod purge;
mod recent_entries;
mod remote_write;
mod repair;
mod replication;
mod snapshot;
mod state_machine;
mod status;
mod transfer;
mod transport;
mod types;

pub use append_guard::APPENDS_IN_FLIGHT;
pub use coalesce::{MAX_JOINED_BYTES, MAX_WRITES_IN_FLIGHT, PROPOSE_TIMEOUT_MS};
pub use contact::{FOLLOWER_APPLY_WAIT_MS, FOLLOWER_READ_MAX_LAG_MS, Heard, LeaderContact};
pub use controller::{ControllerMachine, Metadata};
pub use groups::{
    ControllerReplica, ELECTION_TIMEOUT_MS, GroupParts, HEARTBEAT_MS, MAX_PAYLOAD_ENTRIES,
    PartitionReplica, ProposeAnswer, ProposeRefusal, RaftGroups, ReplicaSpec, propose_command,
    raft_config,
};
pub use leader_proof::{LeaderProof, Proved, READ_LEASE_MS, prove_leadership};
pub use log_store::LogStore;
pub use membership::{
    MEMBERSHIP_STEP_MS, MembershipAnswer, MembershipRefusal, MembershipStep, answer_membership,
    change_members,
};
pub use network::{BUSY_BACKOFF_MS, GroupNetwork, MAX_APPEND_BYTES, PeerLink};
pub use partition_group::{PartitionGroup, Seated, StartedReplica};
pub use proposer::{MAX_PROPOSALS_IN_FLIGHT, RaftProposer};
pub use purge::{SNAPSHOT_WAIT_MS, purge_through_snapshot};
pub use recent_entries::{RECENT_BYTES, RECENT_ENTRIES};
pub use remote_write::{WRITE_CALL_TIMEOUT_MS, answer_write, write_at_leader};
pub use repair::RepairClaim;
pub use replication::Replication;

/// The Raft of one group on this node.
pub type GroupRaft = openraft::Raft<TypeConfig>;
pub use snapshot::{
    DerivedState, NoDerivedState, SNAPSHOT_FILE, SNAPSHOT_MAGIC, SNAPSHOT_VERSION,
    SNAPSHOT_VERSION_2, SNAPSHOT_VERSION_3, SnapshotBody, SnapshotError,
};
pub use state_machine::PartitionMachine;
pub use status::{GroupStatus, LeaderView, OpenedLog, leader_in_zone_of};
pub use transfer::{
    Leadership, TRANSFER_HOLD_MS, TRANSFER_RPC_TIMEOUT_MS, TRANSFER_WAIT_MS, TransferAnswer,
    TransferCoordinator, TransferError, TransferRefusal, TransferStep, WriteHold,
};
pub use transport::{
    GroupId, HandlerFuture, MAX_RPC_BYTES, Rpc, RpcCall, RpcError, RpcHandler, Transport,
    TransportError, TransportFuture,
};
pub use types::{Applied, META_BLANK, META_MEMBERSHIP, NodeInfo, TypeConfig};
