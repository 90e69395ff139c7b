//! Cluster administration's wire types: the path of a node, a leader move, and what a move,
//! a rebalance or a drain did.

use broker_core::cluster_node::{DrainReport, FailedMove, LeaderMoved, RebalanceReport};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// What a drain answer says when every replica moved off the node.
const REPLICAS_MOVED: &str = "every replica moved to another node: the node can be removed";
/// What a drain answer says when some replicas stay on the node.
const REPLICAS_STAY: &str = "some replica moves failed (see leaders.failed, reasons starting \
                             with 'replica move'): the node keeps those replicas; drain again";

/// Path of a node.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct NodePath {
    /// The node's id.
    pub node: u64,
}

/// Where a partition's leadership is to go.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveLeaderRequest {
    /// The node to lead the partition: one holding a replica of it.
    pub node: u64,
}

/// A partition's leadership after a move.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeaderView {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: u32,
    /// The leader before the move, as the controller leader knew it (none: an election).
    pub previous_leader: Option<u64>,
    /// The leader now.
    pub leader: u64,
    /// Its term.
    pub term: u64,
    /// How long the move took, in milliseconds (0 when the node led already).
    pub took_ms: u64,
}

impl From<LeaderMoved> for LeaderView {
    fn from(moved: LeaderMoved) -> Self {
        LeaderView {
            topic: moved.topic,
            partition: moved.partition,
            previous_leader: moved.from,
            leader: moved.leader,
            term: moved.term,
            took_ms: moved.took_ms,
        }
    }
}

/// A planned leadership move that did not happen.
#[derive(Debug, Serialize, ToSchema)]
pub struct FailedMoveView {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: u32,
    /// The node that was to lead it.
    pub node: u64,
    /// Why it did not.
    pub reason: String,
}

impl From<FailedMove> for FailedMoveView {
    fn from(failed: FailedMove) -> Self {
        FailedMoveView {
            topic: failed.topic,
            partition: failed.partition,
            node: failed.to,
            reason: failed.reason,
        }
    }
}

/// The leadership moves a rebalance (or drain) made, and those that failed.
#[derive(Debug, Serialize, ToSchema)]
pub struct RebalanceView {
    /// The moves made.
    pub moved: Vec<LeaderView>,
    /// The moves that failed (the partition keeps its leader; retry later).
    pub failed: Vec<FailedMoveView>,
}

impl From<RebalanceReport> for RebalanceView {
    fn from(report: RebalanceReport) -> Self {
        RebalanceView {
            moved: report.moved.into_iter().map(Into::into).collect(),
            failed: report.failed.into_iter().map(Into::into).collect(),
        }
    }
}

/// What draining a node did.
#[derive(Debug, Serialize, ToSchema)]
pub struct DrainView {
    /// The node, now `draining`: it takes no new replicas.
    pub node: u64,
    /// The leaderships moved off it.
    pub leaders: RebalanceView,
    /// Partitions whose replicas stay on it (their moves failed).
    pub replicas_kept: u32,
    /// What became of its replicas.
    pub note: &'static str,
}

impl From<DrainReport> for DrainView {
    fn from(report: DrainReport) -> Self {
        DrainView {
            node: report.node,
            leaders: report.leaders.into(),
            replicas_kept: report.replicas_kept,
            note: match report.replicas_kept {
                0 => REPLICAS_MOVED,
                _ => REPLICAS_STAY,
            },
        }
    }
}
